#include "core/ir/ops.h"

#include "core/rules/attention_rule.h"
#include "core/rules/rope_rule.h"
#include "core/rules/topk_rule.h"

#include <cfloat>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace ls::ops {
namespace {

[[noreturn]] void fail(const char* op, const std::string& what) {
    throw std::invalid_argument(std::string(op) + ": " + what);
}
void expect_type(const char* op, const Tensor* t, DType type, const char* role) {
    if (t->type != type)
        fail(op, std::string(role) + " must be " + dtype_name(type) + ", got " + shape_str(*t));
}
void expect_rows_contiguous(const char* op, const Tensor* t, const char* role) {
    if (t->nb[1] != t->row_size() && t->ne[1] > 1)
        fail(op, std::string(role) + " rows must be contiguous");
}
Tensor* node(Graph& g, OpId op, DType type, const int64_t ne[4], std::initializer_list<Tensor*> srcs) {
    Tensor* t = g.new_tensor(type, {ne[0], ne[1], ne[2], ne[3]}, op_name(op));
    t->op = op;
    int i = 0;
    for (Tensor* s : srcs) t->src[i++] = s;
    return g.add_node(t);
}
Tensor* unary(Graph& g, OpId op, Tensor* x) {
    expect_type(op_name(op), x, DType::F32, "x");
    if (!x->is_contiguous()) fail(op_name(op), "x must be contiguous");
    return node(g, op, DType::F32, x->ne, {x});
}
Tensor* binary(Graph& g, OpId op, Tensor* a, Tensor* b) {
    expect_type(op_name(op), a, DType::F32, "a");
    expect_type(op_name(op), b, DType::F32, "b");
    for (int i = 0; i < kMaxDims; ++i)
        if (b->ne[i] == 0 || a->ne[i] % b->ne[i] != 0)
            fail(op_name(op), "b " + shape_str(*b) + " does not broadcast over a " + shape_str(*a));
    // Rows may be strided (views of part of a tensor); elements within a row are packed.
    if (a->nb[0] != sizeof(float) || b->nb[0] != sizeof(float)) fail(op_name(op), "elements of a row must be packed");
    return node(g, op, DType::F32, a->ne, {a, b});
}
bool is_index(const Tensor* t) { return t->type == DType::I32 || t->type == DType::I64; }

}  // namespace

Tensor* get_rows(Graph& g, Tensor* src, Tensor* idx) {
    if (!is_index(idx) || idx->ne[1] != 1) fail("get_rows", "idx must be a 1-d I32/I64 tensor");
    int64_t ne[4] = {src->ne[0], idx->ne[0], 1, 1};
    return node(g, OpId::GET_ROWS, DType::F32, ne, {src, idx});
}

const Tensor* written_in_place(const Tensor& n) {
    switch (n.op) {
        case OpId::SET_ROWS: return n.src[2];
        case OpId::CONV1D_SCAN: return n.src[2];
        case OpId::DELTA_SCAN: return n.src[3];
        case OpId::SSM_SCAN: return n.src[3];
        default: return nullptr;
    }
}

Tensor* set_rows(Graph& g, Tensor* dst, Tensor* src, Tensor* idx) {
    expect_type("set_rows", src, DType::F32, "src");
    if (!is_index(idx) || idx->ne[1] != 1) fail("set_rows", "idx must be a 1-d I32/I64 tensor");
    if (src->ne[0] != dst->ne[0]) fail("set_rows", "row length of src " + shape_str(*src) + " != dst " + shape_str(*dst));
    if (src->ne[1] != idx->ne[0] || src->ne[2] != 1 || src->ne[3] != 1)
        fail("set_rows", "src must be [K, n] with n = number of indices");
    switch (dst->type) {
        case DType::F32: case DType::F16: case DType::BF16: case DType::Q8_0: case DType::Q4_0: break;
        default: fail("set_rows", std::string("unsupported destination type ") + dtype_name(dst->type));
    }
    if (dst->ne[2] != 1 || dst->ne[3] != 1 || !dst->is_contiguous()) fail("set_rows", "dst must be a contiguous 2-d tensor");
    int64_t ne[4] = {dst->ne[0], dst->ne[1], 1, 1};
    Tensor* t = node(g, OpId::SET_ROWS, dst->type, ne, {src, idx, dst});
    t->view_src = dst;
    return t;
}

Tensor* mul_mat(Graph& g, Tensor* w, Tensor* x) {
    expect_type("mul_mat", x, DType::F32, "x");
    if (w->ne[0] != x->ne[0])
        fail("mul_mat", "inner dimensions differ: w " + shape_str(*w) + " x " + shape_str(*x));
    if (w->ne[2] != 1 || w->ne[3] != 1) fail("mul_mat", "w must be 2-d");
    expect_rows_contiguous("mul_mat", w, "w");
    expect_rows_contiguous("mul_mat", x, "x");
    int64_t ne[4] = {w->ne[1], x->ne[1], x->ne[2], x->ne[3]};
    return node(g, OpId::MUL_MAT, DType::F32, ne, {w, x});
}

Tensor* add(Graph& g, Tensor* a, Tensor* b) { return binary(g, OpId::ADD, a, b); }
Tensor* mul(Graph& g, Tensor* a, Tensor* b) { return binary(g, OpId::MUL, a, b); }

Tensor* scale(Graph& g, Tensor* a, float s) {
    Tensor* t = unary(g, OpId::SCALE, a);
    t->set_params(ScaleParams{s});
    return t;
}

Tensor* rms_norm(Graph& g, Tensor* x, Tensor* w, float eps) {
    expect_type("rms_norm", x, DType::F32, "x");
    expect_rows_contiguous("rms_norm", x, "x");
    if (w) {
        expect_type("rms_norm", w, DType::F32, "w");
        if (w->ne[0] != x->ne[0] || w->nrows() != 1) fail("rms_norm", "w must be [" + std::to_string(x->ne[0]) + "]");
    }
    Tensor* t = node(g, OpId::RMS_NORM, DType::F32, x->ne, {x, w});
    t->set_params(RmsNormParams{eps});
    return t;
}

Tensor* layer_norm(Graph& g, Tensor* x, Tensor* w, Tensor* b, float eps) {
    expect_type("layer_norm", x, DType::F32, "x");
    expect_rows_contiguous("layer_norm", x, "x");
    for (auto [t, what] : {std::pair{w, "w"}, std::pair{b, "b"}}) {
        if (!t) continue;
        expect_type("layer_norm", t, DType::F32, what);
        if (t->ne[0] != x->ne[0] || t->nrows() != 1 || !t->is_contiguous())
            fail("layer_norm", std::string(what) + " must be a contiguous [" + std::to_string(x->ne[0]) + "]");
    }
    Tensor* t = node(g, OpId::LAYER_NORM, DType::F32, x->ne, {x, w, b});
    t->set_params(LayerNormParams{eps});
    return t;
}

namespace {
void check_rope_params(const RopeParams& p, int64_t head) {
    if (p.n_dims <= 0 || p.n_dims % 2 || p.n_dims > head) fail("rope", "n_dims must be even and <= head dim");
    if (p.mode != ROPE_NORMAL && p.mode != ROPE_NEOX) fail("rope", "unknown mode " + std::to_string(p.mode));
}
}  // namespace

Tensor* rope(Graph& g, Tensor* x, Tensor* table, const RopeParams& p) {
    expect_type("rope", x, DType::F32, "x");
    expect_type("rope", table, DType::F32, "table");
    expect_rows_contiguous("rope", x, "x");
    check_rope_params(p, x->ne[0]);
    if (!table->is_contiguous() || table->ne[0] != p.n_dims || table->ne[1] != x->ne[2] || table->nrows() != x->ne[2])
        fail("rope", "table must be a contiguous [n_dims, T] (rope_table)");
    Tensor* t = node(g, OpId::ROPE, DType::F32, x->ne, {x, table});
    t->set_params(p);
    return t;
}

Tensor* rope_table(Graph& g, const int32_t* pos, int64_t T, const RopeParams& p, const float* ff) {
    check_rope_params(p, p.n_dims);
    const int64_t half = p.n_dims / 2;
    std::vector<float> cs(size_t(T * p.n_dims));
    rope_angles(pos, T, p, ff, [&](int64_t t, int64_t i, float c, float s) {
        cs[size_t(2 * (t * half + i))] = c;
        cs[size_t(2 * (t * half + i) + 1)] = s;
    });
    return g.input(DType::F32, {p.n_dims, T}, cs.data(), "rope_cs");
}

Tensor* rope_table_axes(Graph& g, const int32_t* pos, int64_t n_axes, int64_t T, const RopeParams& p, const std::vector<int32_t>& axis,
                        const std::vector<double>& inv_freq) {
    check_rope_params(p, p.n_dims);
    const int64_t half = p.n_dims / 2;
    if (int64_t(axis.size()) != half || int64_t(inv_freq.size()) != half)
        fail("rope_table_axes", "one axis and one frequency per pair (n_dims / 2) expected");
    for (int32_t a : axis)
        if (a < 0 || a >= n_axes) fail("rope_table_axes", "a pair's axis is outside [0, n_axes)");
    std::vector<float> cs(size_t(T * p.n_dims));
    rope_angles_axes(pos, n_axes, T, p, axis.data(), inv_freq.data(), [&](int64_t t, int64_t i, float c, float s) {
        cs[size_t(2 * (t * half + i))] = c;
        cs[size_t(2 * (t * half + i) + 1)] = s;
    });
    return g.input(DType::F32, {p.n_dims, T}, cs.data(), "rope_cs");
}

Tensor* gelu(Graph& g, Tensor* x) { return unary(g, OpId::GELU, x); }
Tensor* gelu_erf(Graph& g, Tensor* x) { return unary(g, OpId::GELU_ERF, x); }
Tensor* silu(Graph& g, Tensor* x) { return unary(g, OpId::SILU, x); }

Tensor* sigmoid(Graph& g, Tensor* x) { return unary(g, OpId::SIGMOID, x); }
Tensor* softplus(Graph& g, Tensor* x) { return unary(g, OpId::SOFTPLUS, x); }

Tensor* softcap(Graph& g, Tensor* x, float cap) {
    // A subnormal cap could be flushed to zero by a GPU (0/0): refuse it with the rest.
    if (!(cap >= FLT_MIN) || !std::isfinite(cap)) fail("softcap", "cap must be a positive, normal, finite number");
    Tensor* t = unary(g, OpId::SOFTCAP, x);
    t->set_params(SoftcapParams{cap});
    return t;
}

Tensor* clamp(Graph& g, Tensor* x, float min, float max) {
    // A subnormal bound could be flushed to zero by a GPU's comparison: refused, as NaN bounds.
    auto bound_ok = [](float b) { return !std::isnan(b) && (b == 0 || !(std::fabs(b) < FLT_MIN)); };
    if (!bound_ok(min) || !bound_ok(max)) fail("clamp", "bounds must not be NaN or subnormal");
    if (!(min <= max)) fail("clamp", "min must not exceed max");
    Tensor* t = unary(g, OpId::CLAMP, x);
    t->set_params(ClampParams{min, max});
    return t;
}

namespace {
// The run table of the recurrent ops: shapes only (values are checked by the kernels'
// shared check, core/rules/scan_runs.h, before anything is written).
void check_runs(const char* op, Tensor* runs, Tensor* order, int64_t T) {
    expect_type(op, runs, DType::I32, "runs");
    expect_type(op, order, DType::I32, "order");
    if (runs->ne[0] != 4 || runs->ne[2] != 1 || runs->ne[3] != 1 || !runs->is_contiguous())
        fail(op, "runs must be a contiguous I32 [4, n_runs] (slot, first, n, reset)");
    if (order->ne[0] != T || order->nrows() != 1) fail(op, "order needs one entry per token");
}
void check_state(const char* op, Tensor* state, int64_t row) {
    expect_type(op, state, DType::F32, "state");
    if (state->kind != TensorKind::Persistent) fail(op, "state must be persistent memory (never planned by the graph)");
    if (state->ne[0] != row || state->ne[2] != 1 || state->ne[3] != 1 || !state->is_contiguous())
        fail(op, "state must be a contiguous F32 [" + std::to_string(row) + ", n_slots], got " + shape_str(*state));
}
}  // namespace

Tensor* conv1d_scan(Graph& g, Tensor* x, Tensor* w, Tensor* state, Tensor* runs, Tensor* order) {
    expect_type("conv1d_scan", x, DType::F32, "x");
    expect_type("conv1d_scan", w, DType::F32, "w");
    if (!x->is_contiguous() || x->ne[2] != 1 || x->ne[3] != 1) fail("conv1d_scan", "x must be a contiguous [C, T]");
    const int64_t C = x->ne[0], T = x->ne[1], K = w->ne[0];
    if (K < 2 || w->ne[1] != C || w->ne[2] != 1 || !w->is_contiguous())
        fail("conv1d_scan", "w must be a contiguous F32 [K >= 2, C], got " + shape_str(*w) + " for x " + shape_str(*x));
    check_state("conv1d_scan", state, (K - 1) * C);
    check_runs("conv1d_scan", runs, order, T);
    int64_t ne[4] = {C, T, 1, 1};
    Tensor* t = node(g, OpId::CONV1D_SCAN, DType::F32, ne, {x, w, state, runs, order});
    t->set_params(Conv1dScanParams{int32_t(K)});
    return t;
}

Tensor* delta_scan(Graph& g, Tensor* qkv, Tensor* gate, Tensor* beta, Tensor* state, Tensor* runs, Tensor* order,
                   const DeltaScanParams& p) {
    const char* op = "delta_scan";
    for (auto [t, role] : {std::pair{qkv, "qkv"}, std::pair{gate, "g"}, std::pair{beta, "beta"}}) {
        expect_type(op, t, DType::F32, role);
        if (!t->is_contiguous()) fail(op, std::string(role) + " must be contiguous");
    }
    if (p.n_k_heads <= 0 || p.n_v_heads <= 0 || p.d_k <= 0 || p.d_v <= 0 || p.n_v_heads % p.n_k_heads)
        fail(op, "Hv must be a multiple of Hk, and all head sizes positive");
    if (p.head_map != HEADS_GROUPED && p.head_map != HEADS_TILED) fail(op, "unknown head map");
    const int64_t T = qkv->nrows(), Hv = p.n_v_heads;
    if (qkv->ne[0] != 2 * int64_t(p.n_k_heads) * p.d_k + Hv * p.d_v)
        fail(op, "qkv rows must hold 2*Hk*Dk + Hv*Dv values, got " + shape_str(*qkv));
    if (gate->ne[0] != Hv || gate->nrows() != T || beta->ne[0] != Hv || beta->nrows() != T)
        fail(op, "g and beta must be [Hv, T]");
    check_state(op, state, Hv * p.d_v * p.d_k);
    check_runs(op, runs, order, T);
    int64_t ne[4] = {p.d_v, Hv, T, 1};
    Tensor* t = node(g, OpId::DELTA_SCAN, DType::F32, ne, {qkv, gate, beta, state, runs, order});
    t->set_params(p);
    return t;
}

Tensor* ssm_scan(Graph& g, Tensor* xbc, Tensor* dt, Tensor* A, Tensor* state, Tensor* runs, Tensor* order, const SsmScanParams& p) {
    const char* op = "ssm_scan";
    for (auto [t, role] : {std::pair{xbc, "xbc"}, std::pair{dt, "dt"}, std::pair{A, "A"}}) {
        expect_type(op, t, DType::F32, role);
        if (!t->is_contiguous()) fail(op, std::string(role) + " must be contiguous");
    }
    if (p.n_head <= 0 || p.head_dim <= 0 || p.d_state <= 0 || p.n_group <= 0 || p.n_head % p.n_group)
        fail(op, "the group count must divide the head count, and all sizes be positive");
    const int64_t T = xbc->nrows(), H = p.n_head;
    if (xbc->ne[0] != H * p.head_dim + 2 * int64_t(p.n_group) * p.d_state)
        fail(op, "xbc rows must hold H*P + 2*G*N values, got " + shape_str(*xbc));
    if (dt->ne[0] != H || dt->nrows() != T) fail(op, "dt must be [H, T], got " + shape_str(*dt));
    if (A->nelements() != H) fail(op, "A must hold one value per head, got " + shape_str(*A));
    check_state(op, state, H * p.head_dim * p.d_state);
    check_runs(op, runs, order, T);
    int64_t ne[4] = {p.head_dim, H, T, 1};
    Tensor* t = node(g, OpId::SSM_SCAN, DType::F32, ne, {xbc, dt, A, state, runs, order});
    t->set_params(p);
    return t;
}

namespace {
Tensor* topk(Graph& g, Tensor* x, int k, bool values, bool norm, const TopkGroups& gr, Tensor* from) {
    const char* op = "topk";
    expect_type(op, x, DType::F32, "x");
    expect_rows_contiguous(op, x, "x");
    if (k < 1 || k > x->ne[0] || k > kTopkMax)
        fail(op, "k = " + std::to_string(k) + " must be in [1, min(" + std::to_string(x->ne[0]) + ", " +
                     std::to_string(kTopkMax) + ")]");
    if (x->ne[2] != 1 || x->ne[3] != 1) fail(op, "x must be 2-d [E, T]");
    if (gr.n_group > 1) {
        const int64_t m = x->ne[0] / gr.n_group;
        if (gr.n_group > kTopkMax || x->ne[0] % gr.n_group)
            fail(op, std::to_string(gr.n_group) + " groups must divide the " + std::to_string(x->ne[0]) + " entries (at most " +
                         std::to_string(kTopkMax) + " groups)");
        if (gr.group_used < 1 || gr.group_used > gr.n_group || (gr.group_top != 1 && gr.group_top != 2) || gr.group_top > m ||
            k > gr.group_used * m)
            fail(op, "groups: " + std::to_string(gr.group_used) + " of " + std::to_string(gr.n_group) + " groups of " +
                         std::to_string(m) + " scored by their best " + std::to_string(gr.group_top) + " cannot hold k = " +
                         std::to_string(k));
    }
    if (from) {
        expect_type(op, from, DType::F32, "from");
        expect_rows_contiguous(op, from, "from");
        if (from->ne[0] != x->ne[0] || from->ne[1] != x->ne[1] || from->ne[2] != 1 || from->ne[3] != 1)
            fail(op, "from must have x's shape, got " + shape_str(*from) + " for " + shape_str(*x));
    }
    int64_t ne[4] = {k, x->ne[1], 1, 1};
    Tensor* t = node(g, OpId::TOPK, values ? DType::F32 : DType::I32, ne, {x, from});
    t->set_params(TopkParams{k, values ? 1 : 0, norm ? 1 : 0, gr.n_group > 1 ? gr.n_group : 0, gr.n_group > 1 ? gr.group_used : 0,
                             gr.n_group > 1 ? gr.group_top : 0});
    return t;
}
}  // namespace

Tensor* topk_ids(Graph& g, Tensor* x, int k, const TopkGroups& groups) { return topk(g, x, k, false, false, groups, nullptr); }
Tensor* topk_weights(Graph& g, Tensor* x, int k, bool norm, const TopkGroups& groups, Tensor* from) {
    return topk(g, x, k, true, norm, groups, from);
}

Tensor* mul_mat_id(Graph& g, Tensor* w, Tensor* x, Tensor* ids) {
    const char* op = "mul_mat_id";
    expect_type(op, x, DType::F32, "x");
    expect_type(op, ids, DType::I32, "ids");
    expect_rows_contiguous(op, w, "w");
    expect_rows_contiguous(op, x, "x");
    if (!ids->is_contiguous() || ids->ne[2] != 1 || ids->ne[3] != 1) fail(op, "ids must be a contiguous [k, T]");
    const int64_t K = w->ne[0], k = ids->ne[0], T = ids->ne[1];
    if (w->ne[3] != 1) fail(op, "w must be [K, N, E]");
    if (x->ne[0] != K) fail(op, "inner dimensions differ: w " + shape_str(*w) + " x " + shape_str(*x));
    if ((x->ne[1] != 1 && x->ne[1] != k) || x->ne[2] != T || x->ne[3] != 1)
        fail(op, "x must be [K, 1 or k, T] for ids [k, T], got " + shape_str(*x));
    int64_t ne[4] = {w->ne[1], k, T, 1};
    return node(g, OpId::MUL_MAT_ID, DType::F32, ne, {w, x, ids});
}

Tensor* softmax(Graph& g, Tensor* x, float s) {
    Tensor* t = unary(g, OpId::SOFTMAX, x);
    t->set_params(SoftmaxParams{s});
    return t;
}

// shaders/common.glsl (attn_first) tests the window for this value.
static_assert(kAttnFirstGiven == -1);

Tensor* attention(Graph& g, Tensor* q, Tensor* k, Tensor* v, Tensor* pos, Tensor* seq, const AttentionParams& p,
                  Tensor* sinks) {
    expect_type("attention", q, DType::F32, "q");
    expect_type("attention", pos, DType::I32, "pos");
    expect_type("attention", seq, DType::I32, "seq");
    expect_rows_contiguous("attention", q, "q");
    const int64_t T = q->ne[2], H = q->ne[1], Dk = q->ne[0];
    if (p.n_head_kv <= 0 || H % p.n_head_kv) fail("attention", "n_head must be a multiple of n_head_kv");
    if (k->ne[0] != Dk * p.n_head_kv) fail("attention", "k rows must hold n_head_kv * head_dim values");
    if (v->ne[0] % p.n_head_kv) fail("attention", "v rows must hold n_head_kv heads");
    if (k->ne[1] != v->ne[1]) fail("attention", "k and v caches must have the same rows");
    if (p.ring_rows <= 0 || k->ne[1] % p.ring_rows) fail("attention", "cache rows must be n_seq * ring_rows");
    // W > R is valid: a ring capped by n_ctx (R = n_ctx < W) never holds a position the
    // window could have dropped; queries past what the ring holds fail at compute time.
    if (p.window < 0 && p.window != kAttnFirstGiven) fail("attention", "window must be >= 0 (or kAttnFirstGiven)");
    if (pos->ne[0] != T || seq->ne[0] != T || seq->nelements() != T) fail("attention", "pos and seq need one entry per token");
    // kAttnFirstGiven: each query's first key in a second row of pos (core/rules/attention_rule.h).
    if (pos->nelements() != (p.window == kAttnFirstGiven ? 2 * T : T) || (p.window == kAttnFirstGiven && !pos->is_contiguous()))
        fail("attention", p.window == kAttnFirstGiven ? "pos must be a contiguous I32 [T, 2] (last keys, then first keys)"
                                                      : "pos needs one entry per token");
    for (const Tensor* c : {k, v}) {
        switch (c->type) {
            case DType::F32: case DType::F16: case DType::BF16: case DType::Q8_0: case DType::Q4_0: break;
            default: fail("attention", std::string("unsupported cache type ") + dtype_name(c->type));
        }
    }
    if (sinks) {
        expect_type("attention", sinks, DType::F32, "sinks");
        if (!sinks->is_contiguous() || sinks->nelements() != H || sinks->ne[0] != H)
            fail("attention", "sinks must be a contiguous F32 [n_head], got " + shape_str(*sinks));
    }
    int64_t ne[4] = {v->ne[0] / p.n_head_kv, H, T, 1};
    Tensor* t = node(g, OpId::ATTENTION, DType::F32, ne, {q, k, v, pos, seq, sinks});
    t->set_params(p);
    return t;
}

Tensor* concat(Graph& g, Tensor* a, Tensor* b) {
    const char* op = b ? "concat" : "cont";
    for (Tensor* t : {a, b}) {
        if (!t) continue;
        expect_type(op, t, DType::F32, t == a ? "a" : "b");
        if (t->ne[3] != 1) fail(op, std::string(t == a ? "a" : "b") + " must have at most 3 dimensions, got " + shape_str(*t));
    }
    if (b && (b->ne[1] != a->ne[1] || b->ne[2] != a->ne[2]))
        fail(op, "a and b must have the same rows, got " + shape_str(*a) + " and " + shape_str(*b));
    const int64_t ne[4] = {a->ne[0] + (b ? b->ne[0] : 0), a->ne[1], a->ne[2], 1};
    return node(g, OpId::CONCAT, DType::F32, ne, {a, b});
}

Tensor* reshape(Graph& g, Tensor* t, std::initializer_list<int64_t> ne) {
    if (!t->is_contiguous()) fail("reshape", "tensor must be contiguous");
    Tensor* r = g.new_tensor(t->type, ne, "reshape");
    if (r->nelements() != t->nelements())
        fail("reshape", "element count differs: " + shape_str(*t) + " -> " + shape_str(*r));
    r->view_src = t;
    r->kind = t->kind == TensorKind::Persistent ? TensorKind::Persistent : TensorKind::Intermediate;
    return r;
}

Tensor* view_2d(Graph& g, Tensor* t, int64_t ne0, int64_t ne1, size_t nb1, size_t offset) {
    if (!t->is_contiguous()) fail("view_2d", "tensor must be contiguous");
    // Quantized types: whole blocks (a view of the first values of quantized cache rows).
    const size_t es = traits(t->type).block_bytes;
    const size_t width = ne0 % traits(t->type).block ? 0 : row_bytes(t->type, ne0);
    if (width == 0 || ne0 < 1 || ne1 < 1 || nb1 < width || offset % es || offset + size_t(ne1 - 1) * nb1 + width > t->nbytes())
        fail("view_2d", "view [" + std::to_string(ne0) + ", " + std::to_string(ne1) + "] outside " + shape_str(*t));
    Tensor* r = g.new_tensor(t->type, {ne0, ne1}, "view");
    r->nb[1] = nb1;
    r->nb[2] = r->nb[3] = nb1 * size_t(ne1);
    r->view_src = t;
    r->view_offs = offset;
    r->kind = t->kind == TensorKind::Persistent ? TensorKind::Persistent : TensorKind::Intermediate;
    return r;
}

}  // namespace ls::ops
