// Parameter structs of the ops, one per op that has parameters. Plain 32-bit fields only,
// so the same layout serves as a push-constant / kernel-argument block on GPU backends.
#pragma once
#include <cstdint>

namespace ls {

struct ScaleParams {
    float s;
};

struct RmsNormParams {
    float eps;
};

enum RopeMode : int32_t { ROPE_NORMAL = 0, ROPE_NEOX = 2 };

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

}  // namespace ls
