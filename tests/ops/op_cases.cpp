#include "tests/ops/op_cases.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <iterator>

#include "core/ir/ops.h"
#include "core/rules/attention_rule.h"
#include "core/quant/quant.h"
#include "core/rules/rope_rule.h"

namespace ls::test {

Tensor* Keep::persistent(Backend& be, DType type, std::initializer_list<int64_t> ne, const std::vector<uint8_t>& bytes) {
    Tensor& t = tensors.emplace_back();
    t.type = type;
    int i = 0;
    for (int64_t n : ne) t.ne[i++] = n;
    set_contiguous_strides(t);
    t.kind = TensorKind::Persistent;
    buffers.push_back(be.alloc(std::max<size_t>(t.nbytes(), 1)));
    t.buffer = buffers.back().get();
    if (!bytes.empty()) be.upload(*t.buffer, 0, bytes.data(), t.nbytes());
    return &t;
}

std::vector<float> randn(std::mt19937& rng, size_t n, float scale) {
    std::normal_distribution<float> d(0.f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

std::vector<uint8_t> quantized_random(std::mt19937& rng, DType t, int64_t k, int64_t rows, float scale) {
    std::vector<uint8_t> out(row_bytes(t, k) * size_t(rows));
    if (!can_quantize(t)) {
        // The grid i-quants (no quantizer in lockstep): random bytes, every index, sign and
        // sub-block scale drawn, with the f16 block scale set to about scale / 32 so outputs
        // stay in the range of the quantized types' (a value is d * ls * grid / den).
        for (auto& b : out) b = static_cast<uint8_t>(rng());
        const size_t bb = traits(t).block_bytes;
        std::uniform_real_distribution<float> u(0.5f, 1.0f);
        for (size_t off = 0; off < out.size(); off += bb) {
            const uint16_t h = fp32_to_fp16(scale / 32.0f * u(rng) * ((rng() & 1) ? -1.0f : 1.0f));
            if (t == DType::IQ1_M) {  // the f16 scale in the top nibbles of the four u16 scale words
                for (int w = 0; w < 4; ++w) {
                    uint8_t& hi = out[off + 48 + 2 * size_t(w) + 1];
                    hi = static_cast<uint8_t>((hi & 0x0F) | (((h >> (4 * w)) & 0x0F) << 4));
                }
            } else {
                std::memcpy(&out[off], &h, 2);  // every other grid type starts with its f16 d
            }
        }
        return out;
    }
    std::vector<float> f = randn(rng, size_t(k * rows), scale);
    for (int64_t r = 0; r < rows; ++r) quantize_row(t, f.data() + r * k, out.data() + r * row_bytes(t, k), k);
    return out;
}

namespace {

Tensor* in_f32(Graph& g, std::mt19937& rng, std::initializer_list<int64_t> ne, float scale = 1.0f) {
    int64_t n = 1;
    for (int64_t x : ne) n *= x;
    std::vector<float> v = randn(rng, size_t(n), scale);
    return g.input(DType::F32, ne, v.data(), "x");
}

Tensor* in_i32(Graph& g, const std::vector<int32_t>& v) { return g.input(DType::I32, {int64_t(v.size())}, v.data(), "i32"); }

const DType kWeightTypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                              DType::Q8_0, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K};
const DType kCacheTypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_0};

}  // namespace

namespace {

using namespace ops;

std::string ne_str(std::initializer_list<int64_t> ne) {
    std::string s = "[";
    for (int64_t n : ne) s += (s.size() > 1 ? "," : "") + std::to_string(n);
    return s + "]";
}

// An input seen through view_2d as [n0, n1] from element pad / 2 of a larger tensor.
// Strided: the tensor below is [n0 + pad, n1], so rows do not follow each other (add and
// mul take that). Otherwise it is [n0 * n1 + pad] and the rows are packed but start at an
// offset (every op that takes a view takes that: core/ir/ops.cpp).
Tensor* in_view(Graph& g, std::mt19937& rng, int64_t n0, int64_t n1, int64_t pad, bool strided, float scale = 1.0f) {
    if (strided) return view_2d(g, in_f32(g, rng, {n0 + pad, n1}, scale), n0, n1, size_t(n0 + pad) * 4, size_t(pad / 2) * 4);
    return view_2d(g, in_f32(g, rng, {n0 * n1 + pad}, scale), n0, n1, size_t(n0) * 4, size_t(pad / 2) * 4);
}
std::string view_str(int64_t n0, int64_t n1, int64_t pad, bool strided) {
    return "view" + ne_str({n0, n1}) + "@" + std::to_string(pad / 2) + "/" + (strided ? ne_str({n0 + pad, n1}) : ne_str({n0 * n1 + pad}));
}

// Elementwise ops and norms over one shape; `pad` > 0: the inputs are views (2-D, the
// shape's rows ne1 * ne2) of padded tensors, strided for add and mul.
struct ElementCase {
    enum Kind { Add, Mul, Unary, RmsNorm, Softmax, LayerNorm } kind;
    int64_t n0, n1, n2;
    int64_t pad = 0;
    static constexpr const char* kNames[] = {"add", "mul", "scale/gelu/gelu_erf/silu/sigmoid/softplus/softcap/clamp", "rms_norm", "softmax", "layer_norm"};
    std::string name() const {
        const bool three = kind == Add || kind == Mul;  // the others take [n0, n1]
        std::string a = pad ? view_str(n0, n1 * (three ? n2 : 1), pad, three) : three ? ne_str({n0, n1, n2}) : ne_str({n0, n1});
        std::string s = std::string(kNames[kind]) + "(a=" + a;
        if (kind == Add) s += ",b=" + ne_str({n0});
        if (kind == Mul) s += ",b=" + (pad ? view_str(n0, n1 * n2, pad + 6, true) : ne_str({n0, n1, n2}));
        return s + ")";
    }
    std::vector<Tensor*> build(Graph& g, Backend&, Keep&, std::mt19937& r) const {
        auto in = [&](int64_t rows3, float scale, int64_t extra) {
            return pad ? in_view(g, r, n0, rows3 ? n1 * n2 : n1, pad + extra, rows3, scale)
                       : rows3 ? in_f32(g, r, {n0, n1, n2}, scale) : in_f32(g, r, {n0, n1}, scale);
        };
        switch (kind) {
            case Add: {
                Tensor* a = in(1, 1.0f, 0);
                return {add(g, a, in_f32(g, r, {n0}))};  // broadcast a row
            }
            case Mul: {
                Tensor* a = in(1, 1.0f, 0);
                return {mul(g, a, in(1, 1.0f, 6))};
            }
            case Unary: {
                Tensor* a = in(0, 3.0f, 0);
                Tensor* wide = in(0, 40.0f, 0);  // reaches exp's clamps
                return {scale(g, a, 0.37f), gelu(g, a), silu(g, a), gelu(g, wide), silu(g, wide), gelu_erf(g, a), gelu_erf(g, wide), sigmoid(g, a), sigmoid(g, wide),
                        softplus(g, a), softplus(g, wide), softcap(g, wide, 30.f), softcap(g, a, 0.5f),
                        clamp(g, a, -1.5f, 2.0f), clamp(g, wide, -INFINITY, 7.0f), clamp(g, wide, -7.0f, 7.0f)};
            }
            case RmsNorm: {
                Tensor* a = in(0, 2.0f, 0);
                Tensor* w = in_f32(g, r, {n0});
                return {rms_norm(g, a, w, 1e-6f), rms_norm(g, a, nullptr, 1e-5f)};
            }
            case Softmax: return {softmax(g, in(0, 4.0f, 0), 0.7f)};
            case LayerNorm: {
                // Rows far from zero mean (an offset of about 5 per element): the centring
                // matters, and a kernel that skipped it or took the variance about 0 fails.
                Tensor* a = in(0, 2.0f, 0);
                std::vector<float> off = randn(r, size_t(n0), 0.5f);
                for (float& v : off) v += 5.0f;
                Tensor* shifted = add(g, a, g.input(DType::F32, {n0}, off.data(), "offset"));
                Tensor* w = in_f32(g, r, {n0});
                Tensor* b = in_f32(g, r, {n0});
                return {layer_norm(g, shifted, w, b, 1e-6f), layer_norm(g, shifted, nullptr, nullptr, 1e-5f),
                        layer_norm(g, a, w, nullptr, 1e-6f), layer_norm(g, a, nullptr, b, 1e-6f)};
            }
        }
        return {};
    }
};

struct RopeCase {
    int mode;
    bool freq_factors;
    bool yarn = false;  // YaRN (gpt-oss's settings, scaled): ramp over pairs 3.4 .. 9.7, magnitude 1.139
    std::string name() const {
        return std::string("rope(x=[64,3,5],n_dims=48,mode=") + (mode == ROPE_NEOX ? "neox" : "normal") +
               (freq_factors ? ",freq_factors" : "") + (yarn ? ",yarn" : "") + ")";
    }
    std::vector<Tensor*> build(Graph& g, Backend&, Keep&, std::mt19937& r) const {
        const int64_t D = 64, H = 3, T = 5;
        Tensor* x = in_f32(g, r, {D, H, T});
        std::vector<int32_t> pos = {0, 7, 100, 4095, 31999};
        std::vector<float> fv;
        if (freq_factors)
            for (int i = 0; i < 24; ++i) fv.push_back(1.0f + 0.25f * float(i));
        RopeParams p{48, mode, 10000.f, 0.5f};  // partial rotation: dims 48..63 pass through
        if (yarn) {
            p.freq_scale = 0.25f;
            p.ext_factor = 1.f;
            p.attn_factor = 1.1386294f;  // 1 + 0.1 ln 4
            rope_yarn_corr_dims(48, 4096, 10000.f, 32.f, 1.f, false, p.corr_lo, p.corr_hi);
        }
        return {rope(g, x, rope_table(g, pos.data(), T, p, freq_factors ? fv.data() : nullptr), p)};
    }
};

// Both sides quantize the activations the same way, sum integer blocks exactly and follow the
// same float chain (core/ref/mul_mat.cpp); float weights are canon_dot (32 partial sums and
// a fixed tree, core/rules/canon.h), whatever the backend's vector width. N = 37: not a multiple of any row block. `pad` > 0:
// the activations are a view at an offset.
struct MulMatCase {
    DType type;
    int64_t K, M, pad = 0;
    std::string name() const {
        return std::string("mul_mat(type=") + dtype_name(type) + ",K=" + std::to_string(K) + ",N=37,M=" + std::to_string(M) +
               (pad ? ",x=" + view_str(K, M, pad, false) : "") + ")";
    }
    std::vector<Tensor*> build(Graph& g, Backend& be, Keep& k, std::mt19937& r) const {
        const int64_t N = 37;
        Tensor* w = k.persistent(be, type, {K, N}, quantized_random(r, type, K, N));
        return {mul_mat(g, w, pad ? in_view(g, r, K, M, pad, false) : in_f32(g, r, {K, M}))};
    }
};

// A norm and the matmul that reads it, both outputs compared: the CUDA backend runs the pair
// as the norm's kernel quantizing its rows for the matmul (rms_norm_mul_mat), at widths its
// staged norm takes, for each dot type (Q8_K, Q8_0, Q8_1), at decode and prompt rows.
struct NormMatCase {
    DType type;
    int64_t K, M;
    std::string name() const {
        return std::string("rms_norm+mul_mat(type=") + dtype_name(type) + ",K=" + std::to_string(K) + ",N=37,M=" + std::to_string(M) + ")";
    }
    std::vector<Tensor*> build(Graph& g, Backend& be, Keep& k, std::mt19937& r) const {
        Tensor* y = rms_norm(g, in_f32(g, r, {K, M}, 2.0f), in_f32(g, r, {K}), 1e-6f);
        Tensor* w = k.persistent(be, type, {K, 37}, quantized_random(r, type, K, 37));
        return {y, mul_mat(g, w, y)};
    }
};

// A gated FFN's activation, its product with up and the down projection that reads it, all
// three outputs compared: the CUDA backend runs the activation and the product as one kernel
// that also quantizes the product's rows for the mul_mat (gelu_mul_mat, silu_mul_mat), for
// 32- and 256-element dot types, at decode and prompt rows, across rows that end inside a
// 256-element kernel block (K = 96).
struct GluMatCase {
    bool silu;
    DType type;
    int64_t K, M;
    std::string name() const {
        return std::string(silu ? "silu" : "gelu") + "*up+mul_mat(type=" + dtype_name(type) + ",K=" + std::to_string(K) +
               ",N=37,M=" + std::to_string(M) + ")";
    }
    std::vector<Tensor*> build(Graph& g, Backend& be, Keep& k, std::mt19937& r) const {
        Tensor* a = in_f32(g, r, {K, M}, 2.0f);
        Tensor* up = in_f32(g, r, {K, M});
        Tensor* y = silu ? ops::silu(g, a) : ops::gelu(g, a);
        Tensor* z = mul(g, y, up);
        Tensor* w = k.persistent(be, type, {K, 37}, quantized_random(r, type, K, 37));
        return {y, z, mul_mat(g, w, z)};
    }
};

// A residual step and the next sublayer's norm, with the mul_mat that reads the norm, every
// output compared: Gemma's norm, add, norm (first_norm) or the other models' add, norm. The
// CUDA backend runs them and the mul_mat's quantizer as one kernel (rms_norm_add_norm), for
// 32- and 256-element dot types, at decode and prompt rows.
struct AddNormMatCase {
    bool first_norm;
    DType type;
    int64_t K, M;
    std::string name() const {
        return std::string(first_norm ? "rms_norm+" : "") + "add+rms_norm+mul_mat(type=" + dtype_name(type) + ",K=" + std::to_string(K) +
               ",N=37,M=" + std::to_string(M) + ")";
    }
    std::vector<Tensor*> build(Graph& g, Backend& be, Keep& k, std::mt19937& r) const {
        Tensor* x = in_f32(g, r, {K, M}, 2.0f);
        Tensor* res = in_f32(g, r, {K, M});
        std::vector<Tensor*> out;
        if (first_norm) {
            x = rms_norm(g, x, in_f32(g, r, {K}), 1e-6f);
            out.push_back(x);
        }
        Tensor* z = add(g, res, x);
        Tensor* y = rms_norm(g, z, in_f32(g, r, {K}), 1e-5f);
        Tensor* w = k.persistent(be, type, {K, 37}, quantized_random(r, type, K, 37));
        out.insert(out.end(), {z, y, mul_mat(g, w, y)});
        return out;
    }
};

struct GetRowsCase {
    DType type;
    std::string name() const { return std::string("get_rows(type=") + dtype_name(type) + ",src=[" + std::to_string(K()) + ",9],rows=[3,0,8,3])"; }
    int64_t K() const { return traits(type).block == 256 ? 256 : 64; }
    std::vector<Tensor*> build(Graph& g, Backend& be, Keep& k, std::mt19937& r) const {
        Tensor* src = k.persistent(be, type, {K(), 9}, quantized_random(r, type, K(), 9));
        return {get_rows(g, src, in_i32(g, {3, 0, 8, 3}))};
    }
};

// The caches take the reference quantizers' bytes.
struct SetRowsCase {
    DType type, index;
    std::string name() const {
        return std::string("set_rows(type=") + dtype_name(type) + ",dst=[64,10],idx=" + (index == DType::I64 ? "i64" : "i32") + "[4,9,0,4])";
    }
    std::vector<Tensor*> build(Graph& g, Backend& be, Keep& k, std::mt19937& r) const {
        const int64_t K = 64, rows = 10;
        Tensor* dst = k.persistent(be, type, {K, rows}, quantized_random(r, type, K, rows));
        std::vector<int64_t> idx = {4, 9, 0, 4};  // duplicate: the last writer wins
        Tensor* ix;
        if (index == DType::I64) ix = g.input(DType::I64, {4}, idx.data(), "idx");
        else ix = in_i32(g, std::vector<int32_t>(idx.begin(), idx.end()));
        return {set_rows(g, dst, in_f32(g, r, {K, 4}), ix)};
    }
};

// A layer's per-head rows between its projections and its attention: q and k rms-normed per
// head (Gemma 3, Qwen3) or not (Llama), roped, and k (reshaped to token rows) and v written
// into their caches, in the order the models build them. The CUDA backend runs the six nodes
// as one kernel (head_rows.cu); a repeated cache row (the last writer wins), quantized caches,
// partial rotation, and an intermediate that is also an output (the kernel writes it).
struct HeadRowsCase {
    bool norms;
    int mode;
    DType cache;
    std::vector<int32_t> rows;  // a token's cache row
    int64_t D = 64, H = 4, Hkv = 2, n_dims = 64;
    bool norm_out = false;
    std::string name() const {
        std::string r;
        for (int32_t x : rows) r += (r.empty() ? "" : ",") + std::to_string(x);
        return std::string("head_rows(norms=") + (norms ? "yes" : "no") + ",mode=" + (mode == ROPE_NEOX ? "neox" : "normal") +
               ",cache=" + dtype_name(cache) + ",q=[" + std::to_string(D) + "," + std::to_string(H) + "],kv_heads=" +
               std::to_string(Hkv) + ",n_dims=" + std::to_string(n_dims) + ",rows=[" + r + "]" + (norm_out ? ",norm_out" : "") + ")";
    }
    std::vector<Tensor*> build(Graph& g, Backend& be, Keep& k, std::mt19937& r) const {
        const int64_t T = int64_t(rows.size()), C = 10;
        Tensor* q = in_f32(g, r, {D, H, T}, 2.0f);
        Tensor* kx = in_f32(g, r, {D, Hkv, T}, 2.0f);
        Tensor* v = in_f32(g, r, {D * Hkv, T});
        Tensor* kc = k.persistent(be, cache, {D * Hkv, C}, quantized_random(r, cache, D * Hkv, C));
        Tensor* vc = k.persistent(be, cache, {D * Hkv, C}, quantized_random(r, cache, D * Hkv, C));
        Tensor* qn = q;
        if (norms) {
            qn = rms_norm(g, q, in_f32(g, r, {D}), 1e-6f);
            kx = rms_norm(g, kx, in_f32(g, r, {D}), 1e-6f);
        }
        std::vector<int32_t> pos;
        for (int64_t t = 0; t < T; ++t) pos.push_back(int32_t(30 + 7 * t));
        const RopeParams p{int32_t(n_dims), mode, 10000.f, 1.f};
        Tensor* table = rope_table(g, pos.data(), T, p, nullptr);
        Tensor* qr = rope(g, qn, table, p);
        Tensor* kr = rope(g, kx, table, p);
        Tensor* idx = in_i32(g, rows);
        Tensor* ks = set_rows(g, kc, reshape(g, kr, {D * Hkv, T}), idx);
        Tensor* vs = set_rows(g, vc, v, idx);
        std::vector<Tensor*> out = {qr, ks, vs};
        if (norm_out) out.push_back(qn);
        return out;
    }
};

// Rows written into an intermediate (not a cache: the image rows set into a prompt's
// embeddings, model.cpp's with_given_rows), then a norm of the result: the norm must see the
// written rows (the CUDA backend's head_rows groups only set_rows into caches).
struct SetThenNormCase {
    std::string name() const { return "set_rows(dst=intermediate[64,6],idx=[4,1])+rms_norm"; }
    std::vector<Tensor*> build(Graph& g, Backend&, Keep&, std::mt19937& r) const {
        Tensor* e = scale(g, in_f32(g, r, {64, 6}), 2.0f);
        Tensor* s = set_rows(g, e, in_f32(g, r, {64, 2}, 3.0f), in_i32(g, {4, 1}));
        return {rms_norm(g, s, in_f32(g, r, {64}), 1e-6f)};
    }
};

// Attention over ring caches. The cache holds random rows (only the ring rule decides which
// are read); rows are dequantized the same way and softmax and dots follow the reference's order.
// sinks: a sink logit per query head (gpt-oss), random but every fourth from head 1 large
// (+40: it dominates the denominator, the outputs shrink toward 0) and every fourth from head
// 3 very negative (-90: e^{sink - M} underflows to 0, the sink changes nothing).
struct AttentionCase {
    int W, R, n_seq, H, Hkv, D;
    float softcap;
    std::vector<int32_t> pos, seq;
    DType type;
    bool sinks = false;
    int Dv = 0;           // V's head size when it differs from K's (D)
    bool v_in_k = false;  // V the first Dv values of each K row (MLA's latent: no V buffer)
    std::string name() const {
        std::string p;
        // (With first keys given, pos holds the last keys, then the first ones.)
        for (size_t i = 0; i < seq.size() && i < 8; ++i) p += (i ? "," : "") + std::to_string(seq[i]) + ":" + std::to_string(pos[i]);
        if (seq.size() > 8) p += ",... (" + std::to_string(seq.size()) + ")";
        if (W == kAttnFirstGiven) p += ",first keys given";
        char buf[160];
        std::snprintf(buf, sizeof buf, "attention(cache=%s,W=%d,R=%d,n_seq=%d,H=%d,Hkv=%d,D=%d%s,seq:pos=", dtype_name(type), W, R,
                      n_seq, H, Hkv, D, softcap > 0 ? ",softcap=30" : "");
        if (Dv) p += ",Dv=" + std::to_string(Dv) + (v_in_k ? " in K" : "");
        if (sinks) return buf + p + ",sinks)";
        return buf + p + ")";
    }
    std::vector<Tensor*> build(Graph& g, Backend& be, Keep& k, std::mt19937& r) const {
        const int64_t rows = int64_t(R) * n_seq, T = int64_t(seq.size()), row = int64_t(D) * Hkv;
        const int64_t vrow = int64_t(Dv ? Dv : D) * Hkv;
        Tensor* kc = k.persistent(be, type, {row, rows}, quantized_random(r, type, row, rows));
        Tensor* vc = v_in_k ? view_2d(g, kc, vrow, rows, kc->nb[1], 0)
                            : k.persistent(be, type, {vrow, rows}, quantized_random(r, type, vrow, rows));
        Tensor* q = in_f32(g, r, {D, H, T});
        AttentionParams p{W, R, Hkv, 1.0f / 8, softcap};
        Tensor* sk = nullptr;
        if (sinks) {
            std::vector<float> sv = randn(r, size_t(H), 2.0f);
            for (int h = 0; h < H; ++h) {
                if (h % 4 == 1) sv[size_t(h)] = 40.0f + sv[size_t(h)];
                if (h % 4 == 3) sv[size_t(h)] = -90.0f + sv[size_t(h)];
            }
            sk = g.input(DType::F32, {int64_t(H)}, sv.data(), "sinks");
        }
        Tensor* pt = W == kAttnFirstGiven ? g.input(DType::I32, {T, 2}, pos.data(), "pos") : in_i32(g, pos);
        return {attention(g, q, kc, vc, pt, in_i32(g, seq), p, sk)};
    }
};

// A decode step's attention and the output projection that reads it as [Dv * H, T], both
// outputs compared: the Vulkan backend's split fold also quantizes the output rows for the
// mul_mat (attention_fold.comp's _q8_* variants), a head's Dv / block blocks a workgroup, for
// 32- and 256-element dot types (Dv of 32 or 64 with Q8_K: not a whole block, the mul_mat's own).
struct AttnMatCase {
    AttentionCase att;
    DType type;
    std::string name() const { return att.name() + "+mul_mat(type=" + dtype_name(type) + ",N=37)"; }
    std::vector<Tensor*> build(Graph& g, Backend& be, Keep& k, std::mt19937& r) const {
        Tensor* a = att.build(g, be, k, r)[0];
        const int64_t K = a->ne[0] * a->ne[1], T = a->ne[2];
        Tensor* w = k.persistent(be, type, {K, 37}, quantized_random(r, type, K, 37));
        return {a, mul_mat(g, w, reshape(g, a, {K, T}))};
    }
};

// Recurrent scans over the runs of a ubatch (SEMANTICS.md section 2); the state written back
// is compared too. canon_dot sums and det_exp on every backend.
struct ScanRuns {
    int64_t T;
    std::vector<int32_t> runs, order;
};
constexpr int64_t kScanSlots = 4;

struct Conv1dScanCase {
    size_t index;
    ScanRuns sr;
    std::string name() const { return "conv1d_scan(C=40,K=4,slots=4,T=" + std::to_string(sr.T) + ",runs=" + std::to_string(sr.runs.size() / 4) + ")#" + std::to_string(index); }
    std::vector<Tensor*> build(Graph& g, Backend& be, Keep& k, std::mt19937& r) const {
        const int64_t C = 40, K = 4;
        Tensor* st = k.persistent(be, DType::F32, {(K - 1) * C, kScanSlots}, as_bytes(randn(r, size_t((K - 1) * C * kScanSlots))));
        Tensor* w = k.persistent(be, DType::F32, {K, C}, as_bytes(randn(r, size_t(K * C), 0.5f)));
        Tensor* x = in_f32(g, r, {C, sr.T});
        Tensor* runs = g.input(DType::I32, {4, int64_t(sr.runs.size() / 4)}, sr.runs.data(), "runs");
        return {conv1d_scan(g, x, w, st, runs, in_i32(g, sr.order)), st};
    }
};

struct DeltaScanCase {
    size_t index;
    ScanRuns sr;
    int map;
    std::string name() const {
        return "delta_scan(Hk=2,Dk=16,Hv=4,Dv=24,heads=" + std::string(map == HEADS_TILED ? "tiled" : "grouped") +
               ",T=" + std::to_string(sr.T) + ",runs=" + std::to_string(sr.runs.size() / 4) + ")#" + std::to_string(index);
    }
    std::vector<Tensor*> build(Graph& g, Backend& be, Keep& k, std::mt19937& r) const {
        const DeltaScanParams p{2, 16, 4, 24, map, 0.25f, 1e-6f};  // Dk != Dv, Hv = 2 Hk
        const int64_t row = int64_t(p.n_v_heads) * p.d_v * p.d_k;
        Tensor* st = k.persistent(be, DType::F32, {row, kScanSlots}, as_bytes(randn(r, size_t(row * kScanSlots), 0.3f)));
        Tensor* qkv = in_f32(g, r, {2 * 2 * 16 + 4 * 24, sr.T});
        // log-decay from mild to strong (-30: e^g underflows any 64-token product)
        std::vector<float> gv = randn(r, size_t(4 * sr.T));
        for (size_t i = 0; i < gv.size(); ++i) gv[i] = i % 2 ? -30.0f * std::fabs(gv[i]) : -0.1f * std::fabs(gv[i]);
        std::vector<float> bv = randn(r, size_t(4 * sr.T));
        for (float& b : bv) b = 1.0f / (1.0f + std::exp(-b));
        Tensor* gt = g.input(DType::F32, {4, sr.T}, gv.data(), "g");
        Tensor* bt = g.input(DType::F32, {4, sr.T}, bv.data(), "beta");
        Tensor* runs = g.input(DType::I32, {4, int64_t(sr.runs.size() / 4)}, sr.runs.data(), "runs");
        return {delta_scan(g, qkv, gt, bt, st, runs, in_i32(g, sr.order), p), st};
    }
};

// Mamba-2's scan: 4 heads in 2 groups of B and C, channels of 8, a state of 40 per channel
// (more than one round of 32 partial sums, the last partial); steps from tiny to large, so
// e^(dt A) runs from about 1 down to underflow.
struct SsmScanCase {
    size_t index;
    ScanRuns sr;
    std::string name() const {
        return "ssm_scan(H=4,P=8,N=40,G=2,T=" + std::to_string(sr.T) + ",runs=" + std::to_string(sr.runs.size() / 4) + ")#" +
               std::to_string(index);
    }
    std::vector<Tensor*> build(Graph& g, Backend& be, Keep& k, std::mt19937& r) const {
        const SsmScanParams p{4, 8, 40, 2};
        const int64_t row = 4 * 8 * 40;
        Tensor* st = k.persistent(be, DType::F32, {row, kScanSlots}, as_bytes(randn(r, size_t(row * kScanSlots), 0.3f)));
        Tensor* xbc = in_f32(g, r, {4 * 8 + 2 * 2 * 40, sr.T});
        std::vector<float> dv = randn(r, size_t(4 * sr.T));
        for (size_t i = 0; i < dv.size(); ++i) dv[i] = i % 3 ? 0.05f * std::fabs(dv[i]) + 1e-3f : 20.0f * std::fabs(dv[i]);
        std::vector<float> av = {-0.5f, -1.0f, -4.0f, -8.0f};
        Tensor* A = k.persistent(be, DType::F32, {4}, as_bytes(av));
        Tensor* runs = g.input(DType::I32, {4, int64_t(sr.runs.size() / 4)}, sr.runs.data(), "runs");
        return {ssm_scan(g, xbc, g.input(DType::F32, {4, sr.T}, dv.data(), "dt"), A, st, runs, in_i32(g, sr.order), p), st};
    }
};

// topk is an exact selection (a total order) and its renormalisation one double sum and one
// rounding per value. The ids go from topk straight into mul_mat_id, so any difference in
// them shows there.
struct TopkCase {
    std::string name() const { return "topk_weights(x=[12,9],k=3,ties)"; }
    std::vector<Tensor*> build(Graph& g, Backend&, Keep&, std::mt19937& r) const {
        std::vector<float> x = randn(r, size_t(12 * 9));
        for (int t = 0; t < 9; ++t) x[size_t(t * 12 + 7)] = x[size_t(t * 12 + 2)];  // equal values: lower index first
        x[5] = -x[5];
        Tensor* xt = g.input(DType::F32, {12, 9}, x.data(), "logits");
        Tensor* p = softmax(g, xt, 1.0f);
        return {topk_weights(g, p, 3, true), topk_weights(g, xt, 3, false)};
    }
};

// DeepSeek's group-limited routing: 16 experts in 4 groups; V3's rule (groups scored by the
// sum of their two best biased scores, the two best groups kept, weights the unbiased scores
// at the chosen experts, renormalised) and V2's (a group's best entry, three groups kept), with
// equal scores across groups and within one (lower index first).
struct GroupTopkCase {
    std::string name() const { return "topk(x=[16,7],groups=4,used=2|3,top=2|1,k=3,from)"; }
    std::vector<Tensor*> build(Graph& g, Backend&, Keep&, std::mt19937& r) const {
        std::vector<float> x = randn(r, size_t(16 * 7));
        x[3] = x[9];     // token 0: equal entries in groups 0 and 2
        x[16 + 4] = x[16 + 5];  // token 1: equal entries within group 1
        std::vector<float> b = randn(r, 16, 0.1f);
        Tensor* logits = g.input(DType::F32, {16, 7}, x.data(), "logits");
        Tensor* scores = sigmoid(g, logits);
        Tensor* biased = add(g, scores, g.input(DType::F32, {16}, b.data(), "bias"));
        const TopkGroups v3{4, 2, 2}, v2{4, 3, 1};
        return {topk_weights(g, biased, 3, true, v3, scores), topk_ids(g, biased, 3, v3), topk_ids(g, softmax(g, logits, 1.0f), 3, v2),
                topk_weights(g, scores, 3, false, v2)};
    }
};

// As mul_mat. 100 tokens x 2 experts: the GPU kernels group the pairs by expert into tiles
// (more than one tile for the busier experts).
struct MulMatIdCase {
    DType type;
    int64_t X, T;
    std::string name() const {
        return std::string("mul_mat_id(type=") + dtype_name(type) + ",K=" + std::to_string(K()) + ",N=37,E=5,k=2,X=" +
               std::to_string(X) + ",T=" + std::to_string(T) + ")";
    }
    int64_t K() const { return traits(type).block == 256 ? 256 : 96; }
    std::vector<Tensor*> build(Graph& g, Backend& be, Keep& k, std::mt19937& r) const {
        const int64_t N = 37, E = 5;
        Tensor* w = k.persistent(be, type, {K(), N, E}, quantized_random(r, type, K(), N * E));
        Tensor* logits = in_f32(g, r, {E, T});
        Tensor* ids = topk_ids(g, logits, 2);
        return {mul_mat_id(g, w, in_f32(g, r, {K(), X, T}), ids)};
    }
};

// Gemma 4's per-expert scales: an f32 [1, 1, E] "matrix" per expert gathered by the ids
// computed on the device, times each token's weight (one product each).
struct ExpertScaleCase {
    std::string name() const { return "mul_mat_id(type=f32,K=1,N=1,E=7,k=3,T=5) (per-expert scale)"; }
    std::vector<Tensor*> build(Graph& g, Backend& be, Keep& k, std::mt19937& r) const {
        const int64_t E = 7, T = 5, kk = 3;
        std::vector<float> sv = randn(r, size_t(E));
        Tensor* w = k.persistent(be, DType::F32, {1, 1, E}, as_bytes(sv));
        Tensor* ids = topk_ids(g, in_f32(g, r, {E, T}), int(kk));
        return {mul_mat_id(g, w, in_f32(g, r, {1, kk, T}), ids)};
    }
};

// clamp on the values where a kernel could differ from the reference: both infinities (with
// finite bounds: the table's outputs must be finite), zeros of both signs, the bounds
// themselves, values next to them, the largest floats; the bounds of gpt-oss's clamped
// SwiGLU (gate: -inf..7, up: -7..7) and zero bounds of either sign. (NaN inputs and the
// infinities through an infinite bound: tests/ops/test_ops.cpp.)
struct ClampCase {
    std::string name() const { return "clamp(special values,[64,4])"; }
    std::vector<Tensor*> build(Graph& g, Backend&, Keep&, std::mt19937& r) const {
        std::vector<float> v = randn(r, 256, 8.0f);
        const float special[] = {INFINITY, -INFINITY, 0.0f, -0.0f, 7.0f, -7.0f, std::nextafter(7.0f, 8.0f), std::nextafter(7.0f, 6.0f),
                                 std::nextafter(-7.0f, -8.0f), std::nextafter(-7.0f, 0.0f), FLT_MAX, -FLT_MAX, FLT_MIN, -FLT_MIN,
                                 1e-40f, -1e-40f};
        for (size_t i = 0; i < v.size(); i += 3) v[i] = special[(i / 3) % std::size(special)];
        Tensor* x = g.input(DType::F32, {64, 4}, v.data(), "x");
        std::vector<float> fin(v);
        for (float& f : fin)
            if (std::isinf(f)) f = f > 0 ? FLT_MAX : -FLT_MAX;
        Tensor* xf = g.input(DType::F32, {64, 4}, fin.data(), "x finite");
        return {clamp(g, x, -7.0f, 7.0f), clamp(g, xf, -INFINITY, 7.0f), clamp(g, x, 0.0f, 1.0f), clamp(g, x, -0.0f, 0.0f),
                clamp(g, x, -2.0f, -2.0f), clamp(g, xf, -1.0f, INFINITY)};
    }
};

// concat and cont (MLA's query and key: a latent part and a rope part side by side; a strided
// view made contiguous): packed 3-D inputs, strided views whose rows do not follow each other
// (the latent and rope columns of one projection), a copy of a strided view and of a packed
// tensor.
struct ConcatCase {
    std::string name() const { return "concat/cont(a=[40,3,2],b=[8,3,2]; views [24,5]+[8,5] of [40,5]; cont of a view)"; }
    std::vector<Tensor*> build(Graph& g, Backend&, Keep&, std::mt19937& r) const {
        Tensor* a = in_f32(g, r, {40, 3, 2});
        Tensor* b = in_f32(g, r, {8, 3, 2});
        Tensor* kv = in_f32(g, r, {40, 5});
        Tensor* lat = view_2d(g, kv, 24, 5, 40 * 4, 0);
        Tensor* pe = view_2d(g, kv, 8, 5, 40 * 4, 32 * 4);
        return {concat(g, a, b), concat(g, pe, lat), cont(g, lat), cont(g, a), concat(g, cont(g, pe), lat)};
    }
};

template <class C> void add_case(std::vector<OpCase>& out, const char* kind, const C& c, bool view = false) {
    out.push_back({c.name(), kind, view, [c](Graph& g, Backend& be, Keep& k, std::mt19937& r) { return c.build(g, be, k, r); }});
}

}  // namespace

std::vector<OpCase> op_cases() {
    // The tables below, in this order: a case's seed is its index, so appending keeps every
    // existing case's random inputs.
    const std::vector<std::array<int64_t, 3>> shapes = {{64, 3, 1}, {37, 5, 2}, {640, 7, 1}};
    std::vector<ElementCase> elem;
    for (auto s : shapes)
        for (auto k : {ElementCase::Add, ElementCase::Mul, ElementCase::Unary, ElementCase::RmsNorm, ElementCase::Softmax})
            elem.push_back({k, s[0], s[1], s[2]});
    std::vector<RopeCase> rope_cases;
    for (int mode : {ROPE_NORMAL, ROPE_NEOX})
        for (bool ff : {false, true}) rope_cases.push_back({mode, ff});

    std::vector<OpCase> c;
    for (const auto& e : elem) add_case(c, "elementwise", e);
    for (const auto& rc : rope_cases) add_case(c, "rope", rc);
    for (DType t : kWeightTypes) {
        const int64_t K = traits(t).block == 256 ? 512 : 96;
        for (int64_t M : {1, 5, 70}) add_case(c, "mul_mat", MulMatCase{t, K, M});
        // 33 blocks: more than one round of the shared-memory staging (16 blocks), the last partial
        if (traits(t).block == 32) add_case(c, "mul_mat", MulMatCase{t, 1056, 70});
        // Float weights: K past whole 32-lane chunks (a 16-lane chunk, then a scalar tail), tokens
        // and rows that do not fill the CPU's register blocks.
        if (traits(t).block == 1)
            for (int64_t M : {5, 70}) add_case(c, "mul_mat", MulMatCase{t, 32 * 3 + 16 + 5, M});
        add_case(c, "get_rows", GetRowsCase{t});
    }
    for (DType t : kCacheTypes)
        for (DType it : {DType::I32, DType::I64}) add_case(c, "set_rows", SetRowsCase{t, it});

    // Full and windowed layers, GQA, several sequences, wrapped rings, softcap.
    struct A { int W, R, n_seq, H, Hkv, D; float softcap; std::vector<int32_t> pos, seq; };
    const std::vector<A> att = {
        {0, 64, 1, 2, 1, 32, 0.f, {0, 1, 2, 3, 17, 63}, {0, 0, 0, 0, 0, 0}},
        {8, 12, 1, 4, 2, 32, 0.f, {40, 41, 42, 43}, {0, 0, 0, 0}},             // ring wrapped several times
        {8, 12, 3, 2, 1, 64, 0.f, {5, 30, 31, 2, 100, 11}, {0, 1, 1, 2, 2, 0}},  // several sequences in one ubatch
        {16, 16, 2, 4, 4, 32, 30.f, {15, 16, 200, 3}, {1, 1, 0, 0}},            // R = W (n_ctx-capped), softcap
        {512, 24, 1, 2, 1, 32, 0.f, {0, 5, 23}, {0, 0, 0}},                     // W > R = n_ctx: a short context
        {0, 40, 1, 4, 1, 512, 0.f, {0, 1, 2, 3, 30, 39}, {0, 0, 0, 0, 0, 0}},    // Gemma 4 global heads of 512
        {0, 40, 2, 4, 2, 512, 0.f, {33}, {1}},                                  // ... a decode step
        {0, 160, 2, 4, 1, 256, 0.f, {150, 70, 159}, {0, 1, 0}},                 // Gemma 3 heads, long key ranges
        {24, 40, 1, 2, 1, 64, 0.f, {}, {}},                                     // a 40-query prefill chunk, windowed, wrapped
    };
    auto add_attention = [&](A a, bool sinks = false) {
        for (DType t : kCacheTypes)
            add_case(c, "attention", AttentionCase{a.W, a.R, a.n_seq, a.H, a.Hkv, a.D, a.softcap, a.pos, a.seq, t, sinks});
    };
    // Queries first..first+n-1 of sequence s.
    auto run = [](A a, int32_t n, int32_t first, int32_t s) {
        for (int32_t j = 0; j < n; ++j) {
            a.pos.push_back(first + j);
            a.seq.push_back(s);
        }
        return a;
    };
    for (A a : att) add_attention(a.pos.empty() ? run(a, 40, 60, 0) : a);  // positions 60..99 of sequence 0

    // Runs of different lengths, tokens of different sequences interleaved in the ubatch, a
    // reset run beside runs that continue their slot's stored state, an unused slot (must
    // stay as it was).
    const std::vector<ScanRuns> scan_runs = {
        {1, {2, 0, 1, 0}, {0}},                                                    // one decode token
        {9, {1, 0, 4, 1, 3, 4, 3, 0, 0, 7, 2, 0}, {0, 3, 5, 8, 1, 4, 6, 2, 7}},    // 3 sequences interleaved, slot 1 restarts
        {6, {0, 0, 6, 1}, {0, 1, 2, 3, 4, 5}},                                     // one sequence from position 0
    };
    for (size_t ri = 0; ri < scan_runs.size(); ++ri) {
        add_case(c, "conv1d_scan", Conv1dScanCase{ri, scan_runs[ri]});
        for (int map : {HEADS_GROUPED, HEADS_TILED}) add_case(c, "delta_scan", DeltaScanCase{ri, scan_runs[ri], map});
    }
    add_case(c, "topk", TopkCase{});
    for (DType t : {DType::F16, DType::Q5_0, DType::Q8_0, DType::Q4_K, DType::Q6_K})
        for (int64_t X : {1, 2})
            for (int64_t T : {6, 100}) add_case(c, "mul_mat_id", MulMatIdCase{t, X, T});
    add_case(c, "mul_mat_id", ExpertScaleCase{});

    // Views for the ops that take them: a kernel that ignored the offset or assumed packed
    // rows would read the padding. A backend whose supports() refuses a view skips that
    // case with a warning (test::runs_all).
    for (auto s : {std::array<int64_t, 3>{64, 3, 1}, std::array<int64_t, 3>{37, 5, 2}})
        for (auto k : {ElementCase::Add, ElementCase::Mul, ElementCase::Unary, ElementCase::RmsNorm, ElementCase::Softmax})
            add_case(c, "elementwise", ElementCase{k, s[0], s[1], s[2], 10}, true);
    for (DType t : {DType::F32, DType::F16, DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q6_K})
        for (int64_t M : {1, 5}) add_case(c, "mul_mat", MulMatCase{t, traits(t).block == 256 ? 256 : 96, M, 64}, true);

    // Prompts in attention's query-tile form (64 queries of one sequence per workgroup, the
    // default on lavapipe): 100 queries from position 0 (a full tile and a partial one, two key
    // blocks), Gemma 3 heads; 64 queries of sequence 1 then 20 of sequence 0 (one sequence per
    // tile), windowed over a wrapped ring; 8 queries of two sequences in one tile (the
    // per-query form instead).
    add_attention(run({0, 128, 1, 4, 1, 256, 0.f, {}, {}}, 100, 0, 0));
    add_attention(run(run({16, 24, 2, 2, 1, 32, 0.f, {}, {}}, 64, 70, 1), 20, 5, 0));
    add_attention(run(run({8, 12, 2, 2, 1, 32, 0.f, {}, {}}, 4, 30, 0), 4, 9, 1));

    // The lookup-table and ternary weight types (issue 19), appended so the cases above keep
    // their seeds: the same shapes as the types above, and MoE experts in IQ4_XS and MXFP4
    // (gpt-oss ships its experts in MXFP4).
    for (DType t : {DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4, DType::TQ1_0, DType::TQ2_0}) {
        const int64_t K = traits(t).block == 256 ? 512 : 96;
        for (int64_t M : {1, 5, 70}) add_case(c, "mul_mat", MulMatCase{t, K, M});
        if (traits(t).block == 32) add_case(c, "mul_mat", MulMatCase{t, 1056, 70});
        add_case(c, "get_rows", GetRowsCase{t});
    }
    for (DType t : {DType::IQ4_XS, DType::MXFP4})
        for (int64_t T : {6, 100}) add_case(c, "mul_mat_id", MulMatIdCase{t, 2, T});
    // The grid i-quants (random blocks: lockstep has no quantizer for them).
    for (DType t : {DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S, DType::IQ3_XXS, DType::IQ3_S, DType::IQ1_S, DType::IQ1_M}) {
        for (int64_t M : {1, 5, 70}) add_case(c, "mul_mat", MulMatCase{t, 512, M});
        add_case(c, "get_rows", GetRowsCase{t});
    }
    add_case(c, "mul_mat_id", MulMatIdCase{DType::IQ2_XXS, 2, 6});
    // YaRN rope (gpt-oss, issue 20), both pairings.
    for (int mode : {ROPE_NORMAL, ROPE_NEOX}) add_case(c, "rope", RopeCase{mode, false, true});

    // gpt-oss: attention sinks in every form of the kernels (AttentionCase: dominating and
    // vanishing sinks among random ones), and clamp (its clamped SwiGLU). Several sequences
    // over wrapped windowed rings with GQA (the CPU's tiles of tokens); long key ranges of a
    // few queries (split over key blocks: the CPU's and the GPUs' fold passes); softcap; a
    // 40-query windowed prefill chunk of 8 heads (Vulkan's query-tile form); a decode step.
    add_attention({8, 12, 3, 4, 2, 64, 0.f, {5, 30, 31, 2, 100, 11}, {0, 1, 1, 2, 2, 0}}, true);
    add_attention({0, 160, 2, 4, 1, 256, 0.f, {150, 70, 159}, {0, 1, 0}}, true);
    add_attention({16, 16, 2, 4, 4, 32, 30.f, {15, 16, 200, 3}, {1, 1, 0, 0}}, true);
    add_attention(run({24, 40, 1, 8, 2, 64, 0.f, {}, {}}, 40, 60, 0), true);
    add_attention({0, 200, 1, 8, 1, 64, 0.f, {190}, {0}}, true);
    add_case(c, "clamp", ClampCase{});
    // Hidden-state widths of real models for the norms (the CUDA kernel that stages a row in
    // shared memory takes 512 to 8192; 9000 is past it), one as a strided view.
    for (auto s : {std::array<int64_t, 3>{4096, 3, 1}, std::array<int64_t, 3>{8192, 1, 1}, std::array<int64_t, 3>{9000, 2, 1}})
        add_case(c, "elementwise", ElementCase{ElementCase::RmsNorm, s[0], s[1], s[2]});
    add_case(c, "elementwise", ElementCase{ElementCase::RmsNorm, 1536, 3, 1, 10}, true);
    // Decode over a long context (issue 36): 19 key blocks for one query, several sequences
    // and GQA, the form the CUDA tiles split into a partial per key block and fold in rounds
    // (more than sixteen partials: the fold's batched reads), with sinks.
    add_attention({0, 1216, 2, 8, 2, 64, 0.f, {1150, 1215, 700}, {0, 1, 1}}, true);
    // Non-causal attention (BERT-style encoders): the position input holds each query's last
    // visible key, its sequence's last position in the ubatch (attn_last_keys), so every query
    // sees its whole sequence. A 100-token input from position 0 (the query-tile form, two key
    // blocks, keys after each query), and two inputs interleaved in one ubatch (the per-query
    // form), each alone in its slot.
    auto non_causal = [](A a) {
        std::vector<int32_t> last(a.pos.size());
        attn_last_keys(a.pos.data(), a.seq.data(), int64_t(a.pos.size()), false, last.data());
        a.pos = last;
        return a;
    };
    add_attention(non_causal(run({0, 128, 1, 4, 4, 64, 0.f, {}, {}}, 100, 0, 0)));
    add_attention(non_causal({0, 40, 2, 4, 4, 32, 0.f, {0, 0, 1, 1, 2, 2, 3, 4, 5, 6}, {0, 1, 0, 1, 0, 1, 0, 0, 0, 0}}));
    // Each query's first key given (kAttnFirstGiven): EmbeddingGemma's symmetric window, keys
    // within h of the query on both sides, clipped to the input. 100 tokens with h = 40 (the
    // query-tile form; ranges starting and ending inside key blocks and across them), and two
    // inputs interleaved with h = 2 (the per-query form).
    auto symmetric = [](A a, int32_t h) {
        std::vector<int32_t> keys(2 * a.pos.size());
        attn_symmetric_keys(a.pos.data(), a.seq.data(), int64_t(a.pos.size()), h, keys.data());
        a.pos = keys;
        a.W = kAttnFirstGiven;
        return a;
    };
    add_attention(symmetric(run({0, 128, 1, 4, 4, 64, 0.f, {}, {}}, 100, 0, 0), 40));
    add_attention(symmetric({0, 40, 2, 4, 2, 32, 0.f, {0, 0, 1, 1, 2, 2, 3, 4, 5, 6}, {0, 1, 0, 1, 0, 1, 0, 0, 0, 0}}, 2));
    // Multi-head latent attention (deepseek2): one KV head of 576 (the latent and its rope
    // part), V the latent's 512 values inside each K row, 16 query heads. A prompt's chunk, a
    // decode step over many key blocks (the split form), two sequences in one ubatch.
    auto add_mla = [&](A a) {
        for (DType t : kCacheTypes) {
            AttentionCase mla{a.W, a.R, a.n_seq, a.H, a.Hkv, a.D, a.softcap, a.pos, a.seq, t};
            mla.Dv = 512;
            mla.v_in_k = true;
            add_case(c, "attention", mla);
        }
    };
    add_mla(run({0, 96, 1, 16, 1, 576, 0.f, {}, {}}, 24, 40, 0));
    add_mla({0, 400, 2, 16, 1, 576, 0.f, {390, 200}, {0, 1}});
    // LayerNorm (vision encoders): rows of SigLIP's widths (1152; 48 in the tiny oracle), odd
    // and small widths, and a strided view.
    for (auto s : {std::array<int64_t, 3>{1152, 5, 1}, std::array<int64_t, 3>{48, 7, 1}, std::array<int64_t, 3>{37, 5, 1},
                   std::array<int64_t, 3>{3, 2, 1}})
        add_case(c, "elementwise", ElementCase{ElementCase::LayerNorm, s[0], s[1], s[2]});
    add_case(c, "elementwise", ElementCase{ElementCase::LayerNorm, 64, 3, 1, 10}, true);
    add_case(c, "concat", ConcatCase{}, true);
    add_case(c, "topk", GroupTopkCase{});
    // Mamba-2's selective scan (nemotron_h): the scan runs above.
    for (size_t ri = 0; ri < scan_runs.size(); ++ri) add_case(c, "ssm_scan", SsmScanCase{ri, scan_runs[ri]});
    // A vision encoder's attention: many queries without query-head groups that all see the
    // same keys (the CPU's transposed-key form), heads of 40 (32 + a tail of 8 lanes), a
    // soft cap, a partial last key block.
    add_attention(non_causal(run({0, 160, 1, 4, 4, 40, 20.f, {}, {}}, 150, 0, 0)));
    // Decode over long rows (issue 36: the CUDA split kernel deals a row's groups of blocks to
    // several warps): 13 blocks of 256 (Q4_K's groups of 4 blocks end part full; Q6_K's groups
    // of 2), 75 blocks of 32 (three groups of 32); one token, and five (two blocks of
    // activation rows, the second holding one).
    for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_0, DType::Q4_0, DType::IQ4_XS})
        for (int64_t M : {1, 5}) add_case(c, "mul_mat", MulMatCase{t, traits(t).block == 256 ? 256 * 13 : 32 * 75, M});
    for (DType t : {DType::Q4_K, DType::Q8_0, DType::Q4_1})
        for (int64_t M : {1, 40}) add_case(c, "norm_mul_mat", NormMatCase{t, 1024, M});
    // Three decode rows at once (a few sequences decoding together: Vulkan's subgroup kernels
    // take up to 4 activation rows, a sum chain per row) over the 256-element types: 2 and 13
    // super-blocks, a pass of a wide subgroup ending part full.
    for (DType t : {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_XS})
        for (int64_t K : {512, 256 * 13}) add_case(c, "mul_mat", MulMatCase{t, K, 3});
    // MoE decode: 1 and 3 tokens of 2 experts each (Vulkan's subgroup kernels for up to 4
    // tokens, a (token, expert) pair per workgroup row), shared and per-expert inputs.
    for (DType t : {DType::Q4_0, DType::Q5_0, DType::Q8_0, DType::MXFP4, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q6_K,
                    DType::IQ4_XS})
        for (int64_t X : {1, 2})
            for (int64_t T : {1, 3}) add_case(c, "mul_mat_id", MulMatIdCase{t, X, T});
    // The per-head rows of an attention layer (HeadRowsCase): Gemma 3 270M's decode geometry,
    // several tokens with a repeated cache row, each cache type, with and without the norms.
    add_case(c, "head_rows", HeadRowsCase{true, ROPE_NEOX, DType::F16, {7}, 256, 4, 1, 256});
    add_case(c, "head_rows", HeadRowsCase{true, ROPE_NEOX, DType::Q8_0, {4, 9, 4}, 64, 4, 2, 64, true});
    add_case(c, "head_rows", HeadRowsCase{false, ROPE_NORMAL, DType::F32, {0, 1, 2}, 64, 4, 2, 48});
    add_case(c, "head_rows", HeadRowsCase{true, ROPE_NORMAL, DType::BF16, {3, 8}, 64, 2, 2, 64});
    add_case(c, "head_rows", HeadRowsCase{false, ROPE_NEOX, DType::Q4_0, {9}, 128, 8, 2, 128});
    add_case(c, "head_rows", SetThenNormCase{});
    for (bool silu : {false, true})
        for (auto [t, K] : {std::pair{DType::Q4_K, int64_t(512)}, std::pair{DType::Q8_0, int64_t(96)}})
            for (int64_t M : {1, 40}) add_case(c, "glu_mul_mat", GluMatCase{silu, t, K, M});
    for (bool first_norm : {false, true})
        for (DType t : {DType::Q4_K, DType::Q8_0})
            for (int64_t M : {1, 40}) add_case(c, "norm_mul_mat", AddNormMatCase{first_norm, t, 1024, M});
    // Decode over several key blocks (the split form): Gemma 3 270M's geometry at depth 150;
    // three sequences' tokens with query-head groups; sinks.
    for (DType t : {DType::Q4_K, DType::Q8_0, DType::Q4_1}) {
        add_case(c, "attention_mul_mat", AttnMatCase{{0, 160, 1, 4, 1, 256, 0.f, {150}, {0}, DType::F16}, t});
        add_case(c, "attention_mul_mat", AttnMatCase{{0, 200, 2, 8, 2, 64, 0.f, {190, 120, 70}, {0, 1, 1}, DType::Q8_0}, t});
        add_case(c, "attention_mul_mat", AttnMatCase{{16, 40, 2, 8, 2, 32, 30.f, {70, 100}, {1, 0}, DType::F32, true}, t});
    }
    // The widest value heads (512: two Q8_K blocks, sixteen Q8_0 blocks a head).
    for (DType t : {DType::Q4_K, DType::Q8_0})
        add_case(c, "attention_mul_mat", AttnMatCase{{0, 160, 1, 2, 1, 512, 0.f, {130}, {0}, DType::F16}, t});
    return c;
}

}  // namespace ls::test
