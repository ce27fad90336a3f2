// Tensor parallelism's exchange (README "Tensor parallelism", design): one NCCL communicator per
// GPU of a group, and the all-gather that joins per-GPU output slices (core/sched/tensor_split.h
// says which slice each GPU computes and how the gathered blocks become whole rows). A gather
// moves data only, so a split layer keeps one device's bits. Compiled with the CUDA backend
// (NCCL ships with the toolkit); not wired into the scheduler yet, and run only where a machine
// has several GPUs.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace ls::cuda {

class NcclGroup {
public:
    // One communicator per CUDA device listed (ncclCommInitAll). Throws naming NCCL's error.
    explicit NcclGroup(const std::vector<int>& devices);
    ~NcclGroup();
    NcclGroup(const NcclGroup&) = delete;
    NcclGroup& operator=(const NcclGroup&) = delete;
    int size() const { return int(devices_.size()); }
    // On each device d (in one NCCL group call): send[d] holds `count` floats, recv[d] receives
    // count * size() floats, device by device, on streams[d].
    void all_gather(const std::vector<const float*>& send, const std::vector<float*>& recv, size_t count,
                    const std::vector<cudaStream_t>& streams);

private:
    std::vector<int> devices_;
    struct Comms;
    std::unique_ptr<Comms> comms_;
};

}  // namespace ls::cuda
