#include "core/runtime/grammar_vocab.h"

namespace ls {

std::shared_ptr<const grammar::TokenMask> grammar_vocab(const Tokenizer& tok) {
    const int32_t n = tok.n_vocab();
    std::vector<std::string> pieces(static_cast<size_t>(n));
    std::vector<bool> eog(static_cast<size_t>(n)), special(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) {
        const TokenType t = tok.token_type(i);
        eog[size_t(i)] = tok.is_eog(i);
        special[size_t(i)] = t == TokenType::Control || t == TokenType::Unknown || t == TokenType::Unused;
        pieces[size_t(i)] = tok.token_to_piece(i, t == TokenType::UserDefined);
    }
    return std::make_shared<grammar::TokenMask>(std::move(pieces), eog, special, 256);
}

}  // namespace ls
