#include "backends/cuda/cuda_backend.h"
#include "backends/families/families.h"

namespace ls {

namespace {
std::unique_ptr<Backend> make_cuda(const BackendOptions& o) { return make_cuda_backend(o.device); }
}  // namespace

const BackendFamily kCudaFamily{"cuda", true, true, &cuda_list_devices, nullptr, nullptr, &make_cuda};

}  // namespace ls
