#include "backends/cuda/nccl/nccl_gather.h"

#include <nccl.h>

#include <stdexcept>
#include <string>

namespace ls::cuda {

namespace {
void check(ncclResult_t r, const char* what) {
    if (r != ncclSuccess) throw std::runtime_error(std::string("nccl: ") + what + " failed: " + ncclGetErrorString(r));
}
}  // namespace

struct NcclGroup::Comms {
    std::vector<ncclComm_t> c;
};

NcclGroup::NcclGroup(const std::vector<int>& devices) : devices_(devices), comms_(std::make_unique<Comms>()) {
    if (devices_.empty()) throw std::invalid_argument("nccl: a group needs at least one device");
    comms_->c.resize(devices_.size());
    check(ncclCommInitAll(comms_->c.data(), int(devices_.size()), devices_.data()), "ncclCommInitAll");
}

NcclGroup::~NcclGroup() {
    for (ncclComm_t c : comms_->c) ncclCommDestroy(c);
}

void NcclGroup::all_gather(const std::vector<const float*>& send, const std::vector<float*>& recv, size_t count,
                           const std::vector<cudaStream_t>& streams) {
    const size_t n = devices_.size();
    if (send.size() != n || recv.size() != n || streams.size() != n)
        throw std::invalid_argument("nccl: all_gather needs a send buffer, a receive buffer and a stream per device");
    check(ncclGroupStart(), "ncclGroupStart");
    for (size_t d = 0; d < n; ++d) {
        if (cudaSetDevice(devices_[d]) != cudaSuccess) throw std::runtime_error("nccl: cudaSetDevice(" + std::to_string(devices_[d]) + ") failed");
        check(ncclAllGather(send[d], recv[d], count, ncclFloat32, comms_->c[d], streams[d]), "ncclAllGather");
    }
    check(ncclGroupEnd(), "ncclGroupEnd");
}

}  // namespace ls::cuda
