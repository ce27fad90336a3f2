#include "core/models/moe.h"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/ir/ops.h"
#include "core/rules/topk_rule.h"

namespace ls {

MoeRoute softmax_topk(Graph& g, Tensor* logits, int k, bool renorm) {
    Tensor* probs = ops::softmax(g, logits, 1.0f);
    return {ops::topk_ids(g, probs, k), ops::topk_weights(g, probs, k, renorm)};
}

MoeRouter read_moe_router(const ArchKeys& keys, int64_t n_expert, bool norm_default) {
    MoeRouter r;
    const std::string arch = keys.arch();
    auto bad = [&](ArchKey k, const std::string& what) { throw std::runtime_error(arch + ": " + keys.name(k) + " " + what + " (broken metadata)"); };
    const int64_t k = keys.get_int(ArchKey::ExpertUsedCount, 0);
    if (k < 1 || k > n_expert || k > kTopkMax) bad(ArchKey::ExpertUsedCount, "must be in [1, min(expert_count, 64)], got " + std::to_string(k));
    r.k = int(k);
    const int64_t gating = keys.get_int(ArchKey::ExpertGatingFunc, int64_t(MoeGating::Softmax));
    if (gating != int64_t(MoeGating::Softmax) && gating != int64_t(MoeGating::Sigmoid))
        bad(ArchKey::ExpertGatingFunc, "is " + std::to_string(gating) + "; supported: 1 (softmax), 2 (sigmoid)");
    r.gating = MoeGating(gating);
    r.norm = keys.get_bool(ArchKey::ExpertWeightsNorm, norm_default);
    const double scale = keys.get_float(ArchKey::ExpertWeightsScale, 1.0);
    if (!std::isfinite(scale) || scale < 0) bad(ArchKey::ExpertWeightsScale, "must be a finite number >= 0");
    r.scale = scale == 0.0 ? 1.0f : float(scale);
    const int64_t n_group = keys.get_int(ArchKey::ExpertGroupCount, 0);
    if (n_group > 1) {
        const int64_t used = keys.get_int(ArchKey::ExpertGroupUsedCount, 0);
        if (n_group > kTopkMax || n_expert % n_group) bad(ArchKey::ExpertGroupCount, "must divide expert_count " + std::to_string(n_expert));
        if (used < 1 || used > n_group || k > used * (n_expert / n_group))
            bad(ArchKey::ExpertGroupUsedCount, "is " + std::to_string(used) + " for " + std::to_string(n_group) + " groups of " +
                                                   std::to_string(n_expert / n_group) + " and " + std::to_string(k) + " experts used");
        // DeepSeek V3 (sigmoid) scores a group by its two best experts; V2 (softmax) by its best.
        r.groups = {int32_t(n_group), int32_t(used), r.gating == MoeGating::Sigmoid && n_expert / n_group >= 2 ? 2 : 1};
    }
    return r;
}

MoeRoute route_experts(Graph& g, const MoeRouter& r, Tensor* gate_inp, Tensor* probs_bias, Tensor* h) {
    using namespace ops;
    Tensor* logits = mul_mat(g, gate_inp, h);
    Tensor* scores = r.gating == MoeGating::Sigmoid ? sigmoid(g, logits) : softmax(g, logits, 1.0f);
    Tensor* sel = probs_bias ? add(g, scores, probs_bias) : scores;
    Tensor* ids = topk_ids(g, sel, r.k, r.groups);
    Tensor* wts = topk_weights(g, sel, r.k, r.norm, r.groups, sel == scores ? nullptr : scores);
    if (r.scale != 1.0f) wts = scale(g, wts, r.scale);
    return {ids, wts};
}

Tensor* moe_experts(Graph& g, const MoeExperts& w, Tensor* x, Tensor* ids, Tensor* wts) {
    using namespace ops;
    const int64_t E = x->ne[0], T = x->ne[1], k = ids->ne[0], F = w.n_ff;
    Tensor* hx = reshape(g, x, {E, 1, T});
    // Each selected expert's bias row, [n, k, T] beside its matmul's output: a matmul of the
    // biases seen as experts of one input over a row of ones (b * 1, exact), so the expert ids
    // stay where mul_mat_id reads them, on the device (get_rows takes host-side indices).
    Tensor* ones = nullptr;
    auto biased = [&](Tensor* y, Tensor* b) {
        if (!b) return y;
        if (!ones) {
            const std::vector<float> one(size_t(T), 1.0f);
            ones = g.input(DType::F32, {1, 1, T}, one.data(), "ones");
        }
        return add(g, y, mul_mat_id(g, reshape(g, b, {1, b->ne[0], b->ne[1]}), ones, ids));
    };
    Tensor* a;
    if (w.act == MoeAct::SwigluOai) {
        static constexpr float kOne = 1.0f;
        Tensor* gt = clamp(g, biased(mul_mat_id(g, w.gate, hx, ids), w.gate_b), -INFINITY, w.limit);
        Tensor* up = clamp(g, biased(mul_mat_id(g, w.up, hx, ids), w.up_b), -w.limit, w.limit);
        Tensor* glu = mul(g, gt, sigmoid(g, scale(g, gt, w.alpha)));
        a = mul(g, glu, add(g, up, g.input(DType::F32, {1}, &kOne, "one")));
    } else {
        auto act = [&](Tensor* t) { return w.act == MoeAct::Gelu ? gelu(g, t) : silu(g, t); };
        if (w.gate_up) {
            // Fused [gate; up] rows: the activation over both halves (unary ops take whole
            // tensors), then the gate half of that times the up half, as strided views.
            Tensor* gu = mul_mat_id(g, w.gate_up, hx, ids);  // [2F, k, T]
            const size_t rs = size_t(2 * F) * 4;
            a = mul(g, view_2d(g, act(gu), F, k * T, rs, 0), view_2d(g, gu, F, k * T, rs, size_t(F) * 4));
        } else {
            a = mul(g, act(biased(mul_mat_id(g, w.gate, hx, ids), w.gate_b)), biased(mul_mat_id(g, w.up, hx, ids), w.up_b));
        }
    }
    a = reshape(g, a, {F, k, T});
    Tensor* down = biased(mul_mat_id(g, w.down, a, ids), w.down_b);  // [E, k, T]
    Tensor* weighted = mul(g, down, reshape(g, wts, {1, k, T}));     // each expert's share
    Tensor* out = view_2d(g, weighted, E, T, size_t(E * k) * 4, 0);
    for (int64_t j = 1; j < k; ++j) out = add(g, out, view_2d(g, weighted, E, T, size_t(E * k) * 4, size_t(j * E) * 4));
    return out;
}

}  // namespace ls
