#include <vector>

#include "core/quant/quant.h"
#include "core/ref/ref_ops.h"

namespace ls::ref {

// The product is defined on the integer path: each activation row is first quantized to
// the weight type's dot type (Q8_0 for Q4_0..Q8_0, Q8_K for K-quants, F16 for F16), then
// dotted block by block: an exact integer sum per block, then one float chain over the
// blocks in order, sum = sum + (d_w * d_a) * float(isum) (K-quants with mins keep a second
// chain for the min term and subtract at the end; float weights are canon_dot). Backends
// compute exactly this sequence, so their results are bit-identical: anything looser would
// be amplified by the next layer's 8-bit activation quantization (core/rules/canon.h).
void mul_mat(const Tensor& dst) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const int64_t K = w.ne[0];
    const DType at = vec_dot_type(w.type);
    std::vector<uint8_t> arow(row_bytes(at, K));
    for (int64_t i3 = 0; i3 < x.ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < x.ne[2]; ++i2)
            for (int64_t m = 0; m < x.ne[1]; ++m) {
                quantize_row(at, reinterpret_cast<const float*>(x.row(m, i2, i3)), arow.data(), K);
                float* out = reinterpret_cast<float*>(dst.row(m, i2, i3));
                for (int64_t n = 0; n < w.ne[1]; ++n) out[n] = vec_dot_ref(w.type, w.row(n), arow.data(), K);
            }
}

}  // namespace ls::ref
