#include "core/runtime/grammar_vocab.h"

namespace ls {

std::shared_ptr<const grammar::TokenMask> grammar_vocab(const Tokenizer& tok, const std::vector<std::string_view>& text_markers) {
    const int32_t n = tok.n_vocab();
    std::vector<std::string> pieces(static_cast<size_t>(n));
    std::vector<bool> eog(static_cast<size_t>(n)), special(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) {
        const TokenType t = tok.token_type(i);
        eog[size_t(i)] = tok.is_eog(i);
        bool marker = false;
        if (t == TokenType::Control && !text_markers.empty()) {
            const std::string& txt = tok.token_text(i);
            for (std::string_view m : text_markers) marker = marker || (!txt.empty() && m == txt);
        }
        special[size_t(i)] = !marker && (t == TokenType::Control || t == TokenType::Unknown || t == TokenType::Unused);
        pieces[size_t(i)] = tok.token_to_piece(i, t == TokenType::UserDefined || marker);
    }
    return std::make_shared<grammar::TokenMask>(std::move(pieces), eog, special, 256);
}

}  // namespace ls
