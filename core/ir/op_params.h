// Parameter structs of the ops, one per op that has parameters. Plain 32-bit fields only,
// so the same layout serves as a push-constant / kernel-argument block on GPU backends.
// This header is also included by the GLSL shaders (shaders/push.h): C++-only parts sit
// under __cplusplus, and the layouts are size-checked below.
#ifndef LS_CORE_OP_PARAMS_H
#define LS_CORE_OP_PARAMS_H
#ifdef __cplusplus
#include <cstdint>

namespace ls {

// The parameter struct of ops that take none (their op_list.h rows name it).
struct NoParams {};
#endif

struct ScaleParams {
    float s;
};

// softcap: y = cap * tanh(x / cap) (det_tanh), attention's score cap as an op of its own
// (Gemma's final logit soft-capping).
struct SoftcapParams {
    float cap;
};

// clamp: y = x < min ? min : (x > max ? max : x), elementwise: a NaN input stays NaN (its bits
// unchanged), -0 and +0 pass as they are, no arithmetic anywhere. min <= max, neither NaN;
// either may be infinite (gpt-oss's clamped SwiGLU bounds the gate from above only).
struct ClampParams {
    float min;
    float max;
};

struct RmsNormParams {
    float eps;
};

struct LayerNormParams {
    float eps;
};

#ifdef __cplusplus
enum RopeMode : int32_t { ROPE_NORMAL = 0, ROPE_NEOX = 2 };
#else
const int ROPE_NORMAL = 0;
const int ROPE_NEOX = 2;
#endif

// Defaults for the optional trailing fields of a parameter struct (C++ only: GLSL structs
// take no initializers).
#ifdef __cplusplus
#define LS_DEFAULT(v) = v
#else
#define LS_DEFAULT(v)
#endif

// The angles: core/rules/rope_rule.h. YaRN (ext_factor != 0) blends, per pair i, the scaled
// angle with the unscaled one by a ramp that is 1 below dimension pair corr_lo and 0 above
// corr_hi; attn_factor multiplies cos and sin (YaRN's magnitude correction; 1 otherwise).
struct RopeParams {
    int32_t n_dims;     // rotated dims per head (even); the rest pass through
    int32_t mode;       // RopeMode
    float freq_base;    // theta_i = pos * freq_scale * base^(-2i/n_dims) / factor_i
    float freq_scale;   // 1 / linear scaling factor
    float ext_factor LS_DEFAULT(0.f);   // YaRN: weight of the ramp (0: plain scaling)
    float attn_factor LS_DEFAULT(1.f);  // cos and sin are multiplied by this
    float corr_lo LS_DEFAULT(0.f);      // YaRN ramp: first and last pair of the blend
    float corr_hi LS_DEFAULT(0.f);
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
static_assert(sizeof(ScaleParams) == 4 && sizeof(SoftcapParams) == 4 && sizeof(ClampParams) == 8 && sizeof(RmsNormParams) == 4 &&
              sizeof(LayerNormParams) == 4 &&
              sizeof(RopeParams) == 32 &&
              sizeof(SoftmaxParams) == 4 && sizeof(AttentionParams) == 20);
#endif

// Recurrent ops over the runs of a ubatch (SEMANTICS.md section 2). Both take
// runs I32 [4, n_runs]: (slot, first, n, reset) and order I32 [T]: run r covers the tokens
// order[first .. first+n) in scan order; reset != 0 makes the run start from a zero state
// (its sequence starts at position 0) instead of the slot's stored state.
struct Conv1dScanParams {
    int32_t d_conv;     // kernel width K; the state keeps the last K-1 inputs per channel
};

// Which key head value head h reads. (Written so that it can sit in the GLSL-readable part
// of this header: an enum for C++, plain constants for shaders.)
#ifdef __cplusplus
enum DeltaHeadMap : int32_t {
    HEADS_GROUPED = 0,  // value head h reads key head h / (Hv / Hk)   (qwen3next)
    HEADS_TILED = 1,    // value head h reads key head h % Hk          (qwen35: converter reorders)
};
#else
const int HEADS_GROUPED = 0;
const int HEADS_TILED = 1;
#endif

struct DeltaScanParams {
    int32_t n_k_heads;  // Hk
    int32_t d_k;        // key head dim
    int32_t n_v_heads;  // Hv
    int32_t d_v;        // value head dim
    int32_t head_map;   // DeltaHeadMap
    float scale;        // applied to the L2-normalised query
    float eps;          // L2 norm: x / sqrt(sum x^2 + eps)
};

// Mamba-2's selective scan over the runs of a ubatch (SEMANTICS.md section 2): H heads of P
// channels, state N per channel, G groups of B and C (head h reads group h / (H / G)).
struct SsmScanParams {
    int32_t n_head;    // H
    int32_t head_dim;  // P
    int32_t d_state;   // N
    int32_t n_group;   // G (divides H)
};

// topk: per column of x [E, T], the k entries that come first in the order "larger value
// first, NaN last, ties to the lower index" (core/rules/topk_rule.h). values == 0: their indices
// (I32 [k, T]); values != 0: their values (F32 [k, T]), divided by their sum when norm != 0
// (canon_sum in selection order, each quotient correctly rounded). Mixture-of-experts routing.
//
// Group-limited selection (DeepSeek's routers), n_group > 1: the E entries are n_group groups of
// E / n_group consecutive entries; a group's score is the sum of its group_top best entries in
// selection order (DeepSeek V3: 2; V2: 1, its best), the group_used best-scoring groups (the
// same order over the scores) stay eligible, and the k entries are picked among theirs.
// With a second source v (topk_weights' `from`), the values returned are v's at the selected
// indices (the unbiased router scores when the selection read biased ones).
struct TopkParams {
    int32_t k;
    int32_t values;
    int32_t norm;
    int32_t n_group LS_DEFAULT(0);     // <= 1: no groups
    int32_t group_used LS_DEFAULT(0);
    int32_t group_top LS_DEFAULT(0);   // 1 or 2
};

#ifdef __cplusplus
static_assert(sizeof(Conv1dScanParams) == 4 && sizeof(DeltaScanParams) == 28 && sizeof(SsmScanParams) == 16 && sizeof(TopkParams) == 24);

}  // namespace ls
#endif
#endif  // LS_CORE_OP_PARAMS_H
