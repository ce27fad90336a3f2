// The visibility and ring-indexing rule of SEMANTICS.md section 1, written once and used by
// every implementation of the attention op and by the KV cache.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/rules/hd.h"

namespace ls {

// First key position a query at position p sees with window W (0 = full attention).
// (LS_HD: the CUDA kernels index with these same two functions.)
LS_HD inline int64_t attn_first_key(int64_t p, int64_t W) { return W > 0 && p - W + 1 > 0 ? p - W + 1 : 0; }
// Cache row of key position k of sequence slot s in a ring of R rows per slot.
LS_HD inline int64_t ring_row(int64_t s, int64_t k, int64_t R) { return s * R + k % R; }
// Checks that a query (s, p) can be answered from a cache of n_seq slots of R rows.
inline void check_attention_query(int64_t s, int64_t p, int64_t W, int64_t R, int64_t n_seq) {
    if (s < 0 || s >= n_seq)
        throw std::out_of_range("attention: sequence " + std::to_string(s) + " outside [0, " + std::to_string(n_seq) + ")");
    if (p < 0) throw std::out_of_range("attention: negative position " + std::to_string(p));
    if (p - attn_first_key(p, W) + 1 > R)
        throw std::out_of_range("attention: position " + std::to_string(p) + " needs more than the " +
                                std::to_string(R) + " cache rows of its slot (context full)");
}

}  // namespace ls
