#include <tbb/blocked_range2d.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <vector>

#include "core/quant.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/quant_dot.h"

namespace ls::cpu {

// Integer hot path: activations are quantized once to the weight's dot type, then each
// tile of (weight rows x tokens) is computed with the SIMD block dot products. Tiles keep
// a few weight rows in L1 while the tokens' quantized rows stream from L2.
void mul_mat(const Tensor& dst) {
    const Tensor& w = *dst.src[0];
    const Tensor& x = *dst.src[1];
    const int64_t K = w.ne[0], N = w.ne[1];
    const int64_t M = x.ne[1] * x.ne[2] * x.ne[3];
    const DType at = vec_dot_type(w.type);
    const size_t abytes = row_bytes(at, K);
    std::vector<uint8_t> aq(size_t(M) * abytes);
    auto xrow = [&](int64_t m) { return reinterpret_cast<const float*>(x.row(m % x.ne[1], (m / x.ne[1]) % x.ne[2], m / (x.ne[1] * x.ne[2]))); };
    auto drow = [&](int64_t m) { return reinterpret_cast<float*>(dst.row(m % dst.ne[1], (m / dst.ne[1]) % dst.ne[2], m / (dst.ne[1] * dst.ne[2]))); };
    tbb::parallel_for(int64_t(0), M, [&](int64_t m) { quantize_row_act(at, xrow(m), aq.data() + m * abytes, K); });

    constexpr int64_t kRowBlock = 16, kTokBlock = 64;
    tbb::parallel_for(tbb::blocked_range2d<int64_t>(0, (N + kRowBlock - 1) / kRowBlock, 1, 0, M, kTokBlock),
                      [&](const tbb::blocked_range2d<int64_t>& r) {
                          float tmp[kRowBlock];
                          for (int64_t nb = r.rows().begin(); nb < r.rows().end(); ++nb) {
                              const int64_t n0 = nb * kRowBlock, nr = std::min(kRowBlock, N - n0);
                              for (int64_t m = r.cols().begin(); m < r.cols().end(); ++m) {
                                  vec_dot_rows(w.type, w.row(n0), w.nb[1], int(nr), aq.data() + m * abytes, K, tmp);
                                  std::copy(tmp, tmp + nr, drow(m) + n0);
                              }
                          }
                      });
}

}  // namespace ls::cpu
