// Tokenizer construction (special-piece index, byte pieces, end-of-generation markers) and
// the vocabulary lookups.
#include <algorithm>
#include <stdexcept>

#include "core/text/tokenizer.h"
#include "core/text/tokenizer_impl.h"

namespace ls {

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
    for (int32_t* id : {&v.bos_id, &v.eos_id, &v.unk_id, &v.pad_id, &v.sep_id, &v.eot_id, &v.fim_pre_id, &v.fim_suf_id, &v.fim_mid_id})
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
    // (<|return|>, <|call|>: harmony (gpt-oss) ends a reply or a tool call with them.)
    for (const char* t : {"<end_of_turn>", "<turn|>", "<|tool_response>", "<|eot_id|>", "<|im_end|>", "<|end|>", "<|endoftext|>",
                          "<|eom_id|>", "<|return|>", "<|call|>"}) {
        int32_t id = find(t);
        // gemma4 files type <|tool_response> user-defined (rendered in the text), yet it ends
        // generation as llama.cpp treats it.
        const bool gemma4_marker = v.kind == TokenizerKind::BpeSentencePiece &&
                                   (std::string_view(t) == "<turn|>" || std::string_view(t) == "<|tool_response>");
        if (id >= 0 && (m.type(id) == TokenType::Control || id == m.eot_id || gemma4_marker)) m.eog_ids.push_back(id);
    }
    // Harmony: <|end|> closes a message, not the reply (the analysis message comes before the
    // final one), so it ends generation only where the vocabulary has no <|return|> and
    // <|call|>, as llama.cpp decides.
    {
        const auto eog = [&](const char* t) {
            const int32_t id = find(t);
            return id >= 0 && std::find(m.eog_ids.begin(), m.eog_ids.end(), id) != m.eog_ids.end() ? id : -1;
        };
        const int32_t end = eog("<|end|>");
        if (end >= 0 && eog("<|return|>") >= 0 && eog("<|call|>") >= 0) {
            m.eog_ids.erase(std::remove(m.eog_ids.begin(), m.eog_ids.end(), end), m.eog_ids.end());
            if (m.eot_id == end) m.eot_id = find("<|return|>");
        }
    }
    // Fill-in-the-middle: the file's ids, else the marker texts the code models ship (Qwen
    // coder and CodeGemma, StarCoder, DeepSeek coder, CodeLlama), all three of one family.
    m.fim = {v.fim_pre_id, v.fim_suf_id, v.fim_mid_id};
    if (!m.fim.ok()) {
        static const char* kFim[][3] = {{"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"},
                                        {"<fim_prefix>", "<fim_suffix>", "<fim_middle>"},
                                        {"<fim-prefix>", "<fim-suffix>", "<fim-middle>"},
                                        {"<｜fim▁begin｜>", "<｜fim▁hole｜>", "<｜fim▁end｜>"},
                                        {"<PRE>", "<SUF>", "<MID>"}};
        for (const auto& f : kFim) {
            const Tokenizer::Fim got{find(f[0]), find(f[1]), find(f[2])};
            if (got.ok()) {
                m.fim = got;
                break;
            }
        }
    }
    std::sort(m.eog_ids.begin(), m.eog_ids.end());
    m.eog_ids.erase(std::unique(m.eog_ids.begin(), m.eog_ids.end()), m.eog_ids.end());

    if (v.kind == TokenizerKind::BytePairGpt2 || v.kind == TokenizerKind::BpeSentencePiece) m.build_bpe();
    if (v.kind == TokenizerKind::WordPiece)
        for (const std::string& t : v.tokens) m.wpm_max_len = std::max(m.wpm_max_len, t.size());
    impl_ = std::move(impl);
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
Tokenizer::Fim Tokenizer::fim() const { return impl_->fim; }
int32_t Tokenizer::unk() const { return impl_->v.unk_id; }
int32_t Tokenizer::pad() const { return impl_->v.pad_id; }
bool Tokenizer::add_bos_default() const { return impl_->v.add_bos; }
bool Tokenizer::add_eos_default() const { return impl_->v.add_eos; }
bool Tokenizer::add_sep_default() const { return impl_->v.add_sep; }
int32_t Tokenizer::sep() const { return impl_->v.sep_id; }

bool Tokenizer::is_eog(int32_t id) const {
    const auto& e = impl_->eog_ids;
    return std::binary_search(e.begin(), e.end(), id);
}

}  // namespace ls
