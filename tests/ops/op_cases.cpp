#include "tests/ops/op_cases.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/ir/ops.h"
#include "core/quant/quant.h"

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
    std::vector<float> f = randn(rng, size_t(k * rows), scale);
    std::vector<uint8_t> out(row_bytes(t, k) * size_t(rows));
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

std::vector<OpCase> op_cases() {
    using namespace ops;
    std::vector<OpCase> c;
    // Elementwise ops and norms: every backend follows the reference's operation sequence
    // (core/rules/detmath.h), so every case of this table is compared byte for byte.
    for (auto shape : {std::vector<int64_t>{64, 3}, std::vector<int64_t>{37, 5, 2}, std::vector<int64_t>{640, 7}}) {
        auto ne = [shape](std::mt19937&) { return shape; };
        const std::string s = std::to_string(shape[0]) + "x" + std::to_string(shape[1]);
        c.push_back({"add " + s, [=](Graph& g, Backend&, Keep&, std::mt19937& r) {
                         auto n = ne(r);
                         Tensor* a = in_f32(g, r, {n[0], n[1], n.size() > 2 ? n[2] : 1});
                         Tensor* b = in_f32(g, r, {n[0]});  // broadcast a row
                         return std::vector<Tensor*>{add(g, a, b)};
                     }});
        c.push_back({"mul " + s, [=](Graph& g, Backend&, Keep&, std::mt19937& r) {
                         auto n = ne(r);
                         Tensor* a = in_f32(g, r, {n[0], n[1], n.size() > 2 ? n[2] : 1});
                         Tensor* b = in_f32(g, r, {n[0], n[1], n.size() > 2 ? n[2] : 1});
                         return std::vector<Tensor*>{mul(g, a, b)};
                     }});
        c.push_back({"scale/gelu/silu/sigmoid/softplus/softcap " + s, [=](Graph& g, Backend&, Keep&, std::mt19937& r) {
                         auto n = ne(r);
                         Tensor* a = in_f32(g, r, {n[0], n[1]}, 3.0f);
                         Tensor* wide = in_f32(g, r, {n[0], n[1]}, 40.0f);  // reaches exp's clamps
                         return std::vector<Tensor*>{scale(g, a, 0.37f), gelu(g, a), silu(g, a), gelu(g, wide), silu(g, wide),
                                                     sigmoid(g, a), sigmoid(g, wide), softplus(g, a), softplus(g, wide),
                                                     softcap(g, wide, 30.f), softcap(g, a, 0.5f)};
                     }});  // det_exp on batches is the scalar definition, lane by lane
        c.push_back({"rms_norm " + s, [=](Graph& g, Backend&, Keep& k, std::mt19937& r) {
                         auto n = ne(r);
                         Tensor* a = in_f32(g, r, {n[0], n[1]}, 2.0f);
                         Tensor* w = in_f32(g, r, {n[0]});
                         return std::vector<Tensor*>{rms_norm(g, a, w, 1e-6f), rms_norm(g, a, nullptr, 1e-5f)};
                     }});
        c.push_back({"softmax " + s, [=](Graph& g, Backend&, Keep&, std::mt19937& r) {
                         auto n = ne(r);
                         return std::vector<Tensor*>{softmax(g, in_f32(g, r, {n[0], n[1]}, 4.0f), 0.7f)};
                     }});
    }
    for (int mode : {ROPE_NORMAL, ROPE_NEOX})
        for (bool ff : {false, true})
            c.push_back({std::string("rope ") + (mode == ROPE_NEOX ? "neox" : "normal") + (ff ? " freq_factors" : ""),
                         [=](Graph& g, Backend&, Keep&, std::mt19937& r) {
                             const int64_t D = 64, H = 3, T = 5;
                             Tensor* x = in_f32(g, r, {D, H, T});
                             std::vector<int32_t> pos = {0, 7, 100, 4095, 31999};
                             Tensor* f = nullptr;
                             if (ff) {
                                 std::vector<float> fv(24);
                                 for (size_t i = 0; i < fv.size(); ++i) fv[i] = 1.0f + 0.25f * float(i);
                                 f = g.input(DType::F32, {24}, fv.data(), "ff");
                             }
                             RopeParams p{48, mode, 10000.f, 0.5f};  // partial rotation: dims 48..63 pass through
                             return std::vector<Tensor*>{rope(g, x, in_i32(g, pos), f, p)};
                         }});
    for (DType t : kWeightTypes) {
        const int64_t K = traits(t).block == 256 ? 512 : 96;
        for (int64_t M : {1, 5, 70}) {
            // Both sides quantize the activations the same way, sum integer blocks exactly
            // and follow the same float chain (core/ref/mul_mat.cpp); F32 weights sum exact
            // products in double, which rounds the same whatever the order.
            c.push_back({std::string("mul_mat ") + dtype_name(t) + " M=" + std::to_string(M),
                         [=](Graph& g, Backend& be, Keep& k, std::mt19937& r) {
                             const int64_t N = 37;  // not a multiple of any row block
                             Tensor* w = k.persistent(be, t, {K, N}, quantized_random(r, t, K, N));
                             return std::vector<Tensor*>{mul_mat(g, w, in_f32(g, r, {K, M}))};
                         }});
        }
        if (traits(t).block == 32) {
            // 33 blocks: more than one round of the shared-memory staging (16 blocks), the last partial
            c.push_back({std::string("mul_mat ") + dtype_name(t) + " K=1056 M=70",
                         [=](Graph& g, Backend& be, Keep& k, std::mt19937& r) {
                             const int64_t K = 1056, N = 37;
                             Tensor* w = k.persistent(be, t, {K, N}, quantized_random(r, t, K, N));
                             return std::vector<Tensor*>{mul_mat(g, w, in_f32(g, r, {K, 70}))};
                         }});
        }
        c.push_back({std::string("get_rows ") + dtype_name(t), [=](Graph& g, Backend& be, Keep& k, std::mt19937& r) {
                         const int64_t K = traits(t).block == 256 ? 256 : 64;
                         Tensor* src = k.persistent(be, t, {K, 9}, quantized_random(r, t, K, 9));
                         return std::vector<Tensor*>{get_rows(g, src, in_i32(g, {3, 0, 8, 3}))};
                     }});
    }
    for (DType t : kCacheTypes)
        for (DType it : {DType::I32, DType::I64}) {
            // The CPU uses the reference quantizers: caches must be bit-identical.
            c.push_back({std::string("set_rows ") + dtype_name(t) + (it == DType::I64 ? " i64" : " i32"),
                         [=](Graph& g, Backend& be, Keep& k, std::mt19937& r) {
                             const int64_t K = 64, rows = 10;
                             Tensor* dst = k.persistent(be, t, {K, rows}, quantized_random(r, t, K, rows));
                             std::vector<int64_t> idx = {4, 9, 0, 4};  // duplicate: the last writer wins
                             Tensor* ix;
                             if (it == DType::I64) ix = g.input(DType::I64, {4}, idx.data(), "idx");
                             else ix = in_i32(g, std::vector<int32_t>(idx.begin(), idx.end()));
                             return std::vector<Tensor*>{set_rows(g, dst, in_f32(g, r, {K, 4}), ix)};
                         }});
        }
    // Attention over ring caches: full and windowed layers, GQA, several sequences, wrapped
    // rings, every cache type, softcap. The cache holds random rows (only the ring rule
    // decides which are read).
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
    for (size_t ai = 0; ai < att.size(); ++ai)
        for (DType t : kCacheTypes) {
            A a = att[ai];
            if (a.pos.empty())  // positions 60..99 of sequence 0
                for (int32_t i = 0; i < 40; ++i) {
                    a.pos.push_back(60 + i);
                    a.seq.push_back(0);
                }
            // Cache rows are dequantized the same way; softmax and dots follow the reference's order.
            c.push_back({"attention case " + std::to_string(ai) + " " + dtype_name(t),
                         [=](Graph& g, Backend& be, Keep& k, std::mt19937& r) {
                             const int64_t rows = int64_t(a.R) * a.n_seq, T = int64_t(a.pos.size());
                             Tensor* kc = k.persistent(be, t, {int64_t(a.D) * a.Hkv, rows}, quantized_random(r, t, int64_t(a.D) * a.Hkv, rows));
                             Tensor* vc = k.persistent(be, t, {int64_t(a.D) * a.Hkv, rows}, quantized_random(r, t, int64_t(a.D) * a.Hkv, rows));
                             Tensor* q = in_f32(g, r, {a.D, a.H, T});
                             AttentionParams p{a.W, a.R, a.Hkv, 1.0f / 8, a.softcap};
                             return std::vector<Tensor*>{attention(g, q, kc, vc, in_i32(g, a.pos), in_i32(g, a.seq), p)};
                         }});
        }
    // Recurrent scans over the runs of a ubatch (SEMANTICS.md section 2): runs of different
    // lengths, tokens of different sequences interleaved in the ubatch, a reset run beside runs
    // that continue their slot's stored state, an unused slot (must stay as it was), and the
    // state written back compared too. Same arithmetic in the same order on every backend
    // (double sums of exact products, det_exp): bit-identical.
    struct R { int64_t T; std::vector<int32_t> runs, order; };
    const std::vector<R> scan_runs = {
        {1, {2, 0, 1, 0}, {0}},                                                    // one decode token
        {9, {1, 0, 4, 1, 3, 4, 3, 0, 0, 7, 2, 0}, {0, 3, 5, 8, 1, 4, 6, 2, 7}},    // 3 sequences interleaved, slot 1 restarts
        {6, {0, 0, 6, 1}, {0, 1, 2, 3, 4, 5}},                                     // one sequence from position 0
    };
    for (size_t ri = 0; ri < scan_runs.size(); ++ri) {
        const R sr = scan_runs[ri];
        const int64_t n_slots = 4;
        c.push_back({"conv1d_scan runs " + std::to_string(ri), [=](Graph& g, Backend& be, Keep& k, std::mt19937& r) {
                         const int64_t C = 40, K = 4;
                         Tensor* st = k.persistent(be, DType::F32, {(K - 1) * C, n_slots}, as_bytes(randn(r, size_t((K - 1) * C * n_slots))));
                         Tensor* w = k.persistent(be, DType::F32, {K, C}, as_bytes(randn(r, size_t(K * C), 0.5f)));
                         Tensor* x = in_f32(g, r, {C, sr.T});
                         Tensor* runs = g.input(DType::I32, {4, int64_t(sr.runs.size() / 4)}, sr.runs.data(), "runs");
                         return std::vector<Tensor*>{conv1d_scan(g, x, w, st, runs, in_i32(g, sr.order)), st};
                     }});
        for (int map : {HEADS_GROUPED, HEADS_TILED})
            c.push_back({"delta_scan runs " + std::to_string(ri) + (map == HEADS_TILED ? " tiled" : " grouped"),
                         [=](Graph& g, Backend& be, Keep& k, std::mt19937& r) {
                             const DeltaScanParams p{2, 16, 4, 24, map, 0.25f, 1e-6f};  // Dk != Dv, Hv = 2 Hk
                             const int64_t row = int64_t(p.n_v_heads) * p.d_v * p.d_k;
                             Tensor* st = k.persistent(be, DType::F32, {row, n_slots}, as_bytes(randn(r, size_t(row * n_slots), 0.3f)));
                             Tensor* qkv = in_f32(g, r, {2 * 2 * 16 + 4 * 24, sr.T});
                             // log-decay from mild to strong (-30: e^g underflows any 64-token product)
                             std::vector<float> gv = randn(r, size_t(4 * sr.T));
                             for (size_t i = 0; i < gv.size(); ++i) gv[i] = i % 2 ? -30.0f * std::fabs(gv[i]) : -0.1f * std::fabs(gv[i]);
                             std::vector<float> bv = randn(r, size_t(4 * sr.T));
                             for (float& b : bv) b = 1.0f / (1.0f + std::exp(-b));
                             Tensor* gt = g.input(DType::F32, {4, sr.T}, gv.data(), "g");
                             Tensor* bt = g.input(DType::F32, {4, sr.T}, bv.data(), "beta");
                             Tensor* runs = g.input(DType::I32, {4, int64_t(sr.runs.size() / 4)}, sr.runs.data(), "runs");
                             return std::vector<Tensor*>{delta_scan(g, qkv, gt, bt, st, runs, in_i32(g, sr.order), p), st};
                         }});
    }
    // Mixture-of-experts routing and expert matmuls. topk is an exact selection (a total
    // order) and its renormalisation one double sum and one rounding per value: bit-identical.
    // The ids go from topk straight into mul_mat_id, so any difference in them shows there.
    c.push_back({"topk weights E=12 k=3, ties", [=](Graph& g, Backend&, Keep&, std::mt19937& r) {
                     std::vector<float> x = randn(r, size_t(12 * 9));
                     for (int t = 0; t < 9; ++t) x[size_t(t * 12 + 7)] = x[size_t(t * 12 + 2)];  // equal values: lower index first
                     x[5] = -x[5];
                     Tensor* xt = g.input(DType::F32, {12, 9}, x.data(), "logits");
                     Tensor* p = softmax(g, xt, 1.0f);
                     return std::vector<Tensor*>{topk_weights(g, p, 3, true), topk_weights(g, xt, 3, false)};
                 }});
    for (DType t : {DType::F16, DType::Q5_0, DType::Q8_0, DType::Q4_K, DType::Q6_K})
        for (int64_t X : {1, 2})
            for (int64_t T : {6, 100}) {
                // As mul_mat: the same quantized activations, integer blocks and float chain.
                // 100 tokens x 2 experts: the GPU kernels group the pairs by expert into
                // tiles (more than one tile for the busier experts).
                c.push_back({std::string("mul_mat_id ") + dtype_name(t) + " X=" + std::to_string(X) + " T=" + std::to_string(T),
                             [=](Graph& g, Backend& be, Keep& k, std::mt19937& r) {
                                 const int64_t K = traits(t).block == 256 ? 256 : 96, N = 37, E = 5;
                                 Tensor* w = k.persistent(be, t, {K, N, E}, quantized_random(r, t, K, N * E));
                                 Tensor* logits = in_f32(g, r, {E, T});
                                 Tensor* ids = topk_ids(g, logits, 2);
                                 return std::vector<Tensor*>{mul_mat_id(g, w, in_f32(g, r, {K, X, T}), ids)};
                             }});
            }
    // Gemma 4's per-expert scales: an f32 [1, 1, E] "matrix" per expert gathered by the ids
    // computed on the device, times each token's weight (one product each).
    c.push_back({"mul_mat_id f32 K=1 N=1 (per-expert scale)", [=](Graph& g, Backend& be, Keep& k, std::mt19937& r) {
                     const int64_t E = 7, T = 5, kk = 3;
                     std::vector<float> sv = randn(r, size_t(E));
                     std::vector<uint8_t> sb(sv.size() * 4);
                     std::memcpy(sb.data(), sv.data(), sb.size());
                     Tensor* w = k.persistent(be, DType::F32, {1, 1, E}, sb);
                     Tensor* ids = topk_ids(g, in_f32(g, r, {E, T}), int(kk));
                     return std::vector<Tensor*>{mul_mat_id(g, w, in_f32(g, r, {1, kk, T}), ids)};
                 }});
    return c;
}

}  // namespace ls::test
