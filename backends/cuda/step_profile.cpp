#include "backends/cuda/step_profile.h"

#include <algorithm>
#include <cstdio>

#include "backends/cuda/launch_context.h"
#include "core/quant/dtype.h"

namespace ls::cuda {
namespace {

std::string shape(const Tensor& t) {
    char buf[96];
    int len = std::snprintf(buf, sizeof buf, "%s[%lld", dtype_name(t.type), (long long)t.ne[0]);
    for (int d = 1; d < 4 && t.ne[d] > 1 && len < int(sizeof buf); ++d)
        len += std::snprintf(buf + len, sizeof buf - size_t(len), ",%lld", (long long)t.ne[d]);
    return std::string(buf) + "]";
}

// "mul_mat q4_k[2048,8192] x f32[2048,1]": the op and its first two sources' shapes, so the
// rows separate the matrices of a step and prompt from decode.
std::string op_key(const Tensor& n) {
    std::string k = op_name(n.op);
    if (n.src[0]) k.append(" ").append(shape(*n.src[0]));
    if (n.src[1]) k.append(" x ").append(shape(*n.src[1]));
    return k;
}

}  // namespace

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
    keys_.push_back(fused ? op_key(node) + " + " + op_key(*fused) : op_key(node));
}

void OpProfile::end_graph(cudaStream_t s) {
    LS_CUDA_CHECK(cudaStreamSynchronize(s));
    for (size_t i = 0; i < keys_.size(); ++i) {
        float ms = 0;
        LS_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[2 * i], events_[2 * i + 1]));
        Row& r = rows_[keys_[i]];
        r.ms += ms;
        ++r.calls;
        graph_ms_ += ms;
    }
    if (!keys_.empty()) ++graphs_;
    keys_.clear();
}

void OpProfile::print(std::FILE* f) const {
    std::vector<std::pair<std::string, Row>> v(rows_.begin(), rows_.end());
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
    std::fprintf(f, "cuda backend: GPU time per op and shapes (LOCKSTEP_PROFILE; %zu graphs, %.3f ms of kernels each on average)\n",
                 graphs_, graphs_ ? graph_ms_ / double(graphs_) : 0.0);
    std::fprintf(f, "  %10s %6s %9s %10s  %s\n", "ms", "share", "calls", "us/call", "op and shapes");
    for (const auto& [k, r] : v)
        std::fprintf(f, "  %10.3f %5.1f%% %9zu %10.2f  %s\n", r.ms, graph_ms_ > 0 ? 100.0 * r.ms / graph_ms_ : 0.0, r.calls,
                     1e3 * r.ms / double(r.calls ? r.calls : 1), k.c_str());
}

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
