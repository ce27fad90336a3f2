// mul_mat and mul_mat_id, stage 1: the activation rows quantized to the weight's dot type
// (shaders/mul_mat_act.comp) into the aux buffer's act region; stage 2 reads them there.
#pragma once
#include <algorithm>
#include <string>

#include "backends/vulkan/ops/type_support.h"
#include "backends/vulkan/recorder.h"
#include "core/quant/quant.h"

namespace ls::vk {

// Bytes of an activation row as stage 2 reads it: Q8_0 blocks padded to 36 bytes like Q8_1's,
// so every quant word is 4-byte aligned (shaders/mul_mat_q32.glsl); other types as stored.
inline size_t act_row_bytes(DType at, int64_t K) { return at == DType::Q8_0 ? size_t(K / 32) * 36 : row_bytes(at, K); }

inline void plan_act(const Tensor& n, Plan& plan) {
    const Tensor* x = n.src[1];
    plan.act_bytes = std::max(plan.act_bytes, size_t(x->nrows()) * act_row_bytes(vec_dot_type(n.src[0]->type), x->ne[0]));
}

// The act region holding x's rows as `at` (act_nb1 bytes each), rows of them.
inline Range act_range(const Recorder& r, uint32_t act_nb1, uint32_t rows) {
    return Range{r.act.lo, r.act.lo + uint64_t(act_nb1) * rows};
}

inline void record_act(const Tensor* x, DType at, uint32_t K, uint32_t act_nb1, Recorder& r) {
    const uint32_t rows = uint32_t(x->nrows());
    PcMulMatAct pa{r.addr(x), r.act.lo, K, rows, uint32_t(x->ne[1]), uint32_t(x->ne[2]), uint32_t(x->nb[1]),
                   uint32_t(x->nb[2]), uint32_t(x->nb[3]), act_nb1};
    r.dispatch1d("mul_mat_act_" + lower_name(at), pa, uint64_t(K / block_size(at)) * rows, {r.range(x)},
                 {act_range(r, act_nb1, rows)});
}

}  // namespace ls::vk
