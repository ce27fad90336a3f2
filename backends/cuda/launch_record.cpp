#include "backends/cuda/launch_record.h"

namespace ls::cuda {

LaunchList*& recording() {
    thread_local LaunchList* list = nullptr;
    return list;
}

#if defined(LS_CUDA_EMU)
// The emulated graph holds each node's launch as work (emu/cuda_runtime.h).
cudaError_t add_record_node(cudaGraph_t g, cudaGraphNode_t prev, const LaunchRecord& r, cudaGraphNode_t* node) {
    return ::ls::emu::graph_add_work(g, prev, r.run, node);
}
cudaError_t set_record_node(cudaGraphExec_t e, cudaGraphNode_t node, const LaunchRecord& r) {
    return ::ls::emu::exec_set_work(e, node, r.run);
}
#else
namespace {
// The record as kernel node parameters: kernelParams points at each argument's bytes (the
// runtime copies them during the call).
template <class F> cudaError_t with_params(const LaunchRecord& r, F f) {
    thread_local std::vector<void*> ptrs;
    ptrs.resize(r.offsets.size());
    for (size_t i = 0; i < ptrs.size(); ++i) ptrs[i] = const_cast<uint8_t*>(r.args.data()) + r.offsets[i];
    cudaKernelNodeParams p{};
    p.func = const_cast<void*>(r.func);
    p.gridDim = r.grid;
    p.blockDim = r.block;
    p.sharedMemBytes = 0;
    p.kernelParams = ptrs.data();
    p.extra = nullptr;
    return f(p);
}
}  // namespace

cudaError_t add_record_node(cudaGraph_t g, cudaGraphNode_t prev, const LaunchRecord& r, cudaGraphNode_t* node) {
    return with_params(r, [&](const cudaKernelNodeParams& p) { return cudaGraphAddKernelNode(node, g, prev ? &prev : nullptr, prev ? 1 : 0, &p); });
}
cudaError_t set_record_node(cudaGraphExec_t e, cudaGraphNode_t node, const LaunchRecord& r) {
    return with_params(r, [&](const cudaKernelNodeParams& p) { return cudaGraphExecKernelNodeSetParams(e, node, &p); });
}
#endif

}  // namespace ls::cuda
