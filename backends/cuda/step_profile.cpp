#include "backends/cuda/step_profile.h"

#include <cstdio>

#include "backends/cuda/launch_context.h"

namespace ls::cuda {

OpProfile::~OpProfile() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
}

cudaEvent_t OpProfile::event(size_t i) {
    while (events_.size() <= i) {
        cudaEvent_t e = nullptr;
        LS_CUDA_CHECK(cudaEventCreate(&e));
        events_.push_back(e);
    }
    return events_[i];
}

void OpProfile::begin(cudaStream_t s) { LS_CUDA_CHECK(cudaEventRecord(event(2 * keys_.size()), s)); }

void OpProfile::end(cudaStream_t s, const Tensor& node, const Tensor* fused) {
    LS_CUDA_CHECK(cudaEventRecord(event(2 * keys_.size() + 1), s));
    keys_.push_back(op_times_key(node, fused));
}

void OpProfile::end_graph(cudaStream_t s) {
    LS_CUDA_CHECK(cudaStreamSynchronize(s));
    for (size_t i = 0; i < keys_.size(); ++i) {
        float ms = 0;
        LS_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[2 * i], events_[2 * i + 1]));
        times_.add(keys_[i], 1e-3 * double(ms));
    }
    if (!keys_.empty()) times_.end_graph();
    keys_.clear();
}

void OpProfile::print(std::FILE* f) const { times_.print(f, "cuda", "GPU time of the kernels"); }

StepSplit::~StepSplit() {
    if (start_) cudaEventDestroy(start_);
    if (stop_) cudaEventDestroy(stop_);
}

void StepSplit::take_pending() {
    if (!pending_) return;
    float ms = 0;
    LS_CUDA_CHECK(cudaEventSynchronize(stop_));
    LS_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    gpu_ms_ += ms;
    ++timed_;
    pending_ = false;
}

void StepSplit::gpu_begin(cudaStream_t s) {
    if (!start_) {
        LS_CUDA_CHECK(cudaEventCreate(&start_));
        LS_CUDA_CHECK(cudaEventCreate(&stop_));
    }
    take_pending();
    LS_CUDA_CHECK(cudaEventRecord(start_, s));
}

void StepSplit::gpu_end(cudaStream_t s) {
    LS_CUDA_CHECK(cudaEventRecord(stop_, s));
    pending_ = true;
    ++graphs_;
}

void StepSplit::print(std::FILE* f) {
    take_pending();
    if (!graphs_) return;
    const double n = double(graphs_);
    std::fprintf(f,
                 "cuda backend: per graph, host ms: record %.3f, update/instantiate %.3f, launch %.3f, waiting for the "
                 "previous graph %.3f; GPU ms %.3f (%zu graphs)\n",
                 1e3 * record_s_ / n, 1e3 * update_s_ / n, 1e3 * launch_s_ / n, 1e3 * wait_s_ / n,
                 timed_ ? gpu_ms_ / double(timed_) : 0.0, graphs_);
}

}  // namespace ls::cuda
