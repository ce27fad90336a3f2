// Tokenizer: construction, special-token splitting, decoding, streaming, chat templates.
#include "core/text/tokenizer.h"

#include <algorithm>
#include <stdexcept>

#include "core/text/tokenizer_impl.h"

namespace ls {

size_t utf8_valid_len(std::string_view s, size_t i) {
    const size_t n = s.size();
    const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
    const uint8_t c = b(i);
    if (c < 0x80) return 1;
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (i + len > n) return 0;
    if (b(i + 1) < lo || b(i + 1) > hi) return 0;
    for (size_t k = 2; k < len; ++k)
        if ((b(i + k) & 0xC0) != 0x80) return 0;
    return len;
}

void utf8_append(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

void PieceMap::build(const std::vector<std::string>& tokens) {
    tokens_ = &tokens;
    size_t cap = 16;
    while (cap < tokens.size() * 2) cap <<= 1;
    slots_.assign(cap, Slot{0, -1});
    mask_ = cap - 1;
    for (size_t id = 0; id < tokens.size(); ++id) {
        const std::string& t = tokens[id];
        const uint64_t h = hash(t);
        const uint32_t tag = uint32_t(h >> 32);
        for (size_t i = size_t(h) & mask_;; i = (i + 1) & mask_) {
            Slot& sl = slots_[i];
            if (sl.id < 0) {
                sl = Slot{tag, int32_t(id)};
                break;
            }
            if (sl.tag == tag && tokens[size_t(sl.id)] == t) break;  // duplicate: keep the first
        }
    }
}

namespace {

int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// "<0xAB>" -> 0xAB, else -1.
int parse_byte_piece(std::string_view t) {
    if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
    int h = hexval(t[3]), l = hexval(t[4]);
    return (h < 0 || l < 0) ? -1 : h * 16 + l;
}

const char kSpaceMark[] = "\xE2\x96\x81";  // U+2581 "▁"

// byte-level BPE: code point -> byte (inverse of the GPT-2 bytes_to_unicode table).
int gpt2_unicode_to_byte(uint32_t cp) {
    static const std::vector<int16_t> table = [] {
        std::vector<int16_t> t(324, -1);
        int n = 0;
        for (int b = 0; b < 256; ++b) {
            bool direct = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            uint32_t cp2 = direct ? uint32_t(b) : uint32_t(256 + n++);
            t[cp2] = int16_t(b);
        }
        return t;
    }();
    return cp < table.size() ? table[cp] : -1;
}

}  // namespace

Tokenizer::Tokenizer(Vocab vocab) {
    auto impl = std::make_shared<Impl>();
    Impl& m = *impl;
    m.v = std::move(vocab);
    Vocab& v = m.v;
    const size_t n = v.tokens.size();
    if (n == 0) throw std::runtime_error("tokenizer: empty vocabulary");
    if (n > size_t(INT32_MAX)) throw std::runtime_error("tokenizer: vocabulary too large");
    if (!v.scores.empty() && v.scores.size() != n)
        throw std::runtime_error("tokenizer: scores size " + std::to_string(v.scores.size()) +
                                 " != vocab size " + std::to_string(n));
    if (!v.types.empty() && v.types.size() != n)
        throw std::runtime_error("tokenizer: token_type size " + std::to_string(v.types.size()) +
                                 " != vocab size " + std::to_string(n));
    if (v.scores.empty()) v.scores.assign(n, 0.0f);
    for (int32_t* id : {&v.bos_id, &v.eos_id, &v.unk_id, &v.pad_id, &v.eot_id})
        if (*id >= int32_t(n) || *id < -1)
            throw std::runtime_error("tokenizer: special token id " + std::to_string(*id) + " out of range");

    m.pieces.build(v.tokens);
    m.byte_token.fill(-1);
    for (size_t i = 0; i < n; ++i) {
        std::string_view t = v.tokens[i];
        TokenType ty = m.type(int32_t(i));
        if ((ty == TokenType::Control || ty == TokenType::UserDefined) && !t.empty()) {
            if (m.special.emplace(t, int32_t(i)).second)
                m.special_lens[uint8_t(t[0])].push_back(uint32_t(t.size()));
        } else if (ty == TokenType::Byte || (v.kind == TokenizerKind::BpeSentencePiece && ty == TokenType::Normal)) {
            // (gemma4 vocabularies may type their <0xXX> pieces as normal ones)
            int b = parse_byte_piece(t);
            if (b >= 0 && m.byte_token[size_t(b)] < 0) m.byte_token[size_t(b)] = int32_t(i);
        }
    }
    for (auto& lens : m.special_lens) {
        std::sort(lens.begin(), lens.end(), std::greater<>());
        lens.erase(std::unique(lens.begin(), lens.end()), lens.end());
    }

    // End-of-generation markers.
    auto find = [&](std::string_view t) { return m.pieces.find(t); };
    m.eot_id = v.eot_id;
    if (m.eot_id < 0) {
        for (const char* t : {"<end_of_turn>", "<turn|>", "<|eot_id|>", "<|im_end|>", "<|end|>"})
            if ((m.eot_id = find(t)) >= 0) break;
    }
    if (v.eos_id >= 0) m.eog_ids.push_back(v.eos_id);
    if (m.eot_id >= 0) m.eog_ids.push_back(m.eot_id);
    // (<|tool_response>: Gemma 4 stops for the caller to run the tool.)
    for (const char* t : {"<end_of_turn>", "<turn|>", "<|tool_response>", "<|eot_id|>", "<|im_end|>", "<|end|>", "<|endoftext|>",
                          "<|eom_id|>"}) {
        int32_t id = find(t);
        // gemma4 files type <|tool_response> user-defined (rendered in the text), yet it ends
        // generation as llama.cpp treats it.
        const bool gemma4_marker = v.kind == TokenizerKind::BpeSentencePiece &&
                                   (std::string_view(t) == "<turn|>" || std::string_view(t) == "<|tool_response>");
        if (id >= 0 && (m.type(id) == TokenType::Control || id == m.eot_id || gemma4_marker)) m.eog_ids.push_back(id);
    }
    std::sort(m.eog_ids.begin(), m.eog_ids.end());
    m.eog_ids.erase(std::unique(m.eog_ids.begin(), m.eog_ids.end()), m.eog_ids.end());

    if (v.kind == TokenizerKind::BytePairGpt2 || v.kind == TokenizerKind::BpeSentencePiece) m.build_bpe();
    impl_ = std::move(impl);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
    const Impl& m = *impl_;
    std::vector<int32_t> out;
    out.reserve(text.size() / 3 + 4);
    if (add_bos && m.v.bos_id >= 0) out.push_back(m.v.bos_id);

    bool first_fragment = true;
    auto emit_text = [&](std::string_view frag) {
        if (frag.empty()) return;
        if (m.v.kind == TokenizerKind::SentencePiece)
            m.encode_spm(frag, first_fragment && m.v.add_space_prefix, out);
        else if (m.v.kind == TokenizerKind::BpeSentencePiece)
            m.encode_bpe_spm(frag, out);
        else
            m.encode_bpe(frag, out);
        first_fragment = false;
    };

    // Split out control (if parse_special) and user-defined pieces: leftmost, longest.
    size_t start = 0, i = 0;
    const size_t n = text.size();
    while (i < n) {
        const auto& lens = m.special_lens[uint8_t(text[i])];
        int32_t hit = -1;
        size_t hit_len = 0;
        for (uint32_t len : lens) {
            if (i + len > n) continue;
            auto it = m.special.find(text.substr(i, len));
            if (it == m.special.end()) continue;
            if (!parse_special && m.type(it->second) == TokenType::Control) continue;
            hit = it->second;
            hit_len = len;
            break;
        }
        if (hit < 0) {
            ++i;
            continue;
        }
        emit_text(text.substr(start, i - start));
        out.push_back(hit);
        first_fragment = false;
        i += hit_len;
        start = i;
    }
    emit_text(text.substr(start));
    if (m.v.add_eos && m.v.eos_id >= 0) out.push_back(m.v.eos_id);
    return out;
}

int32_t Tokenizer::n_vocab() const { return int32_t(impl_->v.tokens.size()); }

const std::string& Tokenizer::token_text(int32_t id) const {
    if (id < 0 || id >= n_vocab())
        throw std::out_of_range("token id " + std::to_string(id) + " out of range [0, " +
                                std::to_string(n_vocab()) + ")");
    return impl_->v.tokens[size_t(id)];
}

TokenType Tokenizer::token_type(int32_t id) const {
    token_text(id);  // range check
    return impl_->type(id);
}

int32_t Tokenizer::find_token(std::string_view text) const {
    return impl_->pieces.find(text);
}

TokenizerKind Tokenizer::kind() const { return impl_->v.kind; }
int32_t Tokenizer::bos() const { return impl_->v.bos_id; }
int32_t Tokenizer::eos() const { return impl_->v.eos_id; }
int32_t Tokenizer::eot() const { return impl_->eot_id; }
int32_t Tokenizer::unk() const { return impl_->v.unk_id; }
int32_t Tokenizer::pad() const { return impl_->v.pad_id; }
bool Tokenizer::add_bos_default() const { return impl_->v.add_bos; }

bool Tokenizer::is_eog(int32_t id) const {
    const auto& e = impl_->eog_ids;
    return std::binary_search(e.begin(), e.end(), id);
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
    const std::string& t = token_text(id);
    const Impl& m = *impl_;
    TokenType ty = m.type(id);
    if (ty == TokenType::Control || ty == TokenType::Unknown) return render_special ? t : std::string();
    if (ty == TokenType::UserDefined) return t;
    if (m.v.kind != TokenizerKind::BytePairGpt2) {  // "▁" for spaces, <0xXX> byte pieces
        // (a gemma4 vocabulary's byte pieces may be typed normal: those the constructor took)
        if (ty == TokenType::Byte || (m.v.kind == TokenizerKind::BpeSentencePiece && ty == TokenType::Normal)) {
            const int b = parse_byte_piece(t);
            if (b >= 0 && (ty == TokenType::Byte || m.byte_token[size_t(b)] == id)) return std::string(1, char(b));
        }
        std::string out;
        out.reserve(t.size());
        for (size_t i = 0; i < t.size();) {
            if (t.compare(i, 3, kSpaceMark) == 0) {
                out += ' ';
                i += 3;
            } else {
                out += t[i++];
            }
        }
        return out;
    }
    // byte-level: each code point of the piece stands for one byte.
    std::string out;
    out.reserve(t.size());
    for (size_t i = 0; i < t.size();) {
        size_t len = utf8_valid_len(t, i);
        if (len == 0) {  // not valid UTF-8: pass the byte through
            out += t[i++];
            continue;
        }
        uint32_t cp = uint8_t(t[i]);
        if (len > 1) {
            cp &= 0xFFu >> (len + 1);
            for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (uint8_t(t[i + k]) & 0x3F);
        }
        int b = gpt2_unicode_to_byte(cp);
        if (b >= 0)
            out += char(b);
        else
            out.append(t, i, len);
        i += len;
    }
    return out;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool render_special) const {
    std::string out;
    bool first_text = true;
    for (int32_t id : ids) {
        std::string piece = token_to_piece(id, render_special);
        if (first_text && impl_->v.add_space_prefix && impl_->v.kind == TokenizerKind::SentencePiece) {
            TokenType ty = impl_->type(id);
            if (ty == TokenType::Control) {
                out += piece;
                continue;
            }
            if (!piece.empty() && piece[0] == ' ') piece.erase(0, 1);  // the added dummy prefix
        }
        first_text = false;
        out += piece;
    }
    return out;
}

// ---- Utf8Stream ----

namespace {
// How many bytes from s[i] form a proper prefix of a well-formed sequence (the "maximal
// subpart" that one U+FFFD replaces): 0 if s[i] cannot start one. `need` gets the full
// length the lead byte announces.
size_t valid_prefix(std::string_view s, size_t i, size_t& need) {
    const uint8_t c = uint8_t(s[i]);
    need = (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
    if (need == 0) return 0;
    size_t k = 1;
    for (; k < need && i + k < s.size(); ++k) {
        uint8_t b = uint8_t(s[i + k]), lo = 0x80, hi = 0xBF;
        if (k == 1) {
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        }
        if (b < lo || b > hi) break;
    }
    return k;
}
}  // namespace

std::string Utf8Stream::push(const std::string& piece) {
    pending_ += piece;
    std::string out;
    size_t i = 0;
    const size_t n = pending_.size();
    while (i < n) {
        size_t len = utf8_valid_len(pending_, i);
        if (len > 0) {
            out.append(pending_, i, len);
            i += len;
            continue;
        }
        size_t need = 0;
        size_t m = valid_prefix(pending_, i, need);
        if (m > 0 && i + m == n) break;  // unfinished: the next piece may complete it
        out += "\xEF\xBF\xBD";          // U+FFFD for the maximal invalid subpart
        i += std::max<size_t>(m, 1);
    }
    pending_.erase(0, i);
    return out;
}

std::string Utf8Stream::flush() {
    std::string out;
    if (!pending_.empty()) out = "\xEF\xBF\xBD";  // an unfinished sequence
    pending_.clear();
    return out;
}

// ---- chat templates ----

namespace {
std::string trim(const std::string& s) {
    const char* ws = " \t\n\r\f\v";
    size_t b = s.find_first_not_of(ws);
    if (b == std::string::npos) return {};
    size_t e = s.find_last_not_of(ws);
    return s.substr(b, e - b + 1);
}
}  // namespace

std::string format_chat(const std::vector<ChatMsg>& msgs, bool add_generation_prompt, const std::string& arch) {
    std::string out;
    if (arch == "gemma4") {
        // Gemma 4 (its published template, thinking off): <|turn>role\n content <turn|>\n with
        // a system role of its own and the assistant as "model"; contents trimmed, a model
        // turn's thinking (<|channel> .. <channel|>) dropped; the generation prompt opens a
        // model turn with an empty thought channel.
        for (const ChatMsg& m : msgs) {
            const bool model = m.role == "assistant" || m.role == "model";
            const std::string role = model ? "model" : (m.role == "system" || m.role == "developer") ? "system" : "user";
            std::string content = m.content;
            static const std::string open = "<|channel>", close = "<channel|>";
            for (size_t a; model && (a = content.find(open)) != std::string::npos;) {
                const size_t b = content.find(close, a);
                content.erase(a, b == std::string::npos ? std::string::npos : b + close.size() - a);
            }
            out += "<|turn>" + role + "\n" + trim(content) + "<turn|>\n";
        }
        if (add_generation_prompt) out += "<|turn>model\n<|channel>thought\n<channel|>";
        return out;
    }
    if (arch.rfind("gemma", 0) == 0) {
        // Gemma: only user/model turns; a leading system message is prepended to the first
        // user turn, separated by a blank line. Contents are trimmed like the HF template.
        std::string system_prefix;
        size_t i = 0;
        if (!msgs.empty() && msgs[0].role == "system") {
            system_prefix = trim(msgs[0].content) + "\n\n";
            i = 1;
        }
        bool prefix_used = system_prefix.empty();
        for (; i < msgs.size(); ++i) {
            const ChatMsg& m = msgs[i];
            std::string role = (m.role == "assistant" || m.role == "model") ? "model" : "user";
            out += "<start_of_turn>" + role + "\n";
            if (!prefix_used) {
                out += system_prefix;
                prefix_used = true;
            }
            out += trim(m.content) + "<end_of_turn>\n";
        }
        if (!prefix_used) {  // a system message alone: give it a user turn
            out += "<start_of_turn>user\n" + system_prefix + "<end_of_turn>\n";
        }
        if (add_generation_prompt) out += "<start_of_turn>model\n";
        return out;
    }
    for (const ChatMsg& m : msgs) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
}

}  // namespace ls
