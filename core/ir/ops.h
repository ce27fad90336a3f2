// Graph builders: one function per op. Each checks shapes and types and appends a node.
// The meaning of every op is its reference implementation in core/ref/<op>.cpp.
#pragma once
#include "core/ir/graph.h"
#include "core/ir/op_params.h"
#include <vector>

namespace ls::ops {

// [K, rows] any type, idx I32 [n] -> F32 [K, n]: row idx[i] of src, dequantized.
Tensor* get_rows(Graph& g, Tensor* src, Tensor* idx);
// Row idx[i] of dst becomes row i of src (F32 [K, n]), converted to dst's type. Returns a view
// of dst that later readers depend on. idx is I32 or I64; out-of-range indices are an error
// raised before any row is written; duplicate indices: the last one wins.
Tensor* set_rows(Graph& g, Tensor* dst, Tensor* src, Tensor* idx);
// w [K, N] (any supported type) x F32 [K, M, b2, b3] -> F32 [N, M, b2, b3]: out = w . x
Tensor* mul_mat(Graph& g, Tensor* w, Tensor* x);
// Elementwise with b broadcast over a (each b->ne[i] divides a->ne[i]); F32.
Tensor* add(Graph& g, Tensor* a, Tensor* b);
Tensor* mul(Graph& g, Tensor* a, Tensor* b);
Tensor* scale(Graph& g, Tensor* a, float s);
// x / sqrt(mean(x^2) + eps) per row, times w [K] when given.
Tensor* rms_norm(Graph& g, Tensor* x, Tensor* w, float eps);
// LayerNorm per row (vision encoders): d = x - mean(x), y = d / sqrt(mean(d^2) + eps), then
// times w [K] and plus b [K] when given (core/ref/layer_norm.cpp has the exact order).
Tensor* layer_norm(Graph& g, Tensor* x, Tensor* w, Tensor* b, float eps);
// x F32 [D, H, T], table F32 [n_dims, T] (rope_table: per token, n_dims/2 pairs (cos, sin)):
// each head's first n_dims values rotated pairwise (p.mode pairs them), the rest passed on.
Tensor* rope(Graph& g, Tensor* x, Tensor* table, const RopeParams& p);
// The cos/sin table of positions pos[0..T) under p (core/rules/rope_rule.h), as a graph
// input: core computes it once per ubatch and setting, so no backend evaluates the angles or
// reads the positions. freq_factors: n_dims/2 divisors of the angle (host memory), or null.
Tensor* rope_table(Graph& g, const int32_t* pos, int64_t T, const RopeParams& p, const float* freq_factors);
// The same table for multi-axis rope (core/rules/rope_rule.h rope_angles_axes): pos [T][n_axes];
// per pair its axis (< n_axes) and its inverse frequency, n_dims/2 of each.
Tensor* rope_table_axes(Graph& g, const int32_t* pos, int64_t n_axes, int64_t T, const RopeParams& p, const std::vector<int32_t>& axis,
                        const std::vector<double>& inv_freq);
Tensor* gelu(Graph& g, Tensor* x);  // tanh approximation
Tensor* gelu_erf(Graph& g, Tensor* x);  // the exact (erf) GELU, torch's nn.GELU()
Tensor* silu(Graph& g, Tensor* x);
Tensor* softmax(Graph& g, Tensor* x, float scale);
// q F32 [Dk, H, T]; k [Dk*Hkv, n_seq*R], v [Dv*Hkv, n_seq*R] cache tensors (F32/F16/Q8_0/Q4_0),
// pos and seq I32 [T] -> F32 [Dv, H, T]. Visibility and ring indexing: SEMANTICS.md section 1.
// sinks F32 [H] (optional; gpt-oss): one finite logit per query head that joins each query's
// softmax denominator and contributes no value,
//   out = sum_k e^{x_k - M} v_k / (sum_k e^{x_k - M} + e^{sink_h - M}),  M = max(max_k x_k, sink_h),
// computed as one more fold after the last key block (attn_fold_sink, core/rules/attention_rule.h).
Tensor* attention(Graph& g, Tensor* q, Tensor* k, Tensor* v, Tensor* pos, Tensor* seq, const AttentionParams& p,
                  Tensor* sinks = nullptr);
Tensor* sigmoid(Graph& g, Tensor* x);
Tensor* softplus(Graph& g, Tensor* x);  // log(1 + e^x)
// cap * tanh(x / cap), elementwise (cap > 0): the attention op's softcap, as an op.
Tensor* softcap(Graph& g, Tensor* x, float cap);
// x < min ? min : (x > max ? max : x), elementwise (ClampParams): NaN in, the same NaN out.
// min <= max, neither NaN; -INFINITY / INFINITY bound one side only.
Tensor* clamp(Graph& g, Tensor* x, float min, float max);

// The operand a node writes in place (set_rows' destination, the scans' state), or null: the
// scheduler runs such a node where that operand lives.
const Tensor* written_in_place(const Tensor& n);

// Causal depthwise conv1d over the runs of a ubatch, SEMANTICS.md section 2.
// x F32 [C, T] (ubatch order); w F32 [K, C]; state F32 [(K-1)*C, n_slots], persistent: per slot
// the last K-1 inputs, oldest first, read at a run's start (zeros when its reset flag is set)
// and written back at its end, in place. runs I32 [4, n_runs] (slot, first, n, reset), order
// I32 [T] (see Conv1dScanParams). -> F32 [C, T]: y[c,t] = sum_k w[k,c] * in[t-K+1+k, c].
Tensor* conv1d_scan(Graph& g, Tensor* x, Tensor* w, Tensor* state, Tensor* runs, Tensor* order);
// Gated delta rule over the runs of a ubatch, SEMANTICS.md section 2. qkv F32 [2*Hk*Dk + Hv*Dv, T]
// (q heads, k heads, v heads per token); g F32 [Hv, T] log-decay; beta F32 [Hv, T] (already
// squashed); state F32 [Hv*Dv*Dk, n_slots] persistent (per head Dv rows of Dk), read and written
// in place per run. q and k are L2-normalised per head, q scaled. Per token, per value head:
// S = e^g S; S += beta (v - S k) k^T; o = S q.  -> F32 [Dv, Hv, T].
Tensor* delta_scan(Graph& g, Tensor* qkv, Tensor* gate, Tensor* beta, Tensor* state, Tensor* runs, Tensor* order,
                   const DeltaScanParams& p);

// Mamba-2's selective scan over the runs of a ubatch, SEMANTICS.md section 2. xbc F32
// [H*P + 2*G*N, T] (per token x: H heads of P, then B: G groups of N, then C: G groups of N);
// dt F32 [H, T] (the step, already positive: softplus(dt + dt_bias)); A F32 [H] (negative);
// state F32 [H*P*N, n_slots] persistent (per head P rows of N), read and written in place per
// run. Per token, per head h (group g = h / (H / G)), per channel p:
//   a = e^(dt_h A_h);  S_p = S_p a + (dt_h x_p) B_g;  y_p = S_p . C_g   -> F32 [P, H, T]
// (Mamba-2's D skip and gate are ops of their own after it.)
Tensor* ssm_scan(Graph& g, Tensor* xbc, Tensor* dt, Tensor* A, Tensor* state, Tensor* runs, Tensor* order, const SsmScanParams& p);

// Mixture-of-experts routing (TopkParams): x F32 [E, T] -> the k best entries per column:
// their indices I32 [k, T] (topk_ids) or their values F32 [k, T], renormalised to sum 1 when
// norm (topk_weights). groups: DeepSeek's group-limited selection (TopkParams); from (F32
// [E, T], optional): the values returned are from's at the entries x selects.
struct TopkGroups {
    int32_t n_group = 0, group_used = 0, group_top = 0;
};
Tensor* topk_ids(Graph& g, Tensor* x, int k, const TopkGroups& groups = {});
Tensor* topk_weights(Graph& g, Tensor* x, int k, bool norm, const TopkGroups& groups = {}, Tensor* from = nullptr);
// Per-token expert matmul: w [K, N, E] (E experts, any mul_mat type), x F32 [K, X, T] with
// X = 1 (every selected expert reads the token's row) or X = k (expert j reads row j),
// ids I32 [k, T] in [0, E) -> F32 [N, k, T]: out[:, j, t] = mul_mat(w[:, :, ids[j, t]], x[:, j % X, t]),
// the same arithmetic as mul_mat. An id outside [0, E) is an error raised before any write
// (GPU backends, which read ids on the device, write NaN for it instead).
Tensor* mul_mat_id(Graph& g, Tensor* w, Tensor* x, Tensor* ids);

// a F32 [A, n1, n2], b F32 [B, n1, n2] -> F32 [A + B, n1, n2], contiguous: each row of a
// followed by the same row of b. a and b may be strided views (any row and plane strides);
// b null: a contiguous copy of a (`cont`). Plain copies, no arithmetic (MLA's query and key
// are a latent part and a rope part side by side; a strided view made contiguous for an op
// that needs packed rows).
Tensor* concat(Graph& g, Tensor* a, Tensor* b);
inline Tensor* cont(Graph& g, Tensor* a) { return concat(g, a, nullptr); }

// A contiguous tensor seen with another shape (no copy, no node).
Tensor* reshape(Graph& g, Tensor* t, std::initializer_list<int64_t> ne);
// Part of a contiguous tensor seen as [ne0, ne1] with row stride nb1 bytes, starting offset
// bytes in (no copy, no node); must lie inside t. Quantized types: whole blocks only.
Tensor* view_2d(Graph& g, Tensor* t, int64_t ne0, int64_t ne1, size_t nb1, size_t offset);

}  // namespace ls::ops
