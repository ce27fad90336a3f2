// Token ids back to bytes: SentencePiece "▁" and <0xXX> pieces, GPT-2 byte-level pieces.
#include <cstdint>
#include <string>
#include <vector>

#include "core/text/tokenizer.h"
#include "core/text/tokenizer_impl.h"

namespace ls {

namespace {

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

}  // namespace ls
