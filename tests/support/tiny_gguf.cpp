#include "tests/support/tiny_gguf.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <stdexcept>

#include "core/gguf/gguf.h"
#include "core/quant/quant.h"
#include "tests/support/split_rng.h"

namespace ls {
namespace {

bool is_matmul_type(DType t) { return is_weight_type(t); }

// (k, n) weight, N(0, 1/sqrt(k)) per element, quantized row by row to `type`.
std::vector<uint8_t> matmul_weight(Rng& rng, DType type, int64_t k, int64_t n) {
    const float sd = float(1.0 / std::sqrt(double(k)));
    const size_t rb = row_bytes(type, k);
    std::vector<uint8_t> out(rb * size_t(n));
    std::vector<float> row(static_cast<size_t>(k));
    for (int64_t r = 0; r < n; ++r) {
        for (float& x : row) x = sd * float(rng.normal());
        quantize_row(type, row.data(), out.data() + size_t(r) * rb, k);
    }
    return out;
}

// F32 (n), around 1.
std::vector<uint8_t> norm_weight(Rng& rng, int64_t n) {
    std::vector<float> w(static_cast<size_t>(n));
    for (float& x : w) x = 1.0f + 0.1f * float(rng.normal());
    std::vector<uint8_t> out(w.size() * sizeof(float));
    std::memcpy(out.data(), w.data(), out.size());
    return out;
}

}  // namespace

void put_tiny_vocab(GgufWriter& w, int n_vocab, const std::vector<std::string>& control) {
    using namespace tiny_vocab;
    std::vector<std::string> tokens = {"<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"};
    std::vector<int32_t> types = {3, 3, 3, 2, 3, 3};  // TokenType: control, unknown
    for (int b = 0; b < 256; ++b) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "<0x%02X>", b);
        tokens.push_back(buf);
        types.push_back(6);  // byte
    }
    // Word pieces, each reachable by merging two shorter ones: the word-start marker, the
    // letters, some frequent English pieces, then every two-letter piece.
    const std::string sp = "\xe2\x96\x81";  // U+2581, SentencePiece's space
    std::vector<std::string> pieces = {sp};
    for (char c = 'a'; c <= 'z'; ++c) pieces.push_back(std::string(1, c));
    // The first eleven fit the default 300-token vocabulary: "the" is one token there.
    for (const char* s : {"th", "he", "in", "er", "an"}) pieces.push_back(s);
    for (const char* s : {"t", "a"}) pieces.push_back(sp + s);
    pieces.push_back("the");
    pieces.push_back(sp + "th");
    pieces.push_back(sp + "the");
    for (const char* s : {"re", "on", "at", "en", "nd", "is", "or", "es", "it", "ing", "ion", "and"}) pieces.push_back(s);
    for (const char* s : {"i", "o", "s", "w", "an", "is", "it", "in", "on", "and"}) pieces.push_back(sp + s);
    for (char a = 'a'; a <= 'z'; ++a)
        for (char b = 'a'; b <= 'z'; ++b) pieces.push_back(std::string{a, b});
    std::set<std::string> seen;
    std::vector<float> scores(tokens.size(), 0.0f);
    int unused = 0;
    for (size_t i = 0; int(tokens.size()) < n_vocab; ++i) {
        if (i < pieces.size()) {
            if (!seen.insert(pieces[i]).second) continue;
            tokens.push_back(pieces[i]);
            types.push_back(1);  // normal
            scores.push_back(-float(seen.size()));  // earlier pieces merge first
        } else {
            tokens.push_back("<unused" + std::to_string(unused++) + ">");
            types.push_back(5);  // unused
            scores.push_back(0.0f);
        }
    }
    // A vocabulary smaller than the fixed tokens (a tiny model with 256 rows) ends within the
    // byte tokens: bytes from 0xF5 up never occur in UTF-8 text.
    if (int(tokens.size()) > n_vocab) {
        tokens.resize(size_t(n_vocab));
        types.resize(size_t(n_vocab));
        scores.resize(size_t(n_vocab));
    }
    size_t next = 0;
    for (const std::string& c : control) {
        while (next < types.size() && types[next] != 5) ++next;
        if (next == types.size()) throw std::invalid_argument("put_tiny_vocab: no unused slot left for '" + c + "'");
        tokens[next] = c;
        types[next] = 3;
    }
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string("tokenizer.ggml.pre", "default");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_f32_array("tokenizer.ggml.scores", scores);
    w.set_i32_array("tokenizer.ggml.token_type", types);
    w.set_u32("tokenizer.ggml.bos_token_id", kBos);
    w.set_u32("tokenizer.ggml.eos_token_id", kEos);
    w.set_u32("tokenizer.ggml.unknown_token_id", kUnk);
    w.set_u32("tokenizer.ggml.padding_token_id", kPad);
    w.set_u32("tokenizer.ggml.eot_token_id", kEndOfTurn);
    w.set_bool("tokenizer.ggml.add_bos_token", true);
    w.set_bool("tokenizer.ggml.add_eos_token", false);
    w.set_bool("tokenizer.ggml.add_space_prefix", true);
}


void put_arch_keys(GgufWriter& w, const DecoderKeys& k) {
    const std::string a = k.arch + ".";
    w.set_string("general.architecture", k.arch);
    w.set_string("general.name", k.name);
    w.set_u32("general.alignment", 32);
    w.set_u32(a + "context_length", uint32_t(k.ctx));
    w.set_u32(a + "embedding_length", uint32_t(k.n_embd));
    w.set_u32(a + "block_count", uint32_t(k.n_layer));
    w.set_u32(a + "feed_forward_length", uint32_t(k.n_ff));
    w.set_u32(a + "attention.head_count", uint32_t(k.n_head));
    w.set_u32(a + "attention.head_count_kv", uint32_t(k.n_head_kv));
    w.set_u32(a + "attention.key_length", uint32_t(k.head_dim));
    w.set_u32(a + "attention.value_length", uint32_t(k.head_dim));
}

void check_tiny_gemma3(const TinyGemma3Spec& s) {
    auto bad = [](const std::string& what) { throw std::invalid_argument("tiny gemma3: " + what); };
    auto positive = [&](const char* name, int v) {
        if (v <= 0) bad(std::string(name) + " must be positive (got " + std::to_string(v) + ")");
    };
    positive("n_layer", s.n_layer);
    positive("n_embd", s.n_embd);
    positive("n_head", s.n_head);
    positive("n_head_kv", s.n_head_kv);
    positive("head_dim", s.head_dim);
    positive("n_ff", s.n_ff);
    positive("ctx", s.ctx);
    if (s.window < 0) bad("window must be >= 0 (0: every layer attends globally)");
    if (s.n_head % s.n_head_kv) bad("n_head (" + std::to_string(s.n_head) + ") must be a multiple of n_head_kv (" + std::to_string(s.n_head_kv) + ")");
    if (s.head_dim % 2) bad("head_dim must be even (rope rotates pairs)");
    if (s.n_vocab < tiny_vocab::kFirstPiece)
        bad("n_vocab must be at least " + std::to_string(tiny_vocab::kFirstPiece) + " (6 special and 256 byte tokens)");
    if (!is_matmul_type(s.wtype) || !can_quantize(s.wtype))
        bad(std::string("weight type ") + dtype_name(s.wtype) + " cannot be used for matmul weights");
    const int64_t blk = block_size(s.wtype);
    const std::pair<const char*, int64_t> ks[] = {
        {"n_embd", s.n_embd}, {"n_head * head_dim", int64_t(s.n_head) * s.head_dim}, {"n_ff", s.n_ff}};
    for (auto [name, k] : ks)
        if (k % blk)
            bad(std::string(name) + " = " + std::to_string(k) + " is a matmul row length and must be a multiple of the " +
                dtype_name(s.wtype) + " block size " + std::to_string(blk));
}

std::vector<uint8_t> make_tiny_gemma3(const TinyGemma3Spec& s) {
    check_tiny_gemma3(s);
    GgufWriter w;
    const std::string a = "gemma3.";
    put_arch_keys(w, {"gemma3", "tiny-gemma3 (random weights)", s.ctx, s.n_embd, s.n_layer, s.n_ff, s.n_head, s.n_head_kv, s.head_dim});
    w.set_u32(a + "attention.sliding_window", uint32_t(s.window));
    if (s.pooling >= 0) w.set_u32(a + "pooling_type", uint32_t(s.pooling));
    w.set_f32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
    w.set_f32(a + "rope.freq_base", s.rope_base);
    put_tiny_vocab(w, s.n_vocab);

    Rng rng(s.seed);
    const int64_t E = s.n_embd, qd = int64_t(s.n_head) * s.head_dim, kvd = int64_t(s.n_head_kv) * s.head_dim;
    w.add_tensor("token_embd.weight", s.wtype, {E, s.n_vocab}, matmul_weight(rng, s.wtype, E, s.n_vocab));
    w.add_tensor("output_norm.weight", DType::F32, {E}, norm_weight(rng, E));
    for (int il = 0; il < s.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        w.add_tensor(p + "attn_norm.weight", DType::F32, {E}, norm_weight(rng, E));
        w.add_tensor(p + "attn_q.weight", s.wtype, {E, qd}, matmul_weight(rng, s.wtype, E, qd));
        w.add_tensor(p + "attn_k.weight", s.wtype, {E, kvd}, matmul_weight(rng, s.wtype, E, kvd));
        w.add_tensor(p + "attn_v.weight", s.wtype, {E, kvd}, matmul_weight(rng, s.wtype, E, kvd));
        w.add_tensor(p + "attn_q_norm.weight", DType::F32, {s.head_dim}, norm_weight(rng, s.head_dim));
        w.add_tensor(p + "attn_k_norm.weight", DType::F32, {s.head_dim}, norm_weight(rng, s.head_dim));
        w.add_tensor(p + "attn_output.weight", s.wtype, {qd, E}, matmul_weight(rng, s.wtype, qd, E));
        w.add_tensor(p + "post_attention_norm.weight", DType::F32, {E}, norm_weight(rng, E));
        w.add_tensor(p + "ffn_norm.weight", DType::F32, {E}, norm_weight(rng, E));
        w.add_tensor(p + "ffn_gate.weight", s.wtype, {E, s.n_ff}, matmul_weight(rng, s.wtype, E, s.n_ff));
        w.add_tensor(p + "ffn_up.weight", s.wtype, {E, s.n_ff}, matmul_weight(rng, s.wtype, E, s.n_ff));
        w.add_tensor(p + "ffn_down.weight", s.wtype, {s.n_ff, E}, matmul_weight(rng, s.wtype, s.n_ff, E));
        w.add_tensor(p + "post_ffw_norm.weight", DType::F32, {E}, norm_weight(rng, E));
    }
    return w.to_bytes();
}

void write_tiny_gemma3(const std::string& path, const TinyGemma3Spec& spec) {
    std::vector<uint8_t> bytes = make_tiny_gemma3(spec);
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) throw std::runtime_error("cannot open '" + path + "' for writing");
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    if (std::fclose(f) != 0 || !ok) throw std::runtime_error("cannot write '" + path + "'");
}

void write_with_tiny_vocab(const std::string& in, const std::string& out) {
    auto f = GgufFile::open(in);
    const GgufTensorInfo* emb = f->find_tensor("token_embd.weight");
    if (!emb) throw std::runtime_error(in + ": no token_embd.weight to size the vocabulary by");
    const int n_vocab = int(emb->ne[1]);
    if (n_vocab < tiny_vocab::kFirstByte + 0xF5)
        throw std::runtime_error(in + ": " + std::to_string(n_vocab) + " embedding rows, fewer than the " +
                                 std::to_string(tiny_vocab::kFirstByte + 0xF5) + " the tiny vocabulary needs for UTF-8 text");
    GgufWriter w;
    for (const auto& [key, v] : f->metadata()) {
        if (key.rfind("tokenizer.", 0) == 0 || key == "general.alignment") continue;
        auto raw = [&](GgufType elem, size_t esize, const auto& vals) {
            std::vector<uint8_t> payload(vals.size() * esize);
            for (size_t i = 0; i < vals.size(); ++i) {
                if (elem == GgufType::F32) {
                    const float x = float(vals[i]);
                    std::memcpy(payload.data() + i * 4, &x, 4);
                } else if (elem == GgufType::F64) {
                    const double x = double(vals[i]);
                    std::memcpy(payload.data() + i * 8, &x, 8);
                } else {
                    const uint64_t x = uint64_t(vals[i]);
                    std::memcpy(payload.data() + i * esize, &x, esize);  // little-endian
                }
            }
            w.set_array_raw(key, elem, vals.size(), std::move(payload));
        };
        switch (v.type) {
            case GgufType::U8: w.set_u8(key, uint8_t(std::get<uint64_t>(v.scalar))); break;
            case GgufType::I8: w.set_i8(key, int8_t(std::get<int64_t>(v.scalar))); break;
            case GgufType::U16: w.set_u16(key, uint16_t(std::get<uint64_t>(v.scalar))); break;
            case GgufType::I16: w.set_i16(key, int16_t(std::get<int64_t>(v.scalar))); break;
            case GgufType::U32: w.set_u32(key, uint32_t(std::get<uint64_t>(v.scalar))); break;
            case GgufType::I32: w.set_i32(key, int32_t(std::get<int64_t>(v.scalar))); break;
            case GgufType::U64: w.set_u64(key, std::get<uint64_t>(v.scalar)); break;
            case GgufType::I64: w.set_i64(key, std::get<int64_t>(v.scalar)); break;
            case GgufType::F32: w.set_f32(key, float(std::get<double>(v.scalar))); break;
            case GgufType::F64: w.set_f64(key, std::get<double>(v.scalar)); break;
            case GgufType::BOOL: w.set_bool(key, std::get<bool>(v.scalar)); break;
            case GgufType::STRING: w.set_string(key, std::get<std::string>(v.scalar)); break;
            case GgufType::ARRAY:
                switch (v.elem_type) {
                    case GgufType::STRING: w.set_string_array(key, v.strings); break;
                    case GgufType::F32: raw(GgufType::F32, 4, v.floats); break;
                    case GgufType::F64: raw(GgufType::F64, 8, v.floats); break;
                    case GgufType::U8: raw(GgufType::U8, 1, v.uints); break;
                    case GgufType::U16: raw(GgufType::U16, 2, v.uints); break;
                    case GgufType::U32: raw(GgufType::U32, 4, v.uints); break;
                    case GgufType::U64: raw(GgufType::U64, 8, v.uints); break;
                    case GgufType::I8: raw(GgufType::I8, 1, v.ints); break;
                    case GgufType::I16: raw(GgufType::I16, 2, v.ints); break;
                    case GgufType::I32: raw(GgufType::I32, 4, v.ints); break;
                    case GgufType::I64: raw(GgufType::I64, 8, v.ints); break;
                    case GgufType::BOOL: raw(GgufType::BOOL, 1, v.ints); break;
                    default: throw std::runtime_error(in + ": key " + key + " is an array of arrays");
                }
                break;
        }
    }
    put_tiny_vocab(w, n_vocab);
    for (const GgufTensorInfo& t : f->tensors()) {
        std::vector<int64_t> ne(t.ne, t.ne + std::max(t.n_dims, 1));
        w.add_tensor(t.name, t.type, ne, std::vector<uint8_t>(t.data, t.data + t.nbytes));
    }
    w.write(out);
}

}  // namespace ls
