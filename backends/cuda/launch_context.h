// What every op launcher (one .cu file per op, named as in core/ir/op_list.h) works with on
// the host: the per-graph launch context Ctx, error checking, device addresses, and the
// launcher and supports declarations generated from the op registry, so that an op
// without either fails to link instead of being skipped.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/cuda/launch_record.h"
#include "core/ir/graph.h"

namespace ls::cuda {

class LastReads;

// "CUDA error in <call> (<file>:<line>): <name>: <description>".
std::string error_message(cudaError_t e, const char* call, const char* file, int line);
// Throws std::runtime_error with error_message() unless e == cudaSuccess.
void check(cudaError_t e, const char* call, const char* file, int line);
#define LS_CUDA_CHECK(call) ::ls::cuda::check((call), #call, __FILE__, __LINE__)
// After a kernel launch: a bad configuration is reported here, naming the kernel.
#define LS_CUDA_CHECK_LAUNCH(kernel) ::ls::cuda::check(cudaGetLastError(), "launch of " kernel, __FILE__, __LINE__)

// LS_LAUNCH(kernel, grid, block, stream)(args...): launch_record.h.

// "CUDA device 0 (NAME): out of memory allocating X MiB for WHAT (Y MiB free of Z MiB)".
std::string oom_message(int device, const std::string& device_name, size_t needed, size_t free_bytes,
                        size_t total_bytes, const std::string& what);

// What a kernel launcher gets besides its node.
struct Ctx {
    cudaStream_t stream = nullptr;
    bool int8_mma = false;  // mul_mat may use the tensor-core kernel (int8_mma_usable)
    // Decode mul_mat may split a weight row over several warps (dot_q_split_kernel);
    // LOCKSTEP_CUDA_SPLIT=0 keeps a warp per row, to compare.
    bool split_decode = true;
    // The graph being launched: index data (attention's positions and sequences) is read on
    // the host from its inputs (core/ir/index_inputs.h), never from the device.
    const Graph* graph = nullptr;
    // Where the graph's tensors are last read (last_reads.h), for the fused groups; null
    // where fusion is off.
    const LastReads* reads = nullptr;
    // Device scratch for the current op (quantized activations, scores, tables). The next
    // op may reuse it: the stream orders them.
    std::function<void*(size_t)> temp;

    // mul_mat's quantized activation rows: their own device buffer (not temp), so that
    // consecutive mul_mats over the same activations (q/k/v, gate/up) quantize them once.
    std::function<void*(size_t)> act_buffer;
    struct ActRows {
        const Tensor* src = nullptr;  // the activation node (the same node: the same values,
                                      // its memory is live until its last reader)
        DType type = DType::F32;      // what the rows were quantized to (read only while src is set)
    } act_rows;         // what act_buffer holds now (reset per graph)
};

// Whether the tensor-core integer kernels can run on the current device: compute capability
// 8.0 or later, and this build holds their sm_80+ code for it (a build for older
// architectures compiles them to a trap). LOCKSTEP_CUDA_NO_MMA=1 turns them off, to compare.
bool int8_mma_usable(int cc_major);

// Device address of a tensor's first byte.
inline uint8_t* dptr(const Tensor& t) { return static_cast<uint8_t*>(t.buffer->impl) + t.offset; }

// Whether two F32 tensors' bytes (first element to the last one's end) do not overlap.
inline bool bytes_apart(const Tensor& a, const Tensor& b) {
    auto span = [](const Tensor& t) {
        size_t last = sizeof(float);  // the fused ops are F32: the last element's bytes
        for (int i = 0; i < 4; ++i) last += size_t(t.ne[i] > 0 ? t.ne[i] - 1 : 0) * t.nb[i];
        return last;
    };
    const uint8_t *x = dptr(a), *y = dptr(b);
    return x + span(a) <= y || y + span(b) <= x;
}

// Whether a fused pair may write its output out over the first node's input: the graph's
// allocator may place the second node's output anywhere in memory the first node's input
// leaves free (that input is dead once the first node ran), also overlapping it in part, which
// a kernel doing both nodes at once would read after another thread wrote it. Apart, or the
// very same view (each element then read before its own thread writes it): safe.
inline bool fused_output_safe(const Tensor& out, const Tensor& in) {
    if (bytes_apart(out, in)) return true;
    if (dptr(out) != dptr(in)) return false;
    for (int d = 0; d < 4; ++d)
        if (out.ne[d] != in.ne[d] || out.nb[d] != in.nb[d]) return false;
    return true;
}

inline unsigned blocks_for(int64_t n, int threads) { return unsigned((n + threads - 1) / threads); }

// Per op, in backends/cuda/<op>.cu: the kernel launcher, and which nodes its kernels run
// (types, layouts). A node the launcher cannot run is refused up front (run_graph names
// it) rather than computed wrongly.
#define LS_X(E, n, P)                        \
    void n(const Tensor& dst, Ctx& ctx);     \
    bool supports_##n(const Tensor& node);
LS_OP_LIST(LS_X)
#undef LS_X

// Two consecutive nodes in fewer kernels (CudaBackend's fused pairs): an activation and the
// mul that reads it, a norm and the add that reads it, as one kernel. Both nodes' outputs are
// written, with the two kernels' arithmetic; false (nothing launched) where the pair's shapes
// do not fit.
bool gelu_mul(const Tensor& act, const Tensor& mul, Ctx& ctx);
bool silu_mul(const Tensor& act, const Tensor& mul, Ctx& ctx);
bool rms_norm_add(const Tensor& norm, const Tensor& add, Ctx& ctx);
// The activation and its mul as above, with the quantization of the product for the mul_mats
// that read it (mms, a run as mul_mat_run finds: the FFN's down projection), then theirs.
bool gelu_mul_mat(const Tensor& act, const Tensor& mul, Tensor* const* mms, int n, Ctx& ctx);
bool silu_mul_mat(const Tensor& act, const Tensor& mul, Tensor* const* mms, int n, Ctx& ctx);
// A norm and the mul_mats that read it (n of them, a run as mul_mat_run finds): the norm's
// kernel also quantizes the rows for them (which then skip their quantizer), then their kernel.
bool rms_norm_mul_mat(const Tensor& norm, Tensor* const* mms, int n, Ctx& ctx);
// Nodes i..i+2 a norm, the add that reads it and a norm of the add (a residual step, then
// the next sublayer's norm: z = r + norm1(x), y2 = norm2(z)), or nodes i..i+1 the add and the
// norm (z = x + r, y2 = norm2(z)), then the mul_mats that read y2 (a run): the norms, the add
// and the mul_mats' quantizer as one kernel, then the mul_mats. The number of nodes
// launched; 0 (nothing launched) where they do not fit.
size_t rms_norm_add_norm(const std::vector<Tensor*>& nodes, size_t i, Ctx& ctx);
// The mul_mats from node i on that read the same activation rows at decode (fewer rows than
// the tiled kernels take), with weights of one type and row length: how many (at most 3:
// a layer's q, k and v, its gate and up); 1 where nodes[i] goes alone, 0 where it is no
// mul_mat CUDA runs. mul_mat_group runs such a run as one launch (after their quantizer,
// unless the rows are already there).
int mul_mat_run(const std::vector<Tensor*>& nodes, size_t i);
void mul_mat_group(Tensor* const* mms, int n, Ctx& ctx);

// The per-head row ops from node i on (head_rows.cu: rms_norm, rope and set_rows over the
// q/k/v rows of a layer) as one kernel: the number of nodes it ran, 0 (nothing launched)
// where nodes[i] does not start such a group of two or more.
size_t head_rows(const std::vector<Tensor*>& nodes, size_t i, Ctx& ctx);

// supports_<op> of the node's op (the table in cuda_backend.cpp); shared by
// CudaBackend::supports and the tests.
bool supports_node(const Tensor& node);

}  // namespace ls::cuda
