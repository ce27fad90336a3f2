// Parameter structs of the ops, one per op that has parameters. Plain 32-bit fields only,
// so the same layout serves as a push-constant / kernel-argument block on GPU backends.
// This header is also included by the GLSL shaders (shaders/push.h): C++-only parts sit
// under __cplusplus, and the layouts are size-checked below.
#ifndef LS_CORE_OP_PARAMS_H
#define LS_CORE_OP_PARAMS_H
#ifdef __cplusplus
#include <cstdint>

namespace ls {
#endif

struct ScaleParams {
    float s;
};

struct RmsNormParams {
    float eps;
};

#ifdef __cplusplus
enum RopeMode : int32_t { ROPE_NORMAL = 0, ROPE_NEOX = 2 };
#else
const int ROPE_NORMAL = 0;
const int ROPE_NEOX = 2;
#endif

struct RopeParams {
    int32_t n_dims;     // rotated dims per head (even); the rest pass through
    int32_t mode;       // RopeMode
    float freq_base;    // theta_i = pos * freq_scale * base^(-2i/n_dims) / factor_i
    float freq_scale;   // 1 / linear scaling factor
};

struct SoftmaxParams {
    float scale;        // softmax(x * scale) per row
};

// Attention over a ring-buffered KV cache, SEMANTICS.md section 1.
struct AttentionParams {
    int32_t window;     // W; 0 = full attention
    int32_t ring_rows;  // R: rows per sequence slot
    int32_t n_head_kv;
    float scale;        // applied to q.k
    float softcap;      // > 0: score = softcap * tanh(score / softcap)
};

#ifdef __cplusplus
static_assert(sizeof(ScaleParams) == 4 && sizeof(RmsNormParams) == 4 && sizeof(RopeParams) == 16 &&
              sizeof(SoftmaxParams) == 4 && sizeof(AttentionParams) == 20);
}  // namespace ls
#endif
#endif  // LS_CORE_OP_PARAMS_H
