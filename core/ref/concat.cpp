#include <cstring>

#include "core/ref/ref_ops.h"

namespace ls::ref {

// Row (i1, i2) of dst: row (i1, i2) of a, then row (i1, i2) of b (when given); plain copies.
void concat(const Tensor& dst) {
    const Tensor& a = *dst.src[0];
    const Tensor* b = dst.src[1];
    for (int64_t i2 = 0; i2 < dst.ne[2]; ++i2)
        for (int64_t i1 = 0; i1 < dst.ne[1]; ++i1) {
            uint8_t* out = dst.row(i1, i2);
            std::memcpy(out, a.row(i1, i2), size_t(a.ne[0]) * 4);
            if (b) std::memcpy(out + a.ne[0] * 4, b->row(i1, i2), size_t(b->ne[0]) * 4);
        }
}

}  // namespace ls::ref
