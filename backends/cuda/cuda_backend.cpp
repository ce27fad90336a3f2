#include "backends/cuda/cuda_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/cuda/last_reads.h"
#include "backends/cuda/launch_context.h"
#include "backends/cuda/step_profile.h"

namespace ls {
namespace cuda {

std::string error_message(cudaError_t e, const char* call, const char* file, int line) {
    return std::string("CUDA error in ") + call + " (" + file + ":" + std::to_string(line) + "): " + cudaGetErrorName(e) +
           ": " + cudaGetErrorString(e);
}

void check(cudaError_t e, const char* call, const char* file, int line) {
    if (e != cudaSuccess) {
        (void)cudaGetLastError();  // clear a non-sticky error so the next call is not blamed
        throw std::runtime_error(error_message(e, call, file, line));
    }
}

std::string oom_message(int device, const std::string& device_name, size_t needed, size_t free_bytes,
                        size_t total_bytes, const std::string& what) {
    auto mib = [](size_t b) {
        char s[32];
        std::snprintf(s, sizeof s, "%.1f MiB", double(b) / (1024.0 * 1024.0));
        return std::string(s);
    };
    return "CUDA device " + std::to_string(device) + " (" + device_name + "): out of memory allocating " + mib(needed) +
           " for " + what + " (" + mib(free_bytes) + " free of " + mib(total_bytes) + ")";
}

}  // namespace cuda

namespace {

using Launcher = void (*)(const Tensor&, cuda::Ctx&);
constexpr Launcher kLaunchers[] = {
#define LS_X(E, n, P) &cuda::n,
    LS_OP_LIST(LS_X)
#undef LS_X
};
using Supports = bool (*)(const Tensor&);
constexpr Supports kSupports[] = {
#define LS_X(E, n, P) &cuda::supports_##n,
    LS_OP_LIST(LS_X)
#undef LS_X
};
static_assert(std::size(kLaunchers) == size_t(OpId::COUNT) && std::size(kSupports) == size_t(OpId::COUNT));

}  // namespace

// A leaf (OpId::NONE) or an unknown id is nothing to run.
bool cuda::supports_node(const Tensor& n) {
    const auto i = static_cast<int>(n.op);
    return i >= 0 && i < static_cast<int>(OpId::COUNT) && kSupports[i](n);
}

namespace {

struct DeviceBuffer : Buffer {
    int device = 0;
    ~DeviceBuffer() override {
        if (!impl) return;
        cudaSetDevice(device);
        if (cudaError_t e = cudaFree(impl); e != cudaSuccess)  // destructors do not throw
            std::fprintf(stderr, "lockstep: %s\n", cuda::error_message(e, "cudaFree", __FILE__, __LINE__).c_str());
    }
};

// cudaGetDeviceCount with the reason when it fails (no driver, driver too old, ...).
int device_count(std::string* why) {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        if (why) *why = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
        return 0;
    }
    if (n == 0 && why) *why = "the CUDA runtime reports no devices";
    return n;
}

class CudaBackend final : public Backend {
public:
    explicit CudaBackend(int device) : device_(device) {
        std::string why;
        const int n = device_count(&why);
        if (n == 0)
            throw std::runtime_error("the CUDA backend found no usable NVIDIA GPU (" + why +
                                     "); check the driver with nvidia-smi, or use --backend cpu");
        if (device < 0 || device >= n)
            throw std::runtime_error("CUDA device " + std::to_string(device) + " does not exist: this machine has " +
                                     std::to_string(n) + " (--device 0.." + std::to_string(n - 1) + ")");
        LS_CUDA_CHECK(cudaSetDevice(device_));
        cudaDeviceProp prop{};
        LS_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
        device_name_ = prop.name;
        int8_mma_ = cuda::int8_mma_usable(prop.major);
        LS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    }
    ~CudaBackend() override {
        try {
            if (profile_) op_profile_.print(stderr);
            if (verbose_) {
                std::fprintf(stderr, "cuda backend: %zu graphs launched (%zu updated in place setting %zu nodes, %zu instantiated), %zu fell back to direct launches%s; %zu kernels in the last graph%s\n",
                             stats_.graphs, stats_.updates, stats_.node_updates, stats_.instantiations, stats_.fallbacks,
                             use_graphs_ ? "" : "; graphs off", stats_.last_kernels, fuse_ ? "" : " (unfused)");
                split_.print(stderr);
            }
        } catch (const std::exception& e) {  // destructors do not throw
            std::fprintf(stderr, "lockstep: %s\n", e.what());
        }
        cudaSetDevice(device_);
        if (stream_) cudaStreamSynchronize(stream_);
        if (workspace_) cudaFree(workspace_);
        if (act_) cudaFree(act_);
        if (dl_) cudaFreeHost(dl_);
        if (graph_done_) cudaEventDestroy(graph_done_);
        for (auto& e : execs_) e.release();
        if (stream_) cudaStreamDestroy(stream_);
    }

    std::string name() const override { return "cuda"; }

    std::unique_ptr<Buffer> alloc(size_t bytes) override {
        auto b = std::make_unique<DeviceBuffer>();
        b->backend = this;
        b->device = device_;
        b->size = bytes;
        b->impl = device_malloc(bytes, "a buffer");
        return b;
    }
    // wrap_host: Backend's default (alloc + upload once): weights live on the device.

    void upload(Buffer& dst, size_t off, const void* src, size_t n) override {
        check_range(dst, off, n, "upload");
        LS_CUDA_CHECK(cudaSetDevice(device_));
        // Pageable source: the call returns once the bytes are staged, so src may go away.
        if (n) LS_CUDA_CHECK(cudaMemcpyAsync(static_cast<uint8_t*>(dst.impl) + off, src, n, cudaMemcpyHostToDevice, stream_));
    }
    // Through a pinned staging buffer (grown to the largest read, kept): every decode step
    // reads its logits back (1 MB for a 262k vocabulary), and a copy into pageable memory
    // goes through the driver's own staging in small synchronous pieces.
    void download(const Buffer& src, size_t off, void* dst, size_t n) override {
        check_range(src, off, n, "download");
        LS_CUDA_CHECK(cudaSetDevice(device_));
        if (n > dl_size_) {
            LS_CUDA_CHECK(cudaStreamSynchronize(stream_));
            if (dl_) LS_CUDA_CHECK(cudaFreeHost(dl_));
            dl_ = nullptr;
            dl_size_ = 0;
            void* p = nullptr;
            LS_CUDA_CHECK(cudaMallocHost(&p, n));
            dl_ = static_cast<uint8_t*>(p);
            dl_size_ = n;
        }
        if (n) LS_CUDA_CHECK(cudaMemcpyAsync(dl_, static_cast<const uint8_t*>(src.impl) + off, n, cudaMemcpyDeviceToHost, stream_));
        LS_CUDA_CHECK(cudaStreamSynchronize(stream_));
        if (n) std::memcpy(dst, dl_, n);
    }
    void fill(Buffer& dst, size_t off, size_t n, uint8_t v) override {
        check_range(dst, off, n, "fill");
        LS_CUDA_CHECK(cudaSetDevice(device_));
        if (n) LS_CUDA_CHECK(cudaMemsetAsync(static_cast<uint8_t*>(dst.impl) + off, v, n, stream_));
    }

    bool supports(const Tensor& n) const override {
        if (!cuda::supports_node(n)) return false;
        // Persistent sources (weights, caches) must live in this backend's memory.
        for (const Tensor* s : n.src) {
            if (!s) continue;
            const Tensor* base = s;
            while (base->view_src) base = base->view_src;
            if (base->kind == TensorKind::Persistent && base->buffer && base->buffer->backend != this) return false;
        }
        return true;
    }

    // Launches every node in order on the stream; no synchronization between ops. Without
    // LOCKSTEP_PROFILE the launches run as a CUDA graph: a decode step is some 500 small
    // kernels, and as one graph they run without the per-launch gaps. The launchers' launches
    // are recorded (launch_record.h) and compared with those of a kept executable graph of
    // the same kernels: only the nodes whose grid or arguments changed are set again (a
    // decode step: the few that follow the context length), and the graph is launched. A
    // few are kept, so that prompt ubatches, the ubatch that adds the output head and decode
    // steps, which alternate in every chat turn, each keep their own.
    void compute(const Graph& g) override {
        LS_CUDA_CHECK(cudaSetDevice(device_));
        // The previous graph has run before this one is recorded: its scratch buffers are this
        // graph's too, and one that must grow is freed and replaced while recording.
        if (graph_done_) {
            const auto t0 = std::chrono::steady_clock::now();
            LS_CUDA_CHECK(cudaEventSynchronize(graph_done_));
            if (verbose_) split_.add_wait(seconds_since(t0));
        }
        if (use_graphs_ && !profile_) {
            if (launch_as_graph(g)) {
                record_done();
                return;
            }
            // A launch the graph could not take (its configuration, say): run the same
            // launches directly, where an error names its kernel. No launcher reads device
            // data on the host: index data comes from the graph's inputs (core/ir/index_inputs.h).
            ++stats_.fallbacks;
            if (++graph_failures_ >= 3) use_graphs_ = false;  // this graph shape keeps needing that
        }
        launch_all(g);
        if (profile_) op_profile_.end_graph(stream_);
        record_done();
    }
    void synchronize() override {
        LS_CUDA_CHECK(cudaSetDevice(device_));
        LS_CUDA_CHECK(cudaStreamSynchronize(stream_));
    }

private:
    void launch_all(const Graph& g) {
        cuda::Ctx ctx;
        ctx.stream = stream_;
        ctx.int8_mma = int8_mma_;
        ctx.split_decode = split_decode_;
        ctx.graph = &g;
        if (fuse_) {
            reads_.build(g);
            ctx.reads = &reads_;
        }
        ctx.temp = [&](size_t bytes) { return temp(bytes); };
        ctx.act_buffer = [&](size_t bytes) { return act_buffer(bytes); };
        const auto& nodes = g.nodes();
        for (size_t i = 0; i < nodes.size(); ++i) {
            const Tensor* n = nodes[i];
            if (profile_) op_profile_.begin(stream_);
            if (const size_t k = fuse_ ? launch_fused(nodes, i, ctx) : 0) {
                if (profile_) op_profile_.end(stream_, *n, k > 1 ? nodes[i + k - 1] : nullptr);
                i += k - 1;
                continue;
            }
            kLaunchers[static_cast<int>(n->op)](*n, ctx);
            if (profile_) op_profile_.end(stream_, *n);
        }
    }
    // Nodes from i on as fewer kernels where a pattern fits (each small kernel of a decode
    // step costs a few microseconds on the GPU whatever it does): a layer's per-head rows
    // (head_rows), mul_mats over the same activation rows, a residual step with the next norm,
    // and pairs where the second node reads the first. The number of nodes launched; 0: none (nodes[i] goes alone).
    static size_t launch_fused(const std::vector<Tensor*>& nodes, size_t i, cuda::Ctx& ctx) {
        if (const size_t k = cuda::head_rows(nodes, i, ctx)) return k;
        const Tensor& a = *nodes[i];
        if (a.op == OpId::MUL_MAT) {
            const int k = cuda::mul_mat_run(nodes, i);
            if (k < 2) return 0;
            cuda::mul_mat_group(&nodes[i], k, ctx);
            return size_t(k);
        }
        if (const size_t k = cuda::rms_norm_add_norm(nodes, i, ctx)) return k;
        if (i + 1 >= nodes.size()) return 0;
        const Tensor& b = *nodes[i + 1];
        const bool reads_a = b.src[0] == &a || b.src[1] == &a;
        if (!reads_a) return 0;
        if (b.op == OpId::MUL && (a.op == OpId::GELU || a.op == OpId::SILU)) {
            const bool gelu = a.op == OpId::GELU;
            if (i + 2 < nodes.size() && nodes[i + 2]->op == OpId::MUL_MAT && nodes[i + 2]->src[1] == &b) {
                const int k = cuda::mul_mat_run(nodes, i + 2);
                if (gelu ? cuda::gelu_mul_mat(a, b, &nodes[i + 2], k, ctx) : cuda::silu_mul_mat(a, b, &nodes[i + 2], k, ctx)) return 2 + size_t(k);
            }
            return (gelu ? cuda::gelu_mul(a, b, ctx) : cuda::silu_mul(a, b, ctx)) ? 2 : 0;
        }
        if (b.op == OpId::ADD && a.op == OpId::RMS_NORM) return cuda::rms_norm_add(a, b, ctx) ? 2 : 0;
        if (b.op == OpId::MUL_MAT && a.op == OpId::RMS_NORM) {
            const int k = cuda::mul_mat_run(nodes, i + 1);
            return cuda::rms_norm_mul_mat(a, &nodes[i + 1], k, ctx) ? 1 + size_t(k) : 0;
        }
        return 0;
    }
    // Records launch_all's launches, brings a kept executable graph up to them and launches
    // it; false (nothing launched, errors cleared) when no graph could be made of them.
    bool launch_as_graph(const Graph& g) {
        const auto t_record = std::chrono::steady_clock::now();
        // A scratch buffer that grows while recording frees the one that the launches recorded
        // before it point to: record again, at the sizes this graph needs.
        for (int pass = 0;; ++pass) {
            grew_ = false;
            rec_.n = 0;
            cuda::recording() = &rec_;
            bool ok = true;
            try {
                launch_all(g);
            } catch (const std::exception&) {
                ok = false;  // rerun directly: a real error (bad index) is thrown again there
            }
            cuda::recording() = nullptr;
            if (!ok || (grew_ && pass == 1)) {
                (void)cudaGetLastError();
                return false;
            }
            if (!grew_) break;
        }
        const auto t_update = std::chrono::steady_clock::now();
        if (verbose_) split_.add_record(std::chrono::duration<double>(t_update - t_record).count());
        const size_t n = rec_.n;
        auto same_kernels = [&](const ExecSlot& x) {
            if (!x.exec || x.launches.n != n) return false;
            for (size_t i = 0; i < n; ++i)
                if (x.launches.recs[i].func != rec_.recs[i].func) return false;
            return true;
        };
        // The kept graph of these kernels: set the nodes whose launch changed. Else a new
        // graph in a free slot or the least recently used one.
        auto same = std::find_if(execs_.begin(), execs_.end(), same_kernels);
        ExecSlot* slot = same != execs_.end() ? &*same : nullptr;
        bool updated = slot != nullptr;
        for (size_t i = 0; updated && i < n; ++i) {
            if (rec_.recs[i].same_launch(slot->launches.recs[i])) continue;
            if (cuda::set_record_node(slot->exec, slot->nodes[i], rec_.recs[i]) != cudaSuccess) updated = false;
            else ++stats_.node_updates;
        }
        if (updated) {
            ++stats_.updates;
        } else {
            (void)cudaGetLastError();
            if (!slot && execs_.size() < kMaxExecs) slot = &execs_.emplace_back();
            if (!slot)
                slot = &*std::min_element(execs_.begin(), execs_.end(),
                                          [](const ExecSlot& a, const ExecSlot& b) { return a.used < b.used; });
            slot->release();
            if (!slot->build(rec_)) {
                slot->release();
                (void)cudaGetLastError();
                return false;
            }
            ++stats_.instantiations;
        }
        // The slot keeps this graph's records (and gives its old ones back for reuse).
        std::swap(slot->launches, rec_);
        slot->used = ++exec_clock_;
        const auto t_launch = std::chrono::steady_clock::now();
        if (verbose_) {
            split_.add_update(std::chrono::duration<double>(t_launch - t_update).count());
            split_.gpu_begin(stream_);
        }
        LS_CUDA_CHECK(cudaGraphLaunch(slot->exec, stream_));
        if (verbose_) {
            split_.gpu_end(stream_);
            split_.add_launch(seconds_since(t_launch));
        }
        ++stats_.graphs;
        stats_.last_kernels = n;
        graph_failures_ = 0;
        return true;
    }
    void record_done() {
        if (!graph_done_) LS_CUDA_CHECK(cudaEventCreateWithFlags(&graph_done_, cudaEventDisableTiming));
        LS_CUDA_CHECK(cudaEventRecord(graph_done_, stream_));
    }

    void check_range(const Buffer& b, size_t off, size_t n, const char* what) const {
        if (b.backend != this || off > b.size || n > b.size - off)
            throw std::logic_error(std::string("cuda backend: ") + what + " of " + std::to_string(n) + " bytes at offset " +
                                   std::to_string(off) + " outside a buffer of " + std::to_string(b.size) +
                                   (b.backend != this ? " (not this backend's buffer)" : ""));
    }

    void* device_malloc(size_t bytes, const char* what) {
        LS_CUDA_CHECK(cudaSetDevice(device_));
        void* p = nullptr;
        const cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
        if (e == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();
            size_t free_b = 0, total_b = 0;
            LS_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
            throw std::runtime_error(cuda::oom_message(device_, device_name_, bytes, free_b, total_b, what));
        }
        LS_CUDA_CHECK(e);
        return p;
    }

    // Scratch shared by the ops of a graph, grown (never shrunk) on demand.
    void* temp(size_t bytes) {
        bytes = (bytes + 255) / 256 * 256;
        if (bytes > workspace_size_) {
            // Grow with headroom: decode steps need a little more score space every few
            // tokens, and growing (a synchronization) makes that step's graph capture fail.
            bytes = std::max({bytes, workspace_size_ * 2, size_t(16) << 20});
            if (workspace_) {
                LS_CUDA_CHECK(cudaStreamSynchronize(stream_));  // earlier ops may still read the old one
                LS_CUDA_CHECK(cudaFree(workspace_));
            }
            workspace_ = nullptr;
            workspace_size_ = 0;
            workspace_ = device_malloc(bytes, "kernel scratch");
            workspace_size_ = bytes;
            grew_ = true;
        }
        return workspace_;
    }

    // mul_mat's activation rows (Ctx::act_buffer), grown on demand like temp().
    void* act_buffer(size_t bytes) {
        bytes = (bytes + 255) / 256 * 256;
        if (bytes > act_size_) {
            bytes = std::max({bytes, act_size_ + act_size_ / 2, size_t(4) << 20});
            if (act_) {
                LS_CUDA_CHECK(cudaStreamSynchronize(stream_));
                LS_CUDA_CHECK(cudaFree(act_));
            }
            act_ = nullptr;
            act_size_ = 0;
            act_ = device_malloc(bytes, "quantized activations");
            act_size_ = bytes;
            grew_ = true;
        }
        return act_;
    }


    int device_ = 0;
    std::string device_name_;
    bool int8_mma_ = false;  // cuda::int8_mma_usable for this device
    // LOCKSTEP_CUDA_SPLIT=0: decode mul_mat a warp per weight row (Ctx::split_decode), to compare.
    bool split_decode_ = !(std::getenv("LOCKSTEP_CUDA_SPLIT") && std::string(std::getenv("LOCKSTEP_CUDA_SPLIT")) == "0");
    cudaStream_t stream_ = nullptr;
    void* workspace_ = nullptr;
    size_t workspace_size_ = 0;
    void* act_ = nullptr;
    size_t act_size_ = 0;
    uint8_t* dl_ = nullptr;  // pinned staging of download()
    size_t dl_size_ = 0;
    cudaEvent_t graph_done_ = nullptr;
    bool grew_ = false;  // temp() or act_buffer() replaced its buffer (launch_as_graph records again)
    // Executable graphs kept for reuse, one per sequence of kernels (launch_as_graph): the
    // graph it was made from (its nodes are the handles to set) and the launches it holds.
    struct ExecSlot {
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t exec = nullptr;
        std::vector<cudaGraphNode_t> nodes;
        cuda::LaunchList launches;
        uint64_t used = 0;  // exec_clock_ at its last launch
        void release() {
            if (exec) cudaGraphExecDestroy(exec);
            if (graph) cudaGraphDestroy(graph);
            exec = nullptr;
            graph = nullptr;
            nodes.clear();
            launches.n = 0;
        }
        // A graph of l's launches in order, instantiated (into a released slot).
        bool build(const cuda::LaunchList& l) {
            if (cudaGraphCreate(&graph, 0) != cudaSuccess) return false;
            nodes.resize(l.n);
            cudaGraphNode_t prev = nullptr;
            for (size_t i = 0; i < l.n; ++i) {
                if (cuda::add_record_node(graph, prev, l.recs[i], &nodes[i]) != cudaSuccess) return false;
                prev = nodes[i];
            }
            return cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
        }
    };
    cuda::LaunchList rec_;  // the graph being recorded
    static constexpr size_t kMaxExecs = 4;
    std::vector<ExecSlot> execs_;
    uint64_t exec_clock_ = 0;
    // LOCKSTEP_CUDA_GRAPHS=0 launches op by op (for comparisons and debugging).
    bool use_graphs_ = !(std::getenv("LOCKSTEP_CUDA_GRAPHS") && std::string(std::getenv("LOCKSTEP_CUDA_GRAPHS")) == "0");
    int graph_failures_ = 0;
    struct {
        size_t graphs = 0, updates = 0, node_updates = 0, instantiations = 0, fallbacks = 0;
        size_t last_kernels = 0;  // launches in the last graph (a decode step's, after a bench)
    } stats_;  // printed with LOCKSTEP_CUDA_VERBOSE=1
    static double seconds_since(std::chrono::steady_clock::time_point t0) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    // LOCKSTEP_PROFILE: ops launched one by one between events (step_profile.h).
    bool profile_ = std::getenv("LOCKSTEP_PROFILE") != nullptr;
    // LOCKSTEP_CUDA_FUSE=0: every node its own kernel (launch_pair off), to compare.
    bool fuse_ = !(std::getenv("LOCKSTEP_CUDA_FUSE") && std::string(std::getenv("LOCKSTEP_CUDA_FUSE")) == "0");
    cuda::OpProfile op_profile_;
    cuda::LastReads reads_;  // the fused groups' view of the graph being launched
    // LOCKSTEP_CUDA_VERBOSE: graph counts and the host/GPU split of a step.
    bool verbose_ = std::getenv("LOCKSTEP_CUDA_VERBOSE") != nullptr;
    cuda::StepSplit split_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int device) { return std::make_unique<CudaBackend>(device); }

int cuda_device_count() { return device_count(nullptr); }

std::vector<DeviceInfo> cuda_list_devices() {
    std::vector<DeviceInfo> v;
    const int n = device_count(nullptr);
    for (int i = 0; i < n; ++i) {
        cudaDeviceProp prop{};
        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
            (void)cudaGetLastError();
            continue;
        }
        DeviceInfo d;
        d.backend = "cuda";
        d.index = i;
        d.name = prop.name;
        d.memory_total = prop.totalGlobalMem;
        size_t free_b = 0, total_b = 0;
        if (cudaSetDevice(i) == cudaSuccess && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) d.memory_free = free_b;
        else (void)cudaGetLastError();
        d.features = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
                     std::to_string(prop.multiProcessorCount) + " SMs";
        v.push_back(d);
    }
    return v;
}

}  // namespace ls
