#include "cpu/cpu_backend.h"

#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/task_arena.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/ir/host_buffer.h"
#include "core/ir/op_times.h"
#include "cpu/ops/cpu_ops.h"
#include "cpu/scan_single.h"

namespace ls {
namespace {

using CpuKernel = void (*)(const Tensor&);
using KernelTable = std::array<CpuKernel, size_t(OpId::COUNT)>;
constexpr KernelTable kKernels = {
#define LS_X(E, n, P) &cpu::n,
    LS_OP_LIST(LS_X)
#undef LS_X
};
KernelTable single_sequence_scan_kernels() {
    KernelTable k = kKernels;
    k[size_t(OpId::DELTA_SCAN)] = &cpu::delta_scan_single_sequence;
    return k;
}

class CpuBackend final : public HostBackend {
public:
    CpuBackend(int n, bool single_sequence_scan) : kernels_(single_sequence_scan ? single_sequence_scan_kernels() : kKernels) {
        set_threads(n);
    }
    std::string name() const override { return "cpu"; }
    void set_threads(int n) override {
        n_threads_ = n > 0 ? n : tbb::info::default_concurrency();
        arena_ = std::make_unique<tbb::task_arena>(n_threads_);
    }
    void compute(const Graph& g) override {
        const auto g0 = std::chrono::steady_clock::now();
        arena_->execute([&] {
            for (const Tensor* n : g.nodes()) {
                if (!profile_) {
                    kernels_[static_cast<size_t>(n->op)](*n);
                    continue;
                }
                auto t0 = std::chrono::steady_clock::now();
                kernels_[static_cast<size_t>(n->op)](*n);
                times_.add(op_times_key(*n), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            }
        });
        if (profile_) {
            graph_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count();
            times_.end_graph();
        }
    }
    ~CpuBackend() override {
        if (!profile_) return;
        times_.print(stderr, "cpu", "time");
        std::fprintf(stderr, "  %.3f s in compute(), the ops' own time included\n", graph_seconds_);
    }

private:
    const KernelTable kernels_;
    int n_threads_ = 1;
    // LOCKSTEP_PROFILE=1: time each op and its shapes, printed when the backend is destroyed.
    bool profile_ = std::getenv("LOCKSTEP_PROFILE") != nullptr;
    OpTimes times_;
    double graph_seconds_ = 0;
    std::unique_ptr<tbb::task_arena> arena_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int n_threads, bool single_sequence_scan) {
    return std::make_unique<CpuBackend>(n_threads, single_sequence_scan);
}

}  // namespace ls
