#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/quant_device.cuh"
#include "backends/cuda/support_predicates.h"

namespace ls::cuda {
namespace {

__device__ inline int64_t load_index(const uint8_t* idx, int64_t stride, bool i64, int64_t i) {
    return i64 ? *reinterpret_cast<const int64_t*>(idx + i * stride) : *reinterpret_cast<const int32_t*>(idx + i * stride);
}

// Row idx[blockIdx.y] of src, dequantized element by element (cudaq::deq_elem: the
// operations of dequantize_row).
__global__ void get_rows_kernel(DType type, const uint8_t* src, int64_t src_nb1, const uint8_t* idx, int64_t idx_nb0, bool i64,
                                uint8_t* dst, int64_t dst_nb1, int64_t K) {
    const int64_t i = blockIdx.y;
    const int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (e >= K) return;
    const uint8_t* row = src + load_index(idx, idx_nb0, i64, i) * src_nb1;
    reinterpret_cast<float*>(dst + i * dst_nb1)[e] = cudaq::deq_elem(type, row, e);
}

}  // namespace

void get_rows(const Tensor& dst, Ctx& ctx) {
    const Tensor& src = *dst.src[0];
    const Tensor& idx = *dst.src[1];
    // The rows were checked by core before the graph ran (check_index_inputs).
    if (idx.ne[0] == 0 || src.ne[0] == 0) return;
    if (idx.ne[0] > 65535) throw std::runtime_error("cuda get_rows: more than 65535 rows in one node");
    const dim3 grid(blocks_for(src.ne[0], kThreads), unsigned(idx.ne[0]));
    LS_LAUNCH(get_rows_kernel, grid, kThreads, ctx.stream)(src.type, dptr(src), int64_t(src.nb[1]), dptr(idx), int64_t(idx.nb[0]),
                                                      idx.type == DType::I64, dptr(dst), int64_t(dst.nb[1]), src.ne[0]);
    LS_CUDA_CHECK_LAUNCH("get_rows_kernel");
}

bool supports_get_rows(const Tensor& n) {
    const Tensor* a = n.src[0];
    const Tensor* b = n.src[1];
    return a && cudaq::deq_supported(a->type) && index_type(b) && f32_elems(&n);
}

}  // namespace ls::cuda
