// Where a CUDA step's time goes, for the GPU sessions that have minutes to find out:
//  - OpProfile (LOCKSTEP_PROFILE=1): every op launched on its own between two CUDA events,
//    without synchronizing between ops, so each row is the kernels' GPU time (launch gaps
//    excluded), keyed by op and shapes; printed when the backend goes away.
//  - StepSplit (LOCKSTEP_CUDA_VERBOSE=1): per graph, the host's time to record the launches,
//    to update or instantiate the executable graph and to launch it, the time the host waited
//    for the previous graph, and the graph's GPU time: whether a step is bound by the host
//    or by the kernels.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "core/ir/op_times.h"
#include "core/ir/tensor.h"

namespace ls::cuda {

class OpProfile {
public:
    ~OpProfile();
    void begin(cudaStream_t s);                       // before an op's launches
    // after them; fused: the next node, run in the same kernel (its row is "a+b")
    void end(cudaStream_t s, const Tensor& node, const Tensor* fused = nullptr);
    void end_graph(cudaStream_t s);                   // synchronizes, adds this graph's ops
    void print(std::FILE* f) const;

private:
    cudaEvent_t event(size_t i);
    std::vector<cudaEvent_t> events_;
    std::vector<std::string> keys_;  // this graph's ops, in order
    OpTimes times_;
};

class StepSplit {
public:
    ~StepSplit();
    void gpu_begin(cudaStream_t s);  // just before the graph launch
    void gpu_end(cudaStream_t s);    // just after
    void add_wait(double s) { wait_s_ += s; }
    void add_record(double s) { record_s_ += s; }
    void add_update(double s) { update_s_ += s; }
    void add_launch(double s) { launch_s_ += s; }
    void print(std::FILE* f);

private:
    void take_pending();  // adds the last graph's GPU time once it has run
    cudaEvent_t start_ = nullptr, stop_ = nullptr;
    bool pending_ = false;
    double wait_s_ = 0, record_s_ = 0, update_s_ = 0, launch_s_ = 0, gpu_ms_ = 0;
    size_t graphs_ = 0, timed_ = 0;
};

}  // namespace ls::cuda
