// Tensors of the op graph: shape, strides, type, the op that produces them, and where
// their bytes live (a backend buffer and an offset). ne[0] is the innermost dimension.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/quant/dtype.h"
#include "core/ir/op_list.h"
#include "core/ir/op_params.h"

namespace ls {

enum class OpId : int32_t {
    NONE = -1,  // a leaf: weight, cache, input or view base
#define LS_X(E, n, P) E,
    LS_OP_LIST(LS_X)
#undef LS_X
    COUNT
};
const char* op_name(OpId op);

// The parameter struct an op's registry row names: OpParams<OpId::ROPE> is RopeParams.
template <OpId> struct OpParamsOf;
#define LS_X(E, n, P) \
    template <> struct OpParamsOf<OpId::E> { using type = P; };
LS_OP_LIST(LS_X)
#undef LS_X
template <OpId op> using OpParams = typename OpParamsOf<op>::type;

class Backend;

// A block of memory owned by a backend. `host` is non-null when the CPU can address it.
struct Buffer {
    Backend* backend = nullptr;
    size_t size = 0;
    uint8_t* host = nullptr;
    void* impl = nullptr;  // backend-private handle (device memory)
    virtual ~Buffer() = default;
};

constexpr int kMaxDims = 4;
constexpr int kMaxSrc = 6;

enum class TensorKind : uint8_t {
    Intermediate,  // placed by the graph planner in the compute buffer
    Input,         // like Intermediate, filled from host data before compute
    Persistent,    // weights, caches: placed by their owner, outlive graphs
};

struct Tensor {
    DType type = DType::F32;
    int64_t ne[kMaxDims] = {1, 1, 1, 1};
    size_t nb[kMaxDims] = {0, 0, 0, 0};
    OpId op = OpId::NONE;
    Tensor* src[kMaxSrc] = {};
    alignas(8) uint8_t params[32] = {};
    TensorKind kind = TensorKind::Intermediate;
    // A view shares the bytes of view_src starting at view_offs. In-place ops (set_rows)
    // produce views of their destination.
    Tensor* view_src = nullptr;
    size_t view_offs = 0;
    Buffer* buffer = nullptr;
    size_t offset = 0;
    std::string name;

    int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    int64_t nrows() const { return ne[1] * ne[2] * ne[3]; }
    size_t row_size() const { return row_bytes(type, ne[0]); }
    // Bytes spanned, honouring strides.
    size_t nbytes() const;
    bool is_contiguous() const;
    // Host address of the first byte (host-visible buffers only).
    uint8_t* data() const { return buffer && buffer->host ? buffer->host + offset : nullptr; }
    template <class T> T* data_as() const { return reinterpret_cast<T*>(data()); }
    // Byte address of row (i1, i2, i3).
    uint8_t* row(int64_t i1, int64_t i2 = 0, int64_t i3 = 0) const {
        return data() + i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
    }

    template <class P> void set_params(const P& p) {
        static_assert(sizeof(P) <= sizeof(params) && std::is_trivially_copyable_v<P>);
        std::memcpy(params, &p, sizeof(P));
    }
    // The parameters of this node's op, typed by its registry row.
    template <OpId op> OpParams<op> params_of() const { return get_params<OpParams<op>>(); }
    template <class P> P get_params() const {
        static_assert(sizeof(P) <= sizeof(params) && std::is_trivially_copyable_v<P>);
        P p;
        std::memcpy(&p, params, sizeof(P));
        return p;
    }
};

// The same extent in every dimension (types and strides aside).
inline bool same_shape(const Tensor& a, const Tensor& b) {
    for (int d = 0; d < kMaxDims; ++d)
        if (a.ne[d] != b.ne[d]) return false;
    return true;
}

// Sets contiguous strides for t's type and shape.
void set_contiguous_strides(Tensor& t);
std::string shape_str(const Tensor& t);

}  // namespace ls
