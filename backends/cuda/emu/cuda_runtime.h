// The part of the CUDA runtime API the CUDA backend uses, emulated on the host, for the
// LOCKSTEP_CUDA_EMU build (the sanitizer build of tools/scripts/test.sh): the backend's own sources
// compile with the host compiler against this header instead of the toolkit's, and its
// kernels run through cuda_emu.h. One emulated device; device memory is host memory;
// work runs when it is submitted (a stream is always idle); stream capture records the
// submitted work, and a graph replays it. Launch configurations are checked as CUDA does
// (threads per block, grid limits) and reported through cudaGetLastError.
//
// This finds what a GPU-less machine can find in the backend: wrong indexing, missing
// synchronization inside a block, out-of-bounds accesses (under ASan), grid limits, host
// logic. It cannot find races between blocks, timing, or hardware arithmetic differences.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <tuple>
#include <utility>

#include "backends/cuda/emu/cuda_emu.h"

enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevice = 101,
    cudaErrorNoDevice = 100,
};
using cudaError = cudaError_t;
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice };
constexpr unsigned cudaStreamNonBlocking = 1, cudaEventDisableTiming = 2;

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
    constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    int major, minor, multiProcessorCount;
};
struct cudaFuncAttributes {
    int binaryVersion, ptxVersion;
};

namespace ls::emu {
struct Stream;
struct GraphRec;
}  // namespace ls::emu
using cudaStream_t = ls::emu::Stream*;
using cudaGraph_t = ls::emu::GraphRec*;
using cudaGraphExec_t = ls::emu::GraphRec*;
// An event holds the host time it was recorded at: emulated work runs when it is submitted,
// so two events' difference is the time of the work submitted between them.
using cudaEvent_t = double*;

const char* cudaGetErrorName(cudaError_t e);
const char* cudaGetErrorString(cudaError_t e);
cudaError_t cudaGetLastError();
// The emulated device runs any kernel as if compiled for it (sm_90).
template <class F> cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, F*) {
    a->binaryVersion = a->ptxVersion = 90;
    return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int* n);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes);
cudaError_t cudaMalloc(void** p, size_t n);
cudaError_t cudaFree(void* p);
cudaError_t cudaMallocHost(void** p, size_t n);
cudaError_t cudaFreeHost(void* p);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s);
cudaError_t cudaMemsetAsync(void* dst, int v, size_t n, cudaStream_t s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
using cudaGraphNode_t = void*;
cudaError_t cudaGraphCreate(cudaGraph_t* g, unsigned flags);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* e, cudaGraph_t g, unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s);
cudaError_t cudaGraphDestroy(cudaGraph_t g);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned flags);
cudaError_t cudaEventCreate(cudaEvent_t* e);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventDestroy(cudaEvent_t e);

namespace ls::emu {

// The runtime calls the backend made, counted since a test last set them to {}: they pin
// down what a decode step asks of the host (one graph updated in place and launched, no
// allocation, only the synchronizations it needs), which a GPU shows only as lost speed.
struct ApiCounts {
    size_t mallocs = 0, frees = 0, host_mallocs = 0;  // cudaMalloc, cudaFree, cudaMallocHost
    size_t stream_syncs = 0, event_syncs = 0;         // cudaStreamSynchronize, cudaEventSynchronize
    size_t instantiations = 0, graph_launches = 0;
    size_t graph_nodes = 0;     // nodes added to graphs (graph_add_work)
    size_t node_updates = 0;    // nodes of an executable graph set again (exec_set_work)
    size_t direct_kernels = 0;  // kernels launched on a stream, not as a graph's node
    size_t copies = 0;          // cudaMemcpyAsync and cudaMemsetAsync
};
ApiCounts& api_counts();

// The emulated graph's nodes are work run in order when it is launched: a launch's work
// added after node prev (null: first), and a node of an instantiated graph given new work
// (as cudaGraphExecKernelNodeSetParams; counted as node_updates).
cudaError_t graph_add_work(cudaGraph_t g, cudaGraphNode_t prev, std::function<void()> work, cudaGraphNode_t* node);
cudaError_t exec_set_work(cudaGraphExec_t e, cudaGraphNode_t node, std::function<void()> work);
// A kernel launch: the configuration is checked (an invalid one sets the error that
// cudaGetLastError returns and runs nothing), then the kernel runs on every thread.
bool launch_config_ok(dim3 grid, dim3 block);

template <class K> struct BoundLaunch {
    dim3 grid, block;
    cudaStream_t stream;
    K kernel;
    // Work on a stream runs when it is submitted (counted as a direct kernel).
    template <class... A> void operator()(A... args) const {
        if (!launch_config_ok(grid, block)) return;
        ++api_counts().direct_kernels;
        launch(Dim3{grid.x, grid.y, grid.z}, Dim3{block.x, block.y, block.z}, [&] { kernel(args...); });
    }
};
struct LaunchConfig {
    dim3 grid, block;
    cudaStream_t stream;
    template <class K> BoundLaunch<K> operator+(K k) const { return {grid, block, stream, k}; }
};

}  // namespace ls::emu

