#include <cstring>

#include "core/backend.h"
#include "core/host_buffer.h"
#include "core/ref/ref_ops.h"

namespace ls {
namespace {

using RefKernel = void (*)(const Tensor&);
constexpr RefKernel kKernels[] = {
#define LS_X(E, n) &ref::n,
    LS_OP_LIST(LS_X)
#undef LS_X
};

class ReferenceBackend final : public Backend {
public:
    std::string name() const override { return "reference"; }
    std::unique_ptr<Buffer> alloc(size_t bytes) override { return make_host_buffer(this, bytes); }
    std::unique_ptr<Buffer> wrap_host(const void* p, size_t bytes) override { return wrap_host_memory(this, p, bytes); }
    void upload(Buffer& dst, size_t off, const void* src, size_t n) override { std::memcpy(dst.host + off, src, n); }
    void download(const Buffer& src, size_t off, void* dst, size_t n) override { std::memcpy(dst, src.host + off, n); }
    void fill(Buffer& dst, size_t off, size_t n, uint8_t v) override { std::memset(dst.host + off, v, n); }
    bool supports(const Tensor& n) const override { return n.op != OpId::NONE; }
    void compute(const Graph& g) override {
        for (const Tensor* n : g.nodes()) kKernels[static_cast<int>(n->op)](*n);
    }
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend() { return std::make_unique<ReferenceBackend>(); }

}  // namespace ls
