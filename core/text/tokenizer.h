// Tokenizers for GGUF models: SentencePiece-style BPE ("llama": Gemma, Llama 2, ...) and
// GPT-2 style byte-level BPE ("gpt2": Llama 3, Qwen, ...). The streaming UTF-8 detokenizer
// (utf8.h) and the chat templates (chat_template.h) come with it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/text/chat_template.h"
#include "core/text/utf8.h"

namespace ls {

class GgufFile;

// Token types, numbered as in tokenizer.ggml.token_type (SentencePiece's piece types).
enum class TokenType : int32_t {
    Undefined = 0,
    Normal = 1,
    Unknown = 2,
    Control = 3,      // <bos>, <start_of_turn>, ...: matched in text only with parse_special
    UserDefined = 4,  // always matched literally in the raw text (e.g. Gemma's "\n\n", "  ")
    Unused = 5,
    Byte = 6,         // <0xXX> byte-fallback pieces
};

// SentencePiece: merges by score ("llama"); BytePairGpt2: byte-level BPE ("gpt2");
// BpeSentencePiece: BPE merges by rank over "▁"-escaped text with byte fallback ("gemma4");
// WordPiece: BERT's greedy longest-match pieces ("bert", tokenizer_wpm.cpp).
enum class TokenizerKind { SentencePiece, BytePairGpt2, BpeSentencePiece, WordPiece };

struct Vocab {
    TokenizerKind kind = TokenizerKind::SentencePiece;
    std::vector<std::string> tokens;
    std::vector<float> scores;        // SentencePiece merge priority (higher merges first)
    std::vector<int32_t> types;       // TokenType values; empty = all Normal
    std::vector<std::string> merges;  // gpt2: "left right", ranked by order
    int32_t bos_id = -1, eos_id = -1, unk_id = -1, pad_id = -1;
    // WordPiece: [SEP], appended after the text when special tokens are added (add_sep).
    int32_t sep_id = -1;
    bool add_sep = false;
    int32_t eot_id = -1;  // -1: detected from the token texts (<end_of_turn>, <|eot_id|>, ...)
    // Fill-in-the-middle markers (prefix, suffix, middle); -1: detected from the token texts
    // (<|fim_prefix|>, <fim_prefix>, <｜fim▁begin｜>, ...) as llama.cpp does.
    int32_t fim_pre_id = -1, fim_suf_id = -1, fim_mid_id = -1;
    bool add_bos = false, add_eos = false, add_space_prefix = false;
    // gpt2: the pre-tokenizer (tokenizer.ggml.pre): "gpt2", "llama-bpe", "qwen2", "gpt-4o", ...;
    // "" is GPT-2's, a name not implemented is an error when the tokenizer is built.
    std::string pre;
};

// Immutable after construction; copies share the tables.
class Tokenizer {
public:
    explicit Tokenizer(Vocab vocab);
    // Reads the tokenizer.ggml.* keys. Throws GgufError / std::runtime_error if they are
    // missing or inconsistent.
    static Tokenizer from_gguf(const GgufFile& f);

    // add_bos adds the BOS token only if the vocab has one (and add_eos from the vocab is
    // honoured too; WordPiece: add_bos adds [CLS] before and [SEP] after, as BERT does). parse_special: control-token texts in `text` become their ids;
    // user-defined pieces are always matched.
    std::vector<int32_t> encode(std::string_view text, bool add_bos, bool parse_special) const;
    // The text's tokens alone: no BOS, EOS or [SEP] (llama.cpp's tokenize with add_special
    // false), for inputs assembled around them (a reranker's query and document).
    std::vector<int32_t> encode_plain(std::string_view text, bool parse_special) const;
    // The bytes a token stands for: "▁" -> ' ', <0xXX> -> the byte, byte-level pieces
    // unmapped. Control tokens give their text if render_special, else "".
    // Throws std::out_of_range for an id outside [0, n_vocab).
    std::string token_to_piece(int32_t id, bool render_special = true) const;
    std::string decode(const std::vector<int32_t>& ids, bool render_special = true) const;

    int32_t n_vocab() const;
    const std::string& token_text(int32_t id) const;  // the raw vocab entry
    TokenType token_type(int32_t id) const;
    int32_t find_token(std::string_view text) const;  // -1 if absent
    TokenizerKind kind() const;
    int32_t bos() const;
    int32_t eos() const;
    int32_t eot() const;  // -1 if none
    // The fill-in-the-middle markers, all three or none (-1).
    struct Fim {
        int32_t pre = -1, suf = -1, mid = -1;
        bool ok() const { return pre >= 0 && suf >= 0 && mid >= 0; }
    };
    Fim fim() const;
    int32_t unk() const;
    int32_t pad() const;
    bool add_bos_default() const;
    bool add_eos_default() const;  // tokenizer.ggml.add_eos_token
    bool add_sep_default() const;  // WordPiece's [SEP] after the text
    int32_t sep() const;           // -1 if none
    bool is_eog(int32_t id) const;  // eos, eot and other end-of-generation markers
    // The most input bytes one token of encode() can stand for, so that a text of more than
    // n * this bytes surely has more than n tokens (a server refuses a huge prompt before
    // tokenizing it). 0 where no such bound holds: a vocabulary with neither an unknown token
    // nor every byte may drop characters it cannot spell.
    size_t max_bytes_per_token() const;

    struct Impl;

private:
    std::shared_ptr<const Impl> impl_;
};

}  // namespace ls
