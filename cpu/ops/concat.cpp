#include <tbb/parallel_for.h>

#include <cstring>

#include "cpu/ops/cpu_ops.h"

namespace ls::cpu {

// core/ref/concat.cpp, rows spread over the threads.
void concat(const Tensor& dst) {
    const Tensor& a = *dst.src[0];
    const Tensor* b = dst.src[1];
    const int64_t n1 = dst.ne[1];
    tbb::parallel_for(int64_t(0), n1 * dst.ne[2], [&](int64_t r) {
        const int64_t i1 = r % n1, i2 = r / n1;
        uint8_t* out = dst.row(i1, i2);
        std::memcpy(out, a.row(i1, i2), size_t(a.ne[0]) * 4);
        if (b) std::memcpy(out + a.ne[0] * 4, b->row(i1, i2), size_t(b->ne[0]) * 4);
    });
}

}  // namespace ls::cpu
