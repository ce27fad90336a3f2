// Rewriting a GGUF file with some metadata changed or some tensors dropped: for tests of what
// a loader says about broken files.
#pragma once
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/gguf/gguf.h"
#include "core/quant/quant.h"

namespace ls::test {

namespace detail {
inline size_t scalar_width(GgufType t) {
    switch (t) {
        case GgufType::U8: case GgufType::I8: case GgufType::BOOL: return 1;
        case GgufType::U16: case GgufType::I16: return 2;
        case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
        default: return 8;
    }
}

// Any value read from a GGUF file, written back with its own type.
inline void put_value(GgufWriter& w, const std::string& key, const GgufValue& v) {
    if (v.type == GgufType::ARRAY) {
        if (v.elem_type == GgufType::STRING) {
            w.set_string_array(key, v.strings);
            return;
        }
        const size_t width = scalar_width(v.elem_type);
        std::vector<uint8_t> bytes;
        auto append = [&](const void* p) {
            const auto* b = static_cast<const uint8_t*>(p);
            bytes.insert(bytes.end(), b, b + width);  // little-endian host
        };
        uint64_t n = 0;
        if (v.elem_type == GgufType::F32) {
            for (double d : v.floats) { const float f = float(d); append(&f); ++n; }
        } else if (v.elem_type == GgufType::F64) {
            for (double d : v.floats) { append(&d); ++n; }
        } else {
            for (int64_t x : v.ints) { append(&x); ++n; }
            for (uint64_t x : v.uints) { append(&x); ++n; }
        }
        w.set_array_raw(key, v.elem_type, n, bytes);
        return;
    }
    switch (v.type) {
        case GgufType::STRING: w.set_string(key, std::get<std::string>(v.scalar)); break;
        case GgufType::BOOL: w.set_bool(key, std::get<bool>(v.scalar)); break;
        case GgufType::F32: w.set_f32(key, float(std::get<double>(v.scalar))); break;
        case GgufType::F64: w.set_f64(key, std::get<double>(v.scalar)); break;
        case GgufType::U8: w.set_u8(key, uint8_t(std::get<uint64_t>(v.scalar))); break;
        case GgufType::U16: w.set_u16(key, uint16_t(std::get<uint64_t>(v.scalar))); break;
        case GgufType::U32: w.set_u32(key, uint32_t(std::get<uint64_t>(v.scalar))); break;
        case GgufType::U64: w.set_u64(key, std::get<uint64_t>(v.scalar)); break;
        case GgufType::I8: w.set_i8(key, int8_t(std::get<int64_t>(v.scalar))); break;
        case GgufType::I16: w.set_i16(key, int16_t(std::get<int64_t>(v.scalar))); break;
        case GgufType::I32: w.set_i32(key, int32_t(std::get<int64_t>(v.scalar))); break;
        case GgufType::I64: w.set_i64(key, std::get<int64_t>(v.scalar)); break;
        default: break;
    }
}
}  // namespace detail

// Copies `src` to `out`: metadata keys in `drop_keys` and tensors in `drop_tensors` are left
// out, `edit` (if given) writes extra or replacement metadata after the copied keys, and
// `tensor_edit` (if given) may write a tensor in its own way (returning true) instead of the copy.
inline void rewrite_gguf(const std::string& src, const std::string& out, const std::set<std::string>& drop_keys,
                         const std::set<std::string>& drop_tensors, const std::function<void(GgufWriter&)>& edit = {},
                         const std::function<bool(const GgufTensorInfo&, GgufWriter&)>& tensor_edit = {}) {
    auto f = GgufFile::open(src);
    GgufWriter w;
    for (const auto& [key, v] : f->metadata())
        if (!drop_keys.count(key) && key != "general.alignment") detail::put_value(w, key, v);
    if (edit) edit(w);
    for (const GgufTensorInfo& t : f->tensors()) {
        if (drop_tensors.count(t.name) || (tensor_edit && tensor_edit(t, w))) continue;
        std::vector<int64_t> ne(t.ne, t.ne + std::max(t.n_dims, 1));
        w.add_tensor(t.name, t.type, ne, std::vector<uint8_t>(t.data, t.data + t.nbytes));
    }
    w.write(out);
}

// Copies `src` to `out` with every matrix (a 2-D tensor whose rows fit `type`'s blocks: the
// projections, the experts' slices aside, and the token embedding) dequantized and quantized
// again to `type` by the reference quantizers (core/quant), row by row; norms, biases and
// anything else as they are. Deterministic: the same source and type give the same bytes,
// so a file another engine was run on can be written again where that engine is not.
// Returns how many tensors it converted.
inline int requantize_gguf(const std::string& src, const std::string& out, DType type) {
    const DTypeTraits& tt = traits(type);
    if (!can_quantize(type) || !is_weight_type(type))
        throw std::runtime_error(std::string("requantize: lockstep does not write ") + dtype_name(type) + " weights");
    int converted = 0;
    rewrite_gguf(src, out, {}, {}, {}, [&](const GgufTensorInfo& t, GgufWriter& w) {
        if (t.n_dims != 2 || t.ne[0] % tt.block != 0 || !can_dequantize(t.type) || !is_weight_type(t.type)) return false;
        const int64_t K = t.ne[0], rows = t.ne[1];
        const size_t in_row = size_t(K / traits(t.type).block) * traits(t.type).block_bytes;
        const size_t out_row = size_t(K / tt.block) * tt.block_bytes;
        std::vector<uint8_t> bytes(out_row * size_t(rows));
        std::vector<float> row(static_cast<size_t>(K));
        for (int64_t r = 0; r < rows; ++r) {
            dequantize_row(t.type, t.data + size_t(r) * in_row, row.data(), K);
            quantize_row(type, row.data(), bytes.data() + size_t(r) * out_row, K);
        }
        w.add_tensor(t.name, type, {K, rows}, std::move(bytes));
        ++converted;
        return true;
    });
    return converted;
}

// A vocabulary edit: tokens put into a vocabulary's unused slots (or retyped where the text is
// already there), as a real model's vocabulary holds its template's markers, and which tokens
// are BOS, EOS and EOT; optionally a chat template. For test models of a family's format.
struct VocabEdit {
    std::vector<std::pair<std::string, int32_t>> tokens;  // text, TokenType (3 control, 4 user-defined)
    std::string bos, eos, eot;                            // token texts; empty: unchanged
    std::optional<std::string> chat_template;             // tokenizer.chat_template
    uint32_t context_length = 0;                          // > 0: <arch>.context_length
};

// Copies `src` (which has a tokenizer) to `out` with `edit` applied. Throws naming the token
// when the vocabulary has no unused slot left for it, or a BOS/EOS/EOT text it does not hold.
inline void edit_vocab(const std::string& src, const std::string& out, const VocabEdit& edit) {
    auto f = GgufFile::open(src);
    const GgufValue* tv = f->find("tokenizer.ggml.tokens");
    const GgufValue* ty = f->find("tokenizer.ggml.token_type");
    if (!tv || !ty) throw std::runtime_error(src + ": no tokenizer.ggml.tokens and token_type to edit");
    std::vector<std::string> tokens = tv->strings;
    std::vector<int32_t> types;
    for (int64_t x : ty->ints) types.push_back(int32_t(x));
    for (uint64_t x : ty->uints) types.push_back(int32_t(x));
    if (types.size() != tokens.size()) throw std::runtime_error(src + ": token_type and tokens differ in length");
    auto find = [&](const std::string& t) -> int64_t {
        for (size_t i = 0; i < tokens.size(); ++i)
            if (tokens[i] == t) return int64_t(i);
        return -1;
    };
    size_t next_unused = 0;
    for (const auto& [text, type] : edit.tokens) {
        int64_t id = find(text);
        if (id < 0) {
            while (next_unused < types.size() && types[next_unused] != 5) ++next_unused;  // 5: unused
            if (next_unused == types.size()) throw std::runtime_error(src + ": no unused token slot left for " + text);
            id = int64_t(next_unused);
            tokens[size_t(id)] = text;
        }
        types[size_t(id)] = type;
    }
    std::set<std::string> drop = {"tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.chat_template"};
    std::vector<std::pair<std::string, int64_t>> ids;
    for (const auto& [key, text] : {std::pair<std::string, std::string>{"tokenizer.ggml.bos_token_id", edit.bos},
                                    {"tokenizer.ggml.eos_token_id", edit.eos}, {"tokenizer.ggml.eot_token_id", edit.eot}}) {
        if (text.empty()) continue;
        const int64_t id = find(text);
        if (id < 0) throw std::runtime_error(src + ": " + key + ": the vocabulary has no token " + text);
        ids.emplace_back(key, id);
        drop.insert(key);
    }
    if (!edit.chat_template && f->find("tokenizer.chat_template")) drop.erase("tokenizer.chat_template");
    std::string ctx_key;
    if (edit.context_length > 0) {
        const GgufValue* arch = f->find("general.architecture");
        if (!arch || arch->type != GgufType::STRING) throw std::runtime_error(src + ": no general.architecture for the context length");
        ctx_key = std::get<std::string>(arch->scalar) + ".context_length";
        drop.insert(ctx_key);
    }
    rewrite_gguf(src, out, drop, {}, [&](GgufWriter& w) {
        w.set_string_array("tokenizer.ggml.tokens", tokens);
        w.set_i32_array("tokenizer.ggml.token_type", types);
        for (const auto& [key, id] : ids) w.set_u32(key, uint32_t(id));
        if (edit.chat_template) w.set_string("tokenizer.chat_template", *edit.chat_template);
        if (!ctx_key.empty()) w.set_u32(ctx_key, edit.context_length);
    });
}

}  // namespace ls::test
