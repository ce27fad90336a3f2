// What the CUDA kernels run. Anything else is refused up front (run_graph names the node)
// rather than computed wrongly.
#include "backends/cuda/cuda_common.h"
#include "backends/cuda/qdev.h"

namespace ls::cuda {
namespace {
bool f32_elems(const Tensor* t) { return t && t->type == DType::F32 && t->nb[0] == sizeof(float); }
bool index_type(const Tensor* t) { return t && (t->type == DType::I32 || t->type == DType::I64); }
bool cache_type(DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::Q8_0 || t == DType::Q4_0;
}
}  // namespace

bool supports_node(const Tensor& n) {
    const Tensor* a = n.src[0];
    const Tensor* b = n.src[1];
    switch (n.op) {
        case OpId::GET_ROWS:
            return a && cudaq::deq_supported(a->type) && index_type(b) && f32_elems(&n);
        case OpId::SET_ROWS:
            return f32_elems(a) && index_type(b) && cudaq::quant_supported(n.type) && cache_type(n.type) && n.is_contiguous();
        case OpId::MUL_MAT:
            return a && cudaq::mul_mat_supported(a->type) && f32_elems(b) && f32_elems(&n);
        case OpId::ADD: case OpId::MUL:
            return f32_elems(a) && f32_elems(b) && f32_elems(&n);
        case OpId::SCALE: case OpId::GELU: case OpId::SILU: case OpId::SOFTMAX: case OpId::SIGMOID: case OpId::SOFTPLUS: case OpId::SOFTCAP:
            return f32_elems(a) && a->is_contiguous() && f32_elems(&n) && n.is_contiguous();
        case OpId::RMS_NORM:
            return f32_elems(a) && (!b || (f32_elems(b) && b->is_contiguous())) && f32_elems(&n);
        case OpId::ROPE:
            return f32_elems(a) && n.src[1] && n.src[1]->type == DType::I32 && n.src[1]->is_contiguous() &&
                   (!n.src[2] || (f32_elems(n.src[2]) && n.src[2]->is_contiguous())) && f32_elems(&n);
        case OpId::ATTENTION:
            return f32_elems(a) && b && cache_type(b->type) && n.src[2] && cache_type(n.src[2]->type) && n.src[3] &&
                   n.src[3]->type == DType::I32 && n.src[3]->is_contiguous() && n.src[4] && n.src[4]->type == DType::I32 &&
                   n.src[4]->is_contiguous() && f32_elems(&n);
        case OpId::CONV1D_SCAN:
            return f32_elems(a) && a->is_contiguous() && f32_elems(b) && b->is_contiguous() && f32_elems(n.src[2]) &&
                   n.src[2]->is_contiguous() && f32_elems(&n) && n.is_contiguous();
        case OpId::DELTA_SCAN:
            return f32_elems(a) && a->is_contiguous() && f32_elems(b) && b->is_contiguous() && f32_elems(n.src[2]) &&
                   n.src[2]->is_contiguous() && f32_elems(n.src[3]) && n.src[3]->is_contiguous() && f32_elems(&n) &&
                   n.is_contiguous();
        case OpId::TOPK:
            return f32_elems(a) && a->is_contiguous() && n.is_contiguous();
        case OpId::MUL_MAT_ID:
            return a && cudaq::mul_mat_supported(a->type) && f32_elems(b) && n.src[2] && n.src[2]->type == DType::I32 &&
                   n.src[2]->is_contiguous() && f32_elems(&n) && n.is_contiguous();
        default:
            return false;
    }
}

}  // namespace ls::cuda
