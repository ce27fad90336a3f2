// The emulated CUDA runtime of cuda_runtime.h (LOCKSTEP_CUDA_EMU builds only).
#include "backends/cuda/emu/cuda_runtime.h"

#include <chrono>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace ls::emu {

struct Stream {};
struct GraphRec {
    std::vector<std::function<void()>> work;
};

namespace {

cudaError_t g_last = cudaSuccess;  // what cudaGetLastError returns (then clears)
constexpr size_t kDeviceBytes = size_t(16) << 30;
std::mutex g_mu;
std::map<void*, std::pair<int, size_t>> g_allocs;  // device allocations: device, bytes
constexpr int kMaxDevices = 8;
size_t g_used[kMaxDevices] = {};
thread_local int t_device = 0;  // cudaSetDevice's, per host thread as in CUDA
// Devices the emulator shows: LOCKSTEP_CUDA_EMU_DEVICES (1..8, default 1), so that placements
// over two CUDA devices run where there is no GPU (each device has its own memory count; the
// bytes all live in host memory).
int device_count() {
    static const int n = [] {
        const char* e = std::getenv("LOCKSTEP_CUDA_EMU_DEVICES");
        const int v = e ? std::atoi(e) : 1;
        return v >= 1 && v <= kMaxDevices ? v : 1;
    }();
    return n;
}

ApiCounts g_counts;

cudaError_t fail(cudaError_t e) {
    g_last = e;
    return e;
}

}  // namespace

ApiCounts& api_counts() { return g_counts; }

cudaError_t graph_add_work(cudaGraph_t g, cudaGraphNode_t prev, std::function<void()> work, cudaGraphNode_t* node) {
    // A chain: each node after the last one added.
    if (!g || !node || prev != (g->work.empty() ? nullptr : reinterpret_cast<cudaGraphNode_t>(g->work.size())))
        return fail(cudaErrorInvalidValue);
    g->work.push_back(std::move(work));
    ++g_counts.graph_nodes;
    *node = reinterpret_cast<cudaGraphNode_t>(g->work.size());  // index + 1: never null
    return cudaSuccess;
}
cudaError_t exec_set_work(cudaGraphExec_t e, cudaGraphNode_t node, std::function<void()> work) {
    const auto i = reinterpret_cast<uintptr_t>(node);
    if (!e || i < 1 || i > e->work.size()) return fail(cudaErrorInvalidValue);
    ++g_counts.node_updates;
    e->work[i - 1] = std::move(work);
    return cudaSuccess;
}

bool launch_config_ok(dim3 grid, dim3 block) {
    const uint64_t threads = uint64_t(block.x) * block.y * block.z;
    const bool ok = threads >= 1 && threads <= 1024 && block.x <= 1024 && block.y <= 1024 && block.z <= 64 && grid.x >= 1 &&
                    grid.x <= 2147483647u && grid.y >= 1 && grid.y <= 65535 && grid.z >= 1 && grid.z <= 65535;
    if (!ok) g_last = cudaErrorInvalidConfiguration;
    return ok;
}

}  // namespace ls::emu

using namespace ls::emu;

const char* cudaGetErrorName(cudaError_t e) {
    switch (e) {
        case cudaSuccess: return "cudaSuccess";
        case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
        case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
        case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
        case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
        case cudaErrorNoDevice: return "cudaErrorNoDevice";
    }
    return "cudaErrorUnknown";
}
const char* cudaGetErrorString(cudaError_t e) {
    switch (e) {
        case cudaSuccess: return "no error";
        case cudaErrorMemoryAllocation: return "out of memory";
        case cudaErrorInvalidConfiguration: return "invalid configuration argument";
        default: return "emulated CUDA error";
    }
}
cudaError_t cudaGetLastError() {
    const cudaError_t e = g_last;
    g_last = cudaSuccess;
    return e;
}
cudaError_t cudaGetDeviceCount(int* n) {
    *n = device_count();
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
    if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
    t_device = device;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
    if (device < 0 || device >= device_count()) return fail(cudaErrorInvalidDevice);
    std::memset(prop, 0, sizeof *prop);
    std::strcpy(prop->name, "lockstep CUDA emulator (host)");
    prop->totalGlobalMem = kDeviceBytes;
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = 1;
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
    std::lock_guard<std::mutex> lk(g_mu);
    *free_bytes = kDeviceBytes - g_used[t_device];
    *total_bytes = kDeviceBytes;
    return cudaSuccess;
}
cudaError_t cudaMalloc(void** p, size_t n) {
    std::lock_guard<std::mutex> lk(g_mu);
    ++g_counts.mallocs;
    if (n > kDeviceBytes - g_used[t_device]) return fail(cudaErrorMemoryAllocation);
    *p = std::aligned_alloc(256, (n + 255) / 256 * 256);
    if (!*p) return fail(cudaErrorMemoryAllocation);
    g_allocs[*p] = {t_device, n};
    g_used[t_device] += n;
    return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
    if (!p) return cudaSuccess;
    std::lock_guard<std::mutex> lk(g_mu);
    ++g_counts.frees;
    auto it = g_allocs.find(p);
    if (it == g_allocs.end()) return fail(cudaErrorInvalidValue);
    g_used[it->second.first] -= it->second.second;
    g_allocs.erase(it);
    std::free(p);
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t n) {
    ++g_counts.host_mallocs;
    *p = std::aligned_alloc(256, (n + 255) / 256 * 256);
    return *p ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}
cudaError_t cudaFreeHost(void* p) {
    std::free(p);
    return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind, cudaStream_t s) {
    (void)s;
    ++g_counts.copies;
    std::memcpy(dst, src, n);
    return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* dst, int v, size_t n, cudaStream_t s) {
    (void)s;
    ++g_counts.copies;
    std::memset(dst, v, n);
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) {
    *s = new Stream;
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    delete s;
    return cudaSuccess;
}
// Work ran when it was submitted.
cudaError_t cudaStreamSynchronize(cudaStream_t) {
    ++g_counts.stream_syncs;
    return cudaSuccess;
}
cudaError_t cudaGraphCreate(cudaGraph_t* g, unsigned) {
    *g = new GraphRec;
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* e, cudaGraph_t g, unsigned long long) {
    ++g_counts.instantiations;
    *e = new GraphRec{g->work};
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) {
    ++g_counts.graph_launches;
    (void)s;
    for (auto& w : e->work) w();
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) {
    delete g;
    return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
    delete e;
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) {
    *e = new double(0);
    return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, 0); }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
    *e = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
    return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop) {
    *ms = float(*stop - *start);
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) {
    ++g_counts.event_syncs;
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    delete e;
    return cudaSuccess;
}
