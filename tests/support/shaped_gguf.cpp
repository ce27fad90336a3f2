#include "tests/support/shaped_gguf.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "core/gguf/gguf.h"
#include "core/quant/quant.h"
#include "tests/support/split_rng.h"
#include "tests/support/tiny_gguf.h"

namespace ls {

const std::vector<ModelShape>& model_shapes() {
    // The published configurations (config.json) of each model.
    static const std::vector<ModelShape> shapes = {
        {"gemma3-270m", "gemma3", 18, 640, 4, 1, 256, 2048, 262144, 512, 32768, 1e6f, true},
        {"gemma3-1b", "gemma3", 26, 1152, 4, 1, 256, 6912, 262144, 512, 32768, 1e6f, true},
        {"llama3.2-1b", "llama", 16, 2048, 32, 8, 64, 8192, 128256, 0, 131072, 500000.f, true},
        {"qwen3-8b", "qwen3", 36, 4096, 32, 8, 128, 12288, 151936, 0, 40960, 1e6f, false},
        {"qwen3vl-4b", "qwen3vl", 36, 2560, 32, 8, 128, 9728, 151936, 0, 262144, 5e6f, true, 3},
    };
    return shapes;
}

const ModelShape& find_model_shape(const std::string& name) {
    std::string known;
    for (const ModelShape& s : model_shapes()) {
        if (s.name == name) return s;
        known += (known.empty() ? "" : ", ") + s.name;
    }
    throw std::invalid_argument("no model shape '" + name + "' (known: " + known + ")");
}

DType q4_k_m_type(const std::string& role, int layer, int n_layer, int64_t row_len, bool tied_output) {
    // llama.cpp's use_more_bits: the first and last eighth of the layers, and every third between.
    const bool more_bits = layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
    DType t = DType::Q4_K;
    if (role == "output.weight" || (tied_output && role == "token_embd.weight")) t = DType::Q6_K;
    else if ((role == "attn_v.weight" || role == "ffn_down.weight") && more_bits) t = DType::Q6_K;
    if (row_len % 256 != 0) t = t == DType::Q6_K ? DType::Q8_0 : DType::Q5_0;
    return t;
}

namespace {

// (k, n) matrix of `type`: a pool of kPool rows drawn and quantized (on up to `threads`
// threads, each row from its own seed), then every row a copy of a pool row picked by its
// own draw. The reference quantizers take some 150 ns a weight for the k-quants (eight
// minutes of one core for an 8B model); speed depends on the bytes, not on their variety.
std::vector<uint8_t> random_matrix(DType type, int64_t k, int64_t n, uint64_t seed, int threads) {
    constexpr int64_t kPool = 64;
    const size_t rb = row_bytes(type, k);
    const int64_t pool_rows = std::min(n, kPool);
    std::vector<uint8_t> pool(rb * size_t(pool_rows));
    const float a = float(std::sqrt(3.0 / double(k)));
    auto draw = [&](int64_t r0, int64_t r1) {
        std::vector<float> row(static_cast<size_t>(k));
        for (int64_t r = r0; r < r1; ++r) {
            Rng rng(seed * 0x100000001b3ull + uint64_t(r));
            for (int64_t i = 0; i + 4 <= k; i += 4) {  // four 16-bit draws per call
                const uint64_t z = rng.next();
                for (int j = 0; j < 4; ++j) row[size_t(i + j)] = a * (float((z >> (16 * j)) & 0xffff) / 32767.5f - 1.0f);
            }
            for (int64_t i = k & ~int64_t(3); i < k; ++i) row[size_t(i)] = a * float(2.0 * rng.uniform() - 1.0);
            quantize_row(type, row.data(), pool.data() + size_t(r) * rb, k);
        }
    };
    const int64_t nt = std::max<int64_t>(1, std::min<int64_t>(threads, pool_rows / 4));
    std::vector<std::thread> workers;
    for (int64_t t = 1; t < nt; ++t) workers.emplace_back(draw, pool_rows * t / nt, pool_rows * (t + 1) / nt);
    draw(0, pool_rows / nt);
    for (auto& th : workers) th.join();
    std::vector<uint8_t> out(rb * size_t(n));
    Rng pick(~seed);
    for (int64_t r = 0; r < n; ++r)
        std::memcpy(out.data() + size_t(r) * rb, pool.data() + size_t(pick.next() % uint64_t(pool_rows)) * rb, rb);
    return out;
}

std::vector<uint8_t> norm_weight(int64_t n, uint64_t seed) {
    Rng rng(seed);
    std::vector<uint8_t> out(size_t(n) * 4);
    for (int64_t i = 0; i < n; ++i) {
        const float x = 1.0f + 0.1f * float(2.0 * rng.uniform() - 1.0);
        std::memcpy(out.data() + i * 4, &x, 4);
    }
    return out;
}

}  // namespace

uint64_t write_shaped_model(const std::string& path, const ModelShape& s, uint64_t seed, int threads) {
    GgufWriter w;
    const std::string a = s.arch + ".";
    put_arch_keys(w, {s.arch, s.name + "-shaped (random weights, Q4_K_M types)", s.ctx, s.n_embd, s.n_layer, s.n_ff, s.n_head,
                      s.n_head_kv, s.head_dim});
    if (s.arch == "gemma3") w.set_u32(a + "attention.sliding_window", uint32_t(s.window));
    if (s.arch != "gemma3") {
        w.set_u32(a + "rope.dimension_count", uint32_t(s.head_dim));
        w.set_u32(a + "vocab_size", uint32_t(s.n_vocab));
    }
    w.set_f32(a + "attention.layer_norm_rms_epsilon", 1e-6f);
    w.set_f32(a + "rope.freq_base", s.rope_base);
    if (s.arch == "qwen3vl") {  // Qwen3-VL's interleaved M-RoPE sections and its deepstack
        w.set_i32_array(a + "rope.dimension_sections", {24, 20, 20, 0});
        w.set_u32(a + "n_deepstack_layers", uint32_t(s.n_deepstack));
    }
    // (Qwen3-VL: its chat and image markers, so that an image prompt lays out as the real one)
    put_tiny_vocab(w, s.n_vocab,
                   s.arch == "qwen3vl" ? std::vector<std::string>{"<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>"}
                                       : std::vector<std::string>{});

    uint64_t bytes = 0, tensor_seed = seed;
    const int64_t E = s.n_embd, qd = int64_t(s.n_head) * s.head_dim, kvd = int64_t(s.n_head_kv) * s.head_dim;
    auto matrix = [&](const std::string& name, const std::string& role, int layer, int64_t k, int64_t n) {
        const DType t = q4_k_m_type(role, layer, s.n_layer, k, s.tied_output);
        std::vector<uint8_t> d = random_matrix(t, k, n, ++tensor_seed, threads);
        bytes += d.size();
        w.add_tensor(name, t, {k, n}, std::move(d));
    };
    auto norm = [&](const std::string& name, int64_t n) { w.add_tensor(name, DType::F32, {n}, norm_weight(n, ++tensor_seed)); };

    matrix("token_embd.weight", "token_embd.weight", 0, E, s.n_vocab);
    norm("output_norm.weight", E);
    if (!s.tied_output) matrix("output.weight", "output.weight", 0, E, s.n_vocab);
    const bool gemma = s.arch == "gemma3", qk_norm = s.arch != "llama";
    for (int il = 0; il < s.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        norm(p + "attn_norm.weight", E);
        for (auto [role, k, n] : {std::tuple<const char*, int64_t, int64_t>{"attn_q.weight", E, qd},
                                  {"attn_k.weight", E, kvd},
                                  {"attn_v.weight", E, kvd},
                                  {"attn_output.weight", qd, E},
                                  {"ffn_gate.weight", E, s.n_ff},
                                  {"ffn_up.weight", E, s.n_ff},
                                  {"ffn_down.weight", s.n_ff, E}})
            matrix(p + role, role, il, k, n);
        if (qk_norm) {
            norm(p + "attn_q_norm.weight", s.head_dim);
            norm(p + "attn_k_norm.weight", s.head_dim);
        }
        norm(p + "ffn_norm.weight", E);
        if (gemma) {
            norm(p + "post_attention_norm.weight", E);
            norm(p + "post_ffw_norm.weight", E);
        }
    }
    w.write(path);
    return bytes;
}

bool has_shaped_mmproj(const ModelShape& s) { return s.arch == "qwen3vl"; }

uint64_t write_shaped_mmproj(const std::string& path, const ModelShape& s, uint64_t seed, int threads) {
    if (!has_shaped_mmproj(s)) throw std::invalid_argument("the " + s.name + " shape has no projector");
    // Qwen3-VL-4B's vision_config (its config.json): depth 24, hidden 1024, 16 heads, ff 4096,
    // patch 16, temporal 2, merge 2, 2304 positions, deepstack_visual_indexes [5, 11, 17].
    constexpr int64_t E = 1024, F = 4096, L = 24, P = 16, G = 48, M = E * 4;
    const std::vector<int> deepstack = {5, 11, 17};
    GgufWriter w;
    w.set_string("general.architecture", "clip");
    w.set_string("general.name", s.name + "-shaped projector (random weights, F16)");
    w.set_bool("clip.has_vision_encoder", true);
    w.set_u32("clip.vision.projection_dim", uint32_t(s.n_embd));
    w.set_u32("clip.vision.image_size", uint32_t(G * P));
    w.set_u32("clip.vision.patch_size", uint32_t(P));
    w.set_u32("clip.vision.embedding_length", uint32_t(E));
    w.set_u32("clip.vision.feed_forward_length", uint32_t(F));
    w.set_u32("clip.vision.block_count", uint32_t(L));
    w.set_u32("clip.vision.attention.head_count", 16);
    w.set_f32_array("clip.vision.image_mean", {0.5f, 0.5f, 0.5f});
    w.set_f32_array("clip.vision.image_std", {0.5f, 0.5f, 0.5f});
    w.set_string("clip.projector_type", "qwen3vl_merger");
    w.set_bool("clip.use_gelu", true);
    w.set_u32("clip.vision.spatial_merge_size", 2);
    w.set_f32("clip.vision.attention.layer_norm_epsilon", 1e-6f);
    std::vector<uint8_t> flags(size_t(L), 0);
    for (int l : deepstack) flags[size_t(l)] = 1;
    w.set_array_raw("clip.vision.is_deepstack_layers", GgufType::BOOL, uint64_t(L), flags);
    uint64_t bytes = 0, tensor_seed = seed;
    auto matrix = [&](const std::string& name, std::vector<int64_t> ne) {
        int64_t n = 1;
        for (size_t i = 1; i < ne.size(); ++i) n *= ne[i];
        std::vector<uint8_t> d = random_matrix(DType::F16, ne[0], n, ++tensor_seed, threads);
        bytes += d.size();
        w.add_tensor(name, DType::F16, std::move(ne), std::move(d));
    };
    auto vec = [&](const std::string& name, std::vector<int64_t> ne) {
        int64_t n = 1;
        for (int64_t v : ne) n *= v;
        std::vector<uint8_t> d = norm_weight(n, ++tensor_seed);
        bytes += d.size();
        w.add_tensor(name, DType::F32, std::move(ne), std::move(d));
    };
    matrix("v.patch_embd.weight", {P, P, 3, E});
    matrix("v.patch_embd.weight.1", {P, P, 3, E});
    vec("v.patch_embd.bias", {E});
    vec("v.position_embd.weight", {E, G * G});
    for (int64_t il = 0; il < L; ++il) {
        const std::string p = "v.blk." + std::to_string(il) + ".";
        for (const char* n : {"ln1", "ln2"}) vec(p + n + ".weight", {E}), vec(p + n + ".bias", {E});
        matrix(p + "attn_qkv.weight", {E, 3 * E}), vec(p + "attn_qkv.bias", {3 * E});
        matrix(p + "attn_out.weight", {E, E}), vec(p + "attn_out.bias", {E});
        matrix(p + "ffn_up.weight", {E, F}), vec(p + "ffn_up.bias", {F});
        matrix(p + "ffn_down.weight", {F, E}), vec(p + "ffn_down.bias", {E});
    }
    vec("v.post_ln.weight", {E}), vec("v.post_ln.bias", {E});
    matrix("mm.0.weight", {M, M}), vec("mm.0.bias", {M});
    matrix("mm.2.weight", {M, s.n_embd}), vec("mm.2.bias", {s.n_embd});
    for (int l : deepstack) {
        const std::string p = "v.deepstack." + std::to_string(l) + ".";
        vec(p + "norm.weight", {M}), vec(p + "norm.bias", {M});
        matrix(p + "fc1.weight", {M, M}), vec(p + "fc1.bias", {M});
        matrix(p + "fc2.weight", {M, s.n_embd}), vec(p + "fc2.bias", {s.n_embd});
    }
    w.write(path);
    return bytes;
}

}  // namespace ls
