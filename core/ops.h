// Graph builders: one function per op. Each checks shapes and types and appends a node.
// The meaning of every op is its reference implementation in core/ref/<op>.cpp.
#pragma once
#include "core/graph.h"
#include "core/op_params.h"

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
// x F32 [D, H, T], pos I32 [T], freq_factors F32 [n_dims/2] or null.
Tensor* rope(Graph& g, Tensor* x, Tensor* pos, Tensor* freq_factors, const RopeParams& p);
Tensor* gelu(Graph& g, Tensor* x);  // tanh approximation
Tensor* silu(Graph& g, Tensor* x);
Tensor* softmax(Graph& g, Tensor* x, float scale);
// q F32 [Dk, H, T]; k [Dk*Hkv, n_seq*R], v [Dv*Hkv, n_seq*R] cache tensors (F32/F16/Q8_0/Q4_0),
// pos and seq I32 [T] -> F32 [Dv, H, T]. Visibility and ring indexing: SEMANTICS.md section 1.
Tensor* attention(Graph& g, Tensor* q, Tensor* k, Tensor* v, Tensor* pos, Tensor* seq, const AttentionParams& p);

// A contiguous tensor seen with another shape (no copy, no node).
Tensor* reshape(Graph& g, Tensor* t, std::initializer_list<int64_t> ne);

}  // namespace ls::ops
