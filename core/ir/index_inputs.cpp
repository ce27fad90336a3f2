#include "core/ir/index_inputs.h"

#include <set>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/ir/op_params.h"
#include "core/rules/attention_rule.h"
#include "core/rules/row_index_rule.h"
#include "core/rules/scan_runs.h"

namespace ls {

bool is_index_input(const Tensor* t) { return t && t->kind == TensorKind::Input && !t->view_src && t->is_contiguous(); }

const uint8_t* index_bytes(const Graph& g, const Tensor* t, const char* op) {
    const std::vector<uint8_t>* d = is_index_input(t) ? g.host_data(t) : nullptr;
    if (!d)
        throw std::logic_error(std::string(op) + ": index tensor '" + t->name + "' is not a graph input with host bytes");
    return d->data();
}

void check_index_inputs(const Graph& g) {
    auto input = [&](const Tensor* t) { return is_index_input(t) && g.host_data(t); };
    // Every layer reads the same few index inputs: each (input, bound) is checked once.
    std::set<std::tuple<const Tensor*, const Tensor*, int64_t, int64_t, int64_t>> done;
    auto first = [&](const Tensor* a, const Tensor* b, int64_t x, int64_t y, int64_t z = 0) { return done.insert({a, b, x, y, z}).second; };
    auto rows = [&](const Tensor* idx, int64_t n_rows, const char* op) {
        if (!input(idx) || !first(idx, nullptr, n_rows, 0)) return;
        check_row_indices(index_bytes(g, idx, op), size_t(idx->nb[0]), idx->type == DType::I64, idx->ne[0], n_rows, op);
    };
    auto runs = [&](const Tensor* r, const Tensor* order, int64_t T, int64_t n_slots, const char* op) {
        if (!input(r) || !input(order) || !first(r, order, T, n_slots)) return;
        read_scan_runs(index_data<int32_t>(g, r, op), r->ne[1], index_data<int32_t>(g, order, op), T, n_slots, op);
    };
    for (const Tensor* n : g.nodes()) {
        switch (n->op) {
            case OpId::GET_ROWS: rows(n->src[1], n->src[0]->ne[1], "get_rows"); break;
            case OpId::SET_ROWS: rows(n->src[1], n->ne[1], "set_rows"); break;
            case OpId::CONV1D_SCAN: runs(n->src[3], n->src[4], n->src[0]->ne[1], n->src[2]->ne[1], "conv1d_scan"); break;
            case OpId::DELTA_SCAN: runs(n->src[4], n->src[5], n->src[0]->nrows(), n->src[3]->ne[1], "delta_scan"); break;
            case OpId::SSM_SCAN: runs(n->src[4], n->src[5], n->src[0]->nrows(), n->src[3]->ne[1], "ssm_scan"); break;
            case OpId::ATTENTION: {
                const AttentionParams p = n->get_params<AttentionParams>();
                const Tensor *pos = n->src[3], *seq = n->src[4];
                const int64_t n_seq = n->src[1]->ne[1] / p.ring_rows;
                if (!input(pos) || !input(seq) || !first(pos, seq, p.window, p.ring_rows, n_seq)) break;
                const int32_t* ps = index_data<int32_t>(g, pos, "attention");
                const int32_t* sq = index_data<int32_t>(g, seq, "attention");
                const int64_t T = pos->ne[0];
                for (int64_t t = 0; t < T; ++t)
                    check_attention_query(sq[t], ps[t], attn_first_of(ps, t, T, p.window), p.ring_rows, n_seq);
                break;
            }
            default: break;
        }
    }
}

}  // namespace ls
