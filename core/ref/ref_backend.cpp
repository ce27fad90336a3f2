
#include "core/ir/backend.h"
#include "core/ir/host_buffer.h"
#include "core/ref/ref_ops.h"
#include "core/ref/ref_backend.h"

namespace ls {
namespace {

using RefKernel = void (*)(const Tensor&);
constexpr RefKernel kKernels[] = {
#define LS_X(E, n, P) &ref::n,
    LS_OP_LIST(LS_X)
#undef LS_X
};

class ReferenceBackend final : public HostBackend {
public:
    std::string name() const override { return "reference"; }
    void compute(const Graph& g) override {
        for (const Tensor* n : g.nodes()) kKernels[static_cast<int>(n->op)](*n);
    }
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace ls
