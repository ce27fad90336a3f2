// Push-constant blocks of the Vulkan shaders: ONE definition, included by the host
// (backends/vulkan/) and by every shader (shaders/*.comp, after shaders/common.glsl).
// Tensors are passed as buffer device addresses (addr_t); strides in bytes. Op parameters are
// the structs of core/ir/op_params.h, embedded as they are. std430 and C++ agree on these
// layouts (8-byte fields first, then 4-byte ones); the sizes are checked at the end.
#ifndef LS_SHADERS_PUSH_H
#define LS_SHADERS_PUSH_H
#include "core/ir/op_params.h"
#ifdef __cplusplus
#include <cstdint>
namespace ls::vk {
// A buffer device address. The shaders read the same 8 bytes as uvec2(low word, high word)
// (little-endian; std430 aligns both to 8), so no shader needs 64-bit integers.
typedef uint64_t addr_t;
#else
#define addr_t uvec2
#endif

// get_rows: dst F32 [K, n] row i = src row idx[i], dequantized from `type`.
// set_rows: dst row idx[i] = src F32 row i, converted to `type`.
// idx64: bit 0 set for I64 indices; LS_ROWS_REPEAT (set_rows) when the host found a row named
// twice, so each source row looks for a later writer (otherwise nobody scans: O(n) not O(n^2)).
#define LS_ROWS_REPEAT 2u
struct PcRows {
    addr_t src, idx, dst;
    uint32_t type, K, n, idx64, src_nb1, dst_nb1;
};

// add / mul: dst [ne] = a op b, b broadcast (b's ne divides a's); rows contiguous.
struct PcBinary {
    addr_t a, b, dst;
    uint32_t ne0, ne1, ne2, ne3;
    uint32_t bne0, bne1, bne2, bne3;
    uint32_t anb1, anb2, anb3, bnb1, bnb2, bnb3;
};

// concat: dst F32 [A + B, n1, n2] contiguous = rows of a, then rows of b (B = 0: a copy of a);
// a and b read through their row and plane strides.
struct PcConcat {
    addr_t a, b, dst;
    uint32_t A, B, n1, n, a_nb1, a_nb2, b_nb1, b_nb2;
};

// scale / gelu / silu / sigmoid / softplus / softcap over n contiguous floats (s: scale's
// factor, softcap's cap).
struct PcUnary {
    addr_t x, dst;
    uint32_t n;
    float s;
};

// clamp over n contiguous floats (ClampParams: min, max).
struct PcClamp {
    addr_t x, dst;
    uint32_t n;
    ClampParams p;
    uint32_t pad;
};

// rms_norm over rows of K (rows flattened as i1 + ne1*(i2 + ne2*i3)); dst contiguous.
struct PcRmsNorm {
    addr_t x, w, dst;
    uint32_t K, rows, ne1, ne2, nb1, nb2, nb3, has_w;
    RmsNormParams p;
    uint32_t pad;
};

// layer_norm over rows of K (rows as for rms_norm); dst contiguous. flags: 1 = w, 2 = b.
struct PcLayerNorm {
    addr_t x, w, b, dst;
    uint32_t K, rows, ne1, ne2, nb1, nb2, nb3, flags;
    LayerNormParams p;
    uint32_t pad;
};

// rope: x [D, H, T] (row strides nb1, nb2), cs = (cos, sin) per (token, pair) computed on
// the host with the reference's double formula; dst contiguous.
struct PcRope {
    addr_t x, cs, dst;
    uint32_t D, H, T, nb1, nb2, pad;
    RopeParams p;
};

struct PcSoftmax {
    addr_t x, dst;
    uint32_t K, rows;
    SoftmaxParams p;
    uint32_t pad;
};

// attention: q [Dk, H, T] (strides q_nb1, q_nb2), caches k/v of types kvtype & 0xFFFF and
// kvtype >> 16 (row strides k_nb1/v_nb1), pos/seq I32 [T], dst F32 [Dv, H, T], sinks F32 [H]
// or address 0 (none). part != 0 (the split form): the key-block pass writes each block's
// partial (m, l, o[Dv]) to part, nblk slots per (t, h), and the fold pass
// (attention_fold.comp) folds them in block order. (Both types share a word and "split" is
// part != 0 so that the block stays within the 128 bytes Vulkan guarantees.)
struct PcAttention {
    addr_t q, k, v, pos, seq, dst, part, sinks;
    uint32_t Dk, Dv, H, T, kvtype, k_nb1, v_nb1, q_nb1, q_nb2, nblk;
    AttentionParams p;
};

// attention_fold.comp: PcAttention's fields the fold reads, and, for the _q8_* variants, the
// activation rows of the mul_mat that reads dst as [Dv * H, T] (act_nb1 bytes a token; head h
// fills its Dv / block blocks from block h * Dv / block).
struct PcAttnFold {
    addr_t pos, part, sinks, dst, act;
    uint32_t Dv, H, T, nblk, act_nb1;
    int32_t window;
};

// mul_mat, stage 1: quantizes x rows (K floats, flattened as m + ne1*(i2 + ne2*i3), strides
// nb1..nb3) to the weight's dot type, act rows of act_nb1 bytes.
struct PcMulMatAct {
    addr_t x, act;
    uint32_t K, rows, ne1, ne2, nb1, nb2, nb3, act_nb1;
};

// mul_mat, stage 2: dst[m * N + n] = dot(w row n, act row m).
struct PcMulMat {
    addr_t w, act, dst;
    uint32_t K, N, M, w_nb1, act_nb1;
    uint32_t lanes;  // mul_mat_sgk_*: lanes per super-block (VkCtx::sgk_lanes); 0 elsewhere
};

// mul_mat_id, stage 2: PcMulMat's fields (M = number of (token, expert) pairs), plus the
// ids [k, T], the expert stride of w, the expert count, k and X (x rows per token).
struct PcMulMatId {
    addr_t w, act, dst;
    uint32_t K, N, M, w_nb1, act_nb1, lanes;
    addr_t ids;
    uint32_t w_nb2, E, k, X;
};

// topk over columns of x [E, T] (row stride x_nb1); dst [k, T] contiguous.
struct PcTopk {
    addr_t x, v, dst;
    uint32_t x_nb1, v_nb1, E, T;
    TopkParams p;
};

// conv1d_scan: x rows [C] (stride x_nb1), w [K per channel], state rows per slot
// (stride st_nb1), runs [4 per run], order [T], y rows (stride y_nb1).
struct PcConv1dScan {
    addr_t x, w, state, runs, order, y;
    uint32_t x_nb1, st_nb1, y_nb1, C, K, n_runs;
};

// delta_scan: qkv rows (stride qkv_nb1), g and beta [Hv per token], state rows per slot
// (stride st_nb1), runs, order, y [Hv * Dv per token] contiguous.
struct PcDeltaScan {
    addr_t qkv, g, beta, state, runs, order, y;
    uint32_t qkv_nb1, st_nb1, n_runs, pad;
    DeltaScanParams p;
    uint32_t pad2;
};

// ssm_scan: xbc rows (stride xbc_nb1), dt [H per token], A [H], state rows per slot (stride
// st_nb1), runs [4 per run], order [T], y [P, H, T].
struct PcSsmScan {
    addr_t xbc, dt, A, state, runs, order, y;
    uint32_t xbc_nb1, st_nb1, n_runs, pad;
    SsmScanParams p;
};

// Fused groups (backends/vulkan/fused.cpp), rows of K contiguous floats:
// norm_chain: [y1 = rms_norm(x) * w1] [s = res + (y1 or x)] y2 = rms_norm(s or x) * w2, and
// y2 quantized into act rows (act_nb1 bytes each) by the _q8_* variants.
#define LS_NC_NORM1 1u
#define LS_NC_W1 2u
#define LS_NC_ADD 4u
#define LS_NC_W2 8u
struct PcNormChain {
    addr_t x, w1, res, y1, s, w2, y2, act;
    uint32_t K, rows, flags, act_nb1;
    float eps1, eps2;
};
// glu: y = act(a) (gelu or silu), z = y * up, over n contiguous floats, and z's rows of K
// quantized into act rows by the _q8_* variants (an invocation a block of a row).
struct PcGlu {
    addr_t a, up, y, z, act;
    uint32_t n, K, act_nb1, pad;
};

// head_rows: one chain of a layer's per-head rows (core/ir/head_rows_group.h): rows of D
// contiguous floats of x, per_token of them a token (its heads), through rms_norm (w),
// rope (cs, n_dims, mode) and the write of the row into cache row idx[t] at element
// (row % per_token) * D, as the LS_HR_* flags name; norm_y and rope_y contiguous.
#define LS_HR_NORM 1u
#define LS_HR_W 2u
#define LS_HR_ROPE 4u
#define LS_HR_SET 8u
#define LS_HR_IDX64 16u
#define LS_HR_REPEAT 32u
#define LS_HR_ROW_MAX 2048u
struct PcHeadRows {
    addr_t x, w, norm_y, cs, rope_y, cache, idx;
    uint32_t D, rows, per_token, flags, n_dims, mode, cache_type, cache_nb1, n_tok;
    float eps;
};

#ifdef __cplusplus
static_assert(sizeof(PcNormChain) == 88 && sizeof(PcGlu) == 56 && sizeof(PcHeadRows) == 96, "push-constant layouts");
static_assert(sizeof(PcClamp) == 32 && sizeof(PcSsmScan) == 88 && sizeof(PcLayerNorm) == 72, "push-constant layouts");
static_assert(sizeof(PcConv1dScan) == 72 && sizeof(PcDeltaScan) == 104 && sizeof(PcMulMatId) == 72 && sizeof(PcTopk) == 64,
              "push-constant layouts");
static_assert(sizeof(PcRows) == 48 && sizeof(PcConcat) == 56 && sizeof(PcBinary) == 80 && sizeof(PcUnary) == 24 && sizeof(PcRmsNorm) == 64 &&
              sizeof(PcRope) == 80 && sizeof(PcSoftmax) == 32 && sizeof(PcAttention) == 128 &&
              sizeof(PcMulMatAct) == 48 && sizeof(PcMulMat) == 48);
static_assert(sizeof(PcAttention) <= 128, "128 bytes of push constants is all Vulkan guarantees");
static_assert(sizeof(PcAttnFold) == 64, "push-constant layouts");
}  // namespace ls::vk
#endif
#endif  // LS_SHADERS_PUSH_H
