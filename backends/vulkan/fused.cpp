#include "backends/vulkan/fused.h"

#include <algorithm>
#include <array>
#include <string>

#include "backends/vulkan/ops/mul_mat_act.h"
#include "backends/vulkan/ops/type_support.h"
#include "core/ir/head_rows_group.h"
#include "core/ir/index_inputs.h"
#include "core/ir/op_params.h"
#include "backends/vulkan/ops/vk_ops.h"

namespace ls::vk {
namespace {

// Rows of K contiguous floats, rows of them.
bool f32_rows(const Tensor* t, int64_t K, int64_t rows) {
    return t && t->type == DType::F32 && t->is_contiguous() && t->ne[0] == K && t->nrows() == rows;
}
// A norm's weight: K contiguous floats (or none).
bool norm_weight(const Tensor* w, int64_t K) { return !w || (w->type == DType::F32 && w->is_contiguous() && w->nelements() == K); }
bool apart(const Range& a, const Range& b) { return a.hi <= b.lo || b.hi <= a.lo; }
bool apart_or_same(const Range& a, const Range& b) { return apart(a, b) || (a.lo == b.lo && a.hi == b.hi); }
// Every output lies apart from every input and from the other outputs, or exactly over one
// (the allocator puts a node's output over rows that died at it): the fused shaders read an
// element's inputs before they write its outputs, and read back only their own writes, in
// the order of the graph's nodes. A partial overlap would mix elements: not fused.
bool outputs_fit(const std::vector<Range>& in, const std::vector<Range>& out) {
    for (size_t u = 0; u < out.size(); ++u) {
        for (const Range& x : in)
            if (!apart_or_same(out[u], x)) return false;
        for (size_t v = u + 1; v < out.size(); ++v)
            if (!apart_or_same(out[u], out[v])) return false;
    }
    return true;
}
// The dot type nodes[j] quantizes `x` to, when nodes[j] is a mul_mat reading x whose
// quantizer a fused shader can run (Q8_0, Q8_1, Q8_K over whole blocks); F32 otherwise.
DType quant_for(const std::vector<Tensor*>& nodes, size_t j, const Tensor* x) {
    if (j >= nodes.size() || nodes[j]->op != OpId::MUL_MAT || nodes[j]->src[1] != x) return DType::F32;
    const DType at = vec_dot_type(nodes[j]->src[0]->type);
    if (at != DType::Q8_0 && at != DType::Q8_1 && at != DType::Q8_K) return DType::F32;
    return x->ne[0] % block_size(at) == 0 ? at : DType::F32;
}

// Where norm_chain.comp's outputs may lie. Several rows run in workgroups side by side, which
// no barrier orders: each output apart from every input and the other outputs, or exactly
// over one (the same row). A single row is one workgroup, so its phases order it: phase A
// reads all of x before any write; phase B (invocation l: elements l, l + 32, ... in order)
// reads x and res at an element, then writes y1 and s there; a tree's barriers; phase C reads
// its own s (or x) at an element and writes y2 there; the quantizer reads y2 after a barrier.
// So there an output written in a phase may also lie a whole number of 32 elements before
// what that phase reads (the invocation that writes there read it earlier), and y2 anywhere
// over what only phases A and B read (the allocator reuses rows that died in the group:
// Gemma 3 1B's residual sum lies 1024 floats before the projection it adds).
// in and out: the dispatch's ranges, which the several-row rule checks as they are.
bool norm_chain_fits(const Recorder& r, const std::vector<Range>& in, const std::vector<Range>& out, const Tensor* x,
                     const Tensor* res, const Tensor* n1, const Tensor* add, const Tensor* n2, const Tensor* w1, const Tensor* w2) {
    if (n2->nrows() != 1) return outputs_fit(in, out);
    auto ok = [&](const Range& o, const Range& src) {
        return apart_or_same(o, src) || (o.lo < src.lo && (src.lo - o.lo) % 128 == 0);
    };
    const Range y2 = r.range(n2);
    std::vector<Range> weights;
    if (w1) weights.push_back(r.range(w1));
    if (w2) weights.push_back(r.range(w2));
    for (const Tensor* o : {n1, add, n2})
        if (o)
            for (const Range& w : weights)
                if (!apart(r.range(o), w)) return false;
    if (n1 && add && !apart_or_same(r.range(n1), r.range(add))) return false;
    for (const Tensor* o : {n1, add})  // phase B's outputs against its inputs
        if (o && (!ok(r.range(o), r.range(x)) || (res && !ok(r.range(o), r.range(res))))) return false;
    return ok(y2, r.range(add ? add : x));  // phase C's
}

size_t norm_chain(const std::vector<Tensor*>& nodes, size_t i, Recorder& r) {
    const Tensor *n1 = nullptr, *add = nullptr, *n2 = nullptr;
    size_t j = i;
    const Tensor* a = nodes[i];
    if (a->op == OpId::RMS_NORM && i + 1 < nodes.size() && nodes[i + 1]->op == OpId::ADD &&
        (nodes[i + 1]->src[0] == a || nodes[i + 1]->src[1] == a))
        n1 = a, add = nodes[i + 1], j = i + 2;
    else if (a->op == OpId::ADD)
        add = a, j = i + 1;
    if (add) {
        if (j >= nodes.size() || nodes[j]->op != OpId::RMS_NORM || nodes[j]->src[0] != add) return 0;
        n2 = nodes[j++];
    } else if (a->op == OpId::RMS_NORM) {
        n2 = a, j = i + 1;
    } else {
        return 0;
    }
    const Tensor* x = n1 ? n1->src[0] : add ? add->src[1] : n2->src[0];
    const Tensor* res = !add ? nullptr : n1 ? (add->src[0] == n1 ? add->src[1] : add->src[0]) : add->src[0];
    if (n1 && res == n1) return 0;
    const int64_t K = n2->ne[0], rows = n2->nrows();
    if (!f32_rows(x, K, rows) || !f32_rows(n2, K, rows) || !same_shape(*x, *n2)) return 0;
    if (add && (!f32_rows(res, K, rows) || !f32_rows(add, K, rows) || !same_shape(*res, *add) || !same_shape(*add, *n2))) return 0;
    if (n1 && (!f32_rows(n1, K, rows) || !same_shape(*n1, *add))) return 0;
    const Tensor* w1 = n1 ? n1->src[1] : nullptr;
    const Tensor* w2 = n2->src[1];
    if (!norm_weight(w1, K) || !norm_weight(w2, K) || K >= (int64_t(1) << 28) || rows >= (int64_t(1) << 32)) return 0;
    const DType at = quant_for(nodes, j, n2);
    // Alone, a norm is one dispatch already: fused only with its quantizer.
    if (!add && at == DType::F32) return 0;

    std::vector<Range> in{r.range(x)}, out{r.range(n2)};
    if (res) in.push_back(r.range(res));
    if (w1) in.push_back(r.range(w1));
    if (w2) in.push_back(r.range(w2));
    if (n1) out.push_back(r.range(n1));
    if (add) out.push_back(r.range(add));
    if (!norm_chain_fits(r, in, out, x, res, n1, add, n2, w1, w2)) return 0;
    const uint32_t act_nb1 = at == DType::F32 ? 0 : uint32_t(act_row_bytes(at, K));
    if (at != DType::F32) out.push_back(act_range(r, act_nb1, uint32_t(rows)));

    PcNormChain pc{};
    pc.x = r.addr(x), pc.w1 = w1 ? r.addr(w1) : 0, pc.res = res ? r.addr(res) : 0, pc.y1 = n1 ? r.addr(n1) : 0;
    pc.s = add ? r.addr(add) : 0, pc.w2 = w2 ? r.addr(w2) : 0, pc.y2 = r.addr(n2), pc.act = r.act.lo;
    pc.K = uint32_t(K), pc.rows = uint32_t(rows), pc.act_nb1 = act_nb1;
    pc.flags = (n1 ? LS_NC_NORM1 : 0u) | (w1 ? LS_NC_W1 : 0u) | (add ? LS_NC_ADD : 0u) | (w2 ? LS_NC_W2 : 0u);
    pc.eps1 = n1 ? n1->get_params<RmsNormParams>().eps : 0.0f;
    pc.eps2 = n2->get_params<RmsNormParams>().eps;
    const uint64_t nrows = std::max<uint64_t>(uint64_t(rows), 1);
    const uint32_t gx = uint32_t(std::min<uint64_t>(nrows, 65535)), gy = uint32_t((nrows + gx - 1) / gx);
    r.dispatch(at == DType::F32 ? std::string("norm_chain") : "norm_chain_" + lower_name(at), pc, gx, gy, in, out);
    if (at != DType::F32) r.act_x = n2, r.act_t = at;
    return j - i;
}

size_t glu(const std::vector<Tensor*>& nodes, size_t i, Recorder& r) {
    const Tensor* y = nodes[i];
    if ((y->op != OpId::GELU && y->op != OpId::SILU) || i + 1 >= nodes.size()) return 0;
    const Tensor* z = nodes[i + 1];
    if (z->op != OpId::MUL || (z->src[0] != y && z->src[1] != y)) return 0;
    const Tensor* up = z->src[0] == y ? z->src[1] : z->src[0];
    const Tensor* a = y->src[0];
    const int64_t K = z->ne[0], rows = z->nrows();
    if (up == y || !f32_rows(a, K, rows) || !f32_rows(y, K, rows) || !f32_rows(z, K, rows) || !f32_rows(up, K, rows) ||
        !same_shape(*a, *z) || !same_shape(*up, *z) || !same_shape(*y, *z) || K * rows >= (int64_t(1) << 32))
        return 0;
    std::vector<Range> in{r.range(a), r.range(up)}, out{r.range(y), r.range(z)};
    if (!outputs_fit(in, out)) return 0;
    const DType at = quant_for(nodes, i + 2, z);
    const uint32_t act_nb1 = at == DType::F32 ? 0 : uint32_t(act_row_bytes(at, K));
    if (at != DType::F32) out.push_back(act_range(r, act_nb1, uint32_t(rows)));
    PcGlu pc{r.addr(a), r.addr(up), r.addr(y), r.addr(z), r.act.lo, uint32_t(K * rows), uint32_t(K), act_nb1, 0};
    const std::string v = std::string(y->op == OpId::GELU ? "glu_gelu" : "glu_silu") + (at == DType::F32 ? "" : "_" + lower_name(at));
    if (at == DType::F32) {
        r.dispatch1d(v, pc, uint64_t(K * rows), in, out);
    } else {  // a workgroup per block of a row
        const uint64_t blocks = uint64_t(K / block_size(at)) * uint64_t(rows);
        const uint32_t gx = uint32_t(std::min<uint64_t>(blocks, 65535)), gy = uint32_t((blocks + gx - 1) / gx);
        r.dispatch(v, pc, gx, gy, in, out);
    }
    if (at != DType::F32) r.act_x = z, r.act_t = at;
    return 2;
}

// A chain of head_rows.comp: its push constants, what it reads and writes; false where its
// shapes or types do not fit the shader.
struct RowsChain {
    PcHeadRows pc{};
    std::vector<Range> in, out;
    uint64_t rows = 0;
};
bool plan_rows_chain(const HeadRowChain& ch, const Recorder& r, RowsChain& c) {
    const Tensor* x = ch.x;
    const int64_t D = x->ne[0], per_token = x->ne[1], rows = x->nrows();
    if (x->type != DType::F32 || !x->is_contiguous() || x->ne[3] != 1 || D <= 0 || D > int64_t(LS_HR_ROW_MAX) || rows <= 0 ||
        rows >= (int64_t(1) << 32))
        return false;
    PcHeadRows& pc = c.pc;
    pc.x = r.addr(x), pc.D = uint32_t(D), pc.rows = uint32_t(rows), pc.per_token = uint32_t(per_token);
    c.rows = uint64_t(rows);
    c.in.push_back(r.range(x));
    if (ch.norm) {
        const Tensor* w = ch.norm->src[1];
        if (!f32_rows(ch.norm, D, rows) || !same_shape(*ch.norm, *x) || !norm_weight(w, D)) return false;
        pc.flags |= LS_HR_NORM | (w ? LS_HR_W : 0u);
        pc.eps = ch.norm->get_params<RmsNormParams>().eps;
        pc.norm_y = r.addr(ch.norm);
        if (w) pc.w = r.addr(w), c.in.push_back(r.range(w));
        c.out.push_back(r.range(ch.norm));
    }
    if (ch.rope) {
        const Tensor* cs = ch.rope->src[1];
        const RopeParams p = ch.rope->get_params<RopeParams>();
        if (!f32_rows(ch.rope, D, rows) || !same_shape(*ch.rope, *x) || !cs || cs->type != DType::F32 || !cs->is_contiguous() ||
            p.n_dims <= 0 || p.n_dims % 2 != 0 || p.n_dims > D || (p.mode != ROPE_NORMAL && p.mode != ROPE_NEOX) ||
            cs->nelements() < x->ne[2] * p.n_dims)
            return false;
        pc.flags |= LS_HR_ROPE;
        pc.cs = r.addr(cs), pc.n_dims = uint32_t(p.n_dims), pc.mode = uint32_t(p.mode);
        pc.rope_y = r.addr(ch.rope);
        c.in.push_back(r.range(cs));
        c.out.push_back(r.range(ch.rope));
    }
    if (ch.set) {
        const Tensor *s = ch.set->src[0], *idx = ch.set->src[1], *cache = ch.set->src[2];
        // set_rows' source: the last stage's (D, P, T) rows as (P * D, T), a reshape of it.
        const Tensor* prev = ch.rope ? ch.rope : ch.norm;
        if (ch.cur != ch.set || !prev || !supports_set_rows(*ch.set) || !s->is_contiguous() || view_base(s) != view_base(prev) ||
            r.addr(s) != r.addr(prev) || s->ne[0] != D * per_token || s->ne[1] * per_token != rows)
            return false;
        // Into a cache (persistent), which no chain's input lies in.
        const uint32_t be = block_size(cache->type) == 32 ? 32u : 1u;
        if (view_base(cache)->kind != TensorKind::Persistent || !cache->is_contiguous() || D % be != 0 ||
            idx->ne[0] != rows / per_token)
            return false;
        pc.flags |= LS_HR_SET | (idx->type == DType::I64 ? LS_HR_IDX64 : 0u) | (r.plan.rows_repeat.count(ch.set) ? LS_HR_REPEAT : 0u);
        pc.cache = r.addr(cache), pc.idx = r.addr(idx);
        pc.cache_type = uint32_t(cache->type), pc.cache_nb1 = uint32_t(cache->nb[1]), pc.n_tok = uint32_t(idx->ne[0]);
        c.in.push_back(r.range(idx));
        c.out.push_back(r.range(cache));
    }
    return ch.norm || ch.rope;
}

// A layer's per-head rows (core/ir/head_rows_group.h): each chain with a norm or a rope as one
// head_rows.comp dispatch, a chain of a lone cache write (v) as its own set_rows. The chains
// read nothing another one writes, so they need no barrier between them (a decode layer's six
// dispatches and three barrier levels -> three and one) -- except where the allocator put a
// chain's output over another chain's input that died at an earlier node of the group: then
// the chain that reads it is recorded first, and the recorder's barrier orders the two.
size_t head_rows(const std::vector<Tensor*>& nodes, size_t i, Recorder& r) {
    const HeadRowsGroup gr = find_head_rows(nodes, i);
    if (gr.nodes < 2) return 0;
    const size_t n = size_t(gr.n);
    std::vector<RowsChain> cs(n);
    bool any = false;
    for (size_t c = 0; c < n; ++c) {
        const HeadRowChain& ch = gr.chains[c];
        if (!ch.norm && !ch.rope) {  // a lone cache write
            if (!ch.set || ch.cur != ch.set) return 0;
            cs[c].in = {r.range(ch.set->src[0]), r.range(ch.set->src[1])};
            cs[c].out = {r.range(ch.set->src[2])};
            continue;
        }
        if (!plan_rows_chain(ch, r, cs[c])) return 0;
        if (!outputs_fit(cs[c].in, cs[c].out)) return 0;  // within a chain, as its shader allows
        any = true;
    }
    if (!any) return 0;
    auto overlaps = [](const std::vector<Range>& a, const std::vector<Range>& b) {
        for (const Range& x : a)
            for (const Range& y : b)
                if (!apart(x, y)) return true;
        return false;
    };
    // An order of the chains where none writes what a later one reads, and none writes what
    // another writes.
    std::array<size_t, HeadRowsGroup::kMaxChains> order{0, 1, 2};
    bool found = false;
    do {
        bool ok = true;
        for (size_t a = 0; a < n && ok; ++a)
            for (size_t b = a + 1; b < n && ok; ++b)
                ok = !overlaps(cs[order[a]].out, cs[order[b]].in) && !overlaps(cs[order[a]].out, cs[order[b]].out);
        found = ok;
    } while (!found && std::next_permutation(order.begin(), order.begin() + n));
    if (!found) return 0;
    for (size_t k = 0; k < n; ++k) {
        const HeadRowChain& ch = gr.chains[order[k]];
        r.node = ch.cur;
        if (!ch.norm && !ch.rope) {
            record_set_rows(*ch.set, r);
            continue;
        }
        const RowsChain& rc = cs[order[k]];
        const uint32_t gx = uint32_t(std::min<uint64_t>(rc.rows, 65535)), gy = uint32_t((rc.rows + gx - 1) / gx);
        r.dispatch("head_rows", rc.pc, gx, gy, rc.in, rc.out);
    }
    return gr.nodes;
}

// An attention in its split form whose output the next node, a mul_mat, reads as [Dv * H, T]
// (the output projection): the fold also quantizes the output rows, so the mul_mat skips its
// quantizer. Each head's Dv must be a whole number of the dot type's blocks (one workgroup, a
// head, writes them). The act rows lie in the aux buffer, apart from everything the fold reads.
size_t attention_act(const std::vector<Tensor*>& nodes, size_t i, Recorder& r) {
    const Tensor* a = nodes[i];
    if (a->op != OpId::ATTENTION || i + 1 >= nodes.size() || nodes[i + 1]->op != OpId::MUL_MAT) return 0;
    const Tensor* x = nodes[i + 1]->src[1];
    if (x != a && !(x->view_src == a && x->view_offs == 0)) return 0;
    const int64_t Dv = a->ne[0], H = a->ne[1], T = a->ne[2];
    if (a->type != DType::F32 || x->type != DType::F32 || !a->is_contiguous() || !x->is_contiguous() || a->ne[3] != 1 ||
        x->ne[0] != Dv * H || x->nrows() != T)
        return 0;
    const DType at = quant_for(nodes, i + 1, x);
    if (at == DType::F32 || Dv % block_size(at) != 0) return 0;
    return record_attention_act(*a, x, at, r) ? 1 : 0;
}

}  // namespace

size_t record_fused(const std::vector<Tensor*>& nodes, size_t i, Recorder& r) {
    if (const size_t k = head_rows(nodes, i, r)) return k;
    if (const size_t k = norm_chain(nodes, i, r)) return k;
    if (const size_t k = attention_act(nodes, i, r)) return k;
    return glu(nodes, i, r);
}

}  // namespace ls::vk
