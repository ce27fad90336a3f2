// Tokenizer::from_gguf: reads the tokenizer.ggml.* metadata.
#include <algorithm>
#include <stdexcept>

#include "core/gguf/gguf.h"
#include "core/text/tokenizer.h"

namespace ls {

Tokenizer Tokenizer::from_gguf(const GgufFile& f) {
    Vocab v;
    std::string model = f.get_string("tokenizer.ggml.model");
    if (model == "llama") {
        v.kind = TokenizerKind::SentencePiece;
    } else if (model == "gpt2") {
        v.kind = TokenizerKind::BytePairGpt2;
    } else if (model == "gemma4") {
        v.kind = TokenizerKind::BpeSentencePiece;
    } else if (model == "bert") {
        v.kind = TokenizerKind::WordPiece;
    } else {
        throw std::runtime_error("tokenizer: unsupported tokenizer.ggml.model '" + model + "'");
    }
    v.tokens = f.get_string_array("tokenizer.ggml.tokens");
    if (f.find("tokenizer.ggml.scores")) {
        std::vector<double> s = f.get_float_array("tokenizer.ggml.scores");
        v.scores.assign(s.begin(), s.end());
    }
    if (f.find("tokenizer.ggml.token_type")) {
        std::vector<int64_t> t = f.get_int_array("tokenizer.ggml.token_type");
        v.types.reserve(t.size());
        for (int64_t x : t) v.types.push_back(int32_t(x < 0 || x > 6 ? 0 : x));
    }
    if (f.find("tokenizer.ggml.merges")) v.merges = f.get_string_array("tokenizer.ggml.merges");
    auto id = [&](const char* key) {
        int64_t x = f.get_int(key, -1);
        return x < 0 || x >= int64_t(v.tokens.size()) ? int32_t(-1) : int32_t(x);
    };
    v.bos_id = id("tokenizer.ggml.bos_token_id");
    v.eos_id = id("tokenizer.ggml.eos_token_id");
    v.unk_id = id("tokenizer.ggml.unknown_token_id");
    v.pad_id = id("tokenizer.ggml.padding_token_id");
    v.eot_id = id("tokenizer.ggml.eot_token_id");
    // (llama.cpp's keys; older conversions wrote prefix/suffix/middle_token_id.)
    v.fim_pre_id = std::max(id("tokenizer.ggml.fim_pre_token_id"), id("tokenizer.ggml.prefix_token_id"));
    v.fim_suf_id = std::max(id("tokenizer.ggml.fim_suf_token_id"), id("tokenizer.ggml.suffix_token_id"));
    v.fim_mid_id = std::max(id("tokenizer.ggml.fim_mid_token_id"), id("tokenizer.ggml.middle_token_id"));
    const bool spm = v.kind == TokenizerKind::SentencePiece;
    v.add_bos = f.get_bool("tokenizer.ggml.add_bos_token", spm);
    // Gemma 4 always starts with <bos> (its template writes it); llama.cpp forces this too.
    if (v.kind == TokenizerKind::BpeSentencePiece) v.add_bos = true;
    v.add_eos = f.get_bool("tokenizer.ggml.add_eos_token", false);
    if (v.kind == TokenizerKind::WordPiece) {
        // BERT: [CLS] text [SEP]. The converter writes [CLS] as cls_token_id (llama.cpp reads
        // it as the BOS) and [SEP] as seperator_token_id (sic).
        if (v.bos_id < 0) v.bos_id = id("tokenizer.ggml.cls_token_id");
        v.sep_id = id("tokenizer.ggml.seperator_token_id");
        v.add_bos = f.get_bool("tokenizer.ggml.add_bos_token", true);
        v.add_sep = f.get_bool("tokenizer.ggml.add_sep_token", true);
        if (v.unk_id < 0) throw std::runtime_error("tokenizer: a WordPiece (bert) vocabulary needs tokenizer.ggml.unknown_token_id");
    }
    v.add_space_prefix = f.get_bool("tokenizer.ggml.add_space_prefix", spm);
    // Byte-level BPE: the regex split (tokenizer_bpe.cpp refuses a name it does not implement;
    // without the key, GPT-2's). The other kinds have a split of their own and ignore it.
    v.pre = f.get_string("tokenizer.ggml.pre", "");
    return Tokenizer(std::move(v));
}

}  // namespace ls
