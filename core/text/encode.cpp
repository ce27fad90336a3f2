// Tokenizer::encode: control and user-defined pieces are split out of the raw text first
// (leftmost, longest), the text between them goes to the vocabulary's own algorithm.
#include "core/text/tokenizer.h"
#include "core/text/tokenizer_impl.h"

namespace ls {

namespace {

// specials: the vocabulary's end markers (EOS where it adds one; WordPiece's [SEP] after a
// [CLS]) may be added; add_bos: the BOS too.
std::vector<int32_t> encode_text(const Tokenizer::Impl& m, std::string_view text, bool add_bos, bool specials, bool parse_special) {
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
        else if (m.v.kind == TokenizerKind::WordPiece)
            m.encode_wpm(frag, out);
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
    if (specials && m.v.add_eos && m.v.eos_id >= 0) out.push_back(m.v.eos_id);
    if (specials && add_bos && m.v.add_sep && m.v.sep_id >= 0) out.push_back(m.v.sep_id);
    return out;
}

}  // namespace

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
    return encode_text(*impl_, text, add_bos, true, parse_special);
}

std::vector<int32_t> Tokenizer::encode_plain(std::string_view text, bool parse_special) const {
    return encode_text(*impl_, text, false, false, parse_special);
}

}  // namespace ls
