#include "cpu/quant_dot.h"

#include "core/quant.h"

namespace ls::cpu {

float vec_dot(DType w, const void* wrow, const void* arow, int64_t n) { return vec_dot_ref(w, wrow, arow, n); }

void vec_dot_rows(DType w, const void* wrow, size_t wstride, int nr, const void* arow, int64_t n, float* out) {
    for (int r = 0; r < nr; ++r)
        out[r] = vec_dot_ref(w, static_cast<const uint8_t*>(wrow) + wstride * static_cast<size_t>(r), arow, n);
}

void quantize_row_act(DType t, const float* src, void* dst, int64_t n) { quantize_row(t, src, dst, n); }

void dequantize_row_fast(DType t, const void* src, float* dst, int64_t n) { dequantize_row(t, src, dst, n); }

}  // namespace ls::cpu
