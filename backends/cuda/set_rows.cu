#include "backends/cuda/elementwise.cuh"
#include "backends/cuda/quant_device.cuh"
#include "backends/cuda/support_predicates.h"

namespace ls::cuda {
namespace {

__device__ inline int64_t load_index(const uint8_t* idx, int64_t stride, bool i64, int64_t i) {
    return i64 ? *reinterpret_cast<const int64_t*>(idx + i * stride) : *reinterpret_cast<const int32_t*>(idx + i * stride);
}

// Source row blockIdx.y into destination row idx[blockIdx.y], one thread per block of the
// destination type (cudaq::quant_block: the reference quantizer of that block, serially).
// Rows run in parallel, so "the last writer wins" is decided up front: a row whose index
// appears again later is skipped, and every destination row has exactly one writer.
__global__ void set_rows_kernel(DType type, int block_elems, const uint8_t* src, int64_t src_nb1, const uint8_t* idx,
                                int64_t idx_nb0, bool i64, int64_t n_idx, uint8_t* dst, int64_t dst_nb1, int64_t n_blocks) {
    const int64_t i = blockIdx.y;
    const int64_t b = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (b >= n_blocks) return;
    const int64_t r = load_index(idx, idx_nb0, i64, i);
    for (int64_t j = i + 1; j < n_idx; ++j)
        if (load_index(idx, idx_nb0, i64, j) == r) return;  // a later row wins
    const float* x = reinterpret_cast<const float*>(src + i * src_nb1) + b * block_elems;
    cudaq::quant_block(type, x, dst + r * dst_nb1, b);
}

}  // namespace

void set_rows(const Tensor& dst, Ctx& ctx) {
    const Tensor& src = *dst.src[0];
    const Tensor& idx = *dst.src[1];
    // The rows were checked by core before the graph ran (check_index_inputs): nothing is
    // written on a bad one.
    if (idx.ne[0] == 0 || dst.ne[0] == 0) return;
    if (idx.ne[0] > 65535) throw std::runtime_error("cuda set_rows: more than 65535 rows in one node");
    const int be = cudaq::quant_block_elems(dst.type);
    const int64_t n_blocks = dst.ne[0] / be;
    const dim3 grid(blocks_for(n_blocks, 128), unsigned(idx.ne[0]));
    LS_LAUNCH(set_rows_kernel, grid, 128, ctx.stream)(dst.type, be, dptr(src), int64_t(src.nb[1]), dptr(idx), int64_t(idx.nb[0]),
                                                  idx.type == DType::I64, idx.ne[0], dptr(dst), int64_t(dst.nb[1]), n_blocks);
    LS_CUDA_CHECK_LAUNCH("set_rows_kernel");
}

bool supports_set_rows(const Tensor& n) {
    const Tensor* a = n.src[0];
    const Tensor* b = n.src[1];
    return f32_elems(a) && index_type(b) && cudaq::quant_supported(n.type) && cache_type(n.type) && n.is_contiguous();
}

}  // namespace ls::cuda
