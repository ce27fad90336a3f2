// Kernel launches, run at once or recorded. LS_LAUNCH(kernel, grid, block, stream)(args...)
// launches the kernel on the stream, unless this thread is recording a graph's launches
// (recording(), set by the backend around its launchers): then the launch becomes a
// LaunchRecord (the kernel, its grid, block and argument bytes) and nothing runs.
//
// Why record instead of capturing the stream: a decode step is some 500 launches, and
// capturing each of them and applying the captured graph to the kept executable one
// (cudaGraphExecUpdate) cost 0.7-2 ms of host time a step on an H200, a quarter of a small
// model's token. From records, the backend compares each launch with the one the kept
// executable graph holds and sets only the nodes that differ (cudaGraphExecKernelNodeSetParams):
// in a decode step, the few whose arguments follow the context length.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace ls::cuda {

struct LaunchRecord {
    const void* func = nullptr;     // the kernel (emulated: one address per launch site and kernel)
    dim3 grid, block;
    std::vector<uint8_t> args;      // each argument's bytes at its own aligned offset
    std::vector<uint32_t> offsets;  // where each argument starts in args
#if defined(LS_CUDA_EMU)
    std::function<void()> run;  // the emulated launch, run when its graph is launched
#endif
    // The same kernel with the same grid, block and argument bytes. (Padding inside an
    // argument struct may differ where the values do not: a node set again for nothing.)
    bool same_launch(const LaunchRecord& o) const {
        return func == o.func && grid.x == o.grid.x && grid.y == o.grid.y && grid.z == o.grid.z && block.x == o.block.x &&
               block.y == o.block.y && block.z == o.block.z && args == o.args;
    }
    void begin(const void* f, dim3 g, dim3 b) {
        func = f;
        grid = g;
        block = b;
        args.clear();
        offsets.clear();
    }
    template <class T> void put(const T& v) {
        static_assert(std::is_trivially_copyable_v<T>, "kernel arguments are copied as bytes");
        const size_t off = (args.size() + alignof(T) - 1) / alignof(T) * alignof(T);
        args.resize(off + sizeof(T));
        // An empty argument (a functor such as Gelu) has one byte of no value, whatever
        // was on the stack: copied, it would set the node again every step for nothing.
        if constexpr (std::is_empty_v<T>) args[off] = 0;
        else std::memcpy(args.data() + off, &v, sizeof(T));
        offsets.push_back(uint32_t(off));
    }
};

// A graph's launches in order. Records are reused from graph to graph (their vectors keep
// their capacity), so a decode step allocates nothing.
struct LaunchList {
    std::vector<LaunchRecord> recs;
    size_t n = 0;  // recs[0, n) are this graph's
    LaunchRecord& next() {
        if (n == recs.size()) recs.emplace_back();
        return recs[n++];
    }
};

// Where this thread's launches go: null (run them) or the list being recorded.
LaunchList*& recording();

// The record as a node after `prev` (null: the first) of graph g, and set again in the
// executable graph e instantiated from it.
cudaError_t add_record_node(cudaGraph_t g, cudaGraphNode_t prev, const LaunchRecord& r, cudaGraphNode_t* node);
cudaError_t set_record_node(cudaGraphExec_t e, cudaGraphNode_t node, const LaunchRecord& r);

#if defined(__CUDACC__) && !defined(LS_CUDA_EMU)
template <class... P> struct KernelLaunch {
    void (*kernel)(P...);
    dim3 grid, block;
    cudaStream_t stream;
    template <class... A> void operator()(A&&... a) const {
        static_assert(sizeof...(A) == sizeof...(P), "the kernel's arguments");
        if (LaunchList* l = recording()) {
            LaunchRecord& r = l->next();
            r.begin(reinterpret_cast<const void*>(kernel), grid, block);
            (r.put(P(std::forward<A>(a))), ...);  // as the kernel's parameter types, as <<<>>> converts them
            return;
        }
        kernel<<<grid, block, 0, stream>>>(std::forward<A>(a)...);
    }
};
template <class... P> KernelLaunch<P...> kernel_launch(void (*k)(P...), dim3 grid, dim3 block, cudaStream_t stream) {
    return {k, grid, block, stream};
}
#define LS_LAUNCH(kernel, grid, block, stream) ::ls::cuda::kernel_launch((kernel), dim3(grid), dim3(block), (stream))
#elif defined(LS_CUDA_EMU)
// The emulator: the kernel wrapped in a generic lambda (emu/cuda_runtime.h runs it on every
// thread); recorded with its arguments as passed.
template <class K> const void* launch_site_tag() {
    static const char tag = 0;
    return &tag;
}
template <class K> struct EmuLaunch {
    dim3 grid, block;
    cudaStream_t stream;
    K kernel;
    template <class... A> void operator()(A... a) const {
        if (LaunchList* l = recording()) {
            if (!::ls::emu::launch_config_ok(grid, block)) return;  // the error cudaGetLastError reports
            LaunchRecord& r = l->next();
            r.begin(launch_site_tag<K>(), grid, block);
            (r.put(a), ...);
            r.run = [g = grid, b = block, k = kernel, tup = std::make_tuple(a...)] {
                ::ls::emu::launch(::ls::emu::Dim3{g.x, g.y, g.z}, ::ls::emu::Dim3{b.x, b.y, b.z}, [&] { std::apply(k, tup); });
            };
            return;
        }
        (::ls::emu::LaunchConfig{grid, block, stream} + kernel)(a...);
    }
};
template <class K> EmuLaunch<K> emu_launch(dim3 grid, dim3 block, cudaStream_t stream, K k) { return {grid, block, stream, k}; }
#define LS_LAUNCH(kernel, grid, block, stream) \
    ::ls::cuda::emu_launch(dim3(grid), dim3(block), (stream), [](auto... a_) { kernel(a_...); })
#endif

}  // namespace ls::cuda
