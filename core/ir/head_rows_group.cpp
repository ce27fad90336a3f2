#include "core/ir/head_rows_group.h"

namespace ls {

HeadRowsGroup find_head_rows(const std::vector<Tensor*>& nodes, size_t i) {
    HeadRowsGroup gr;
    auto& ch = gr.chains;
    int& nc = gr.n;
    size_t j = i;
    for (; j < nodes.size() && j - i < 3 * size_t(HeadRowsGroup::kMaxChains); ++j) {
        const Tensor* n = nodes[j];
        if (n->op != OpId::RMS_NORM && n->op != OpId::ROPE && n->op != OpId::SET_ROWS) break;
        const Tensor* in = n->src[0];
        // A node that reads what a set_rows of the group wrote (its cache) must run after it:
        // the group ends before it.
        bool reads_written = false;
        for (size_t k = i; k < j; ++k)
            if (nodes[k]->op == OpId::SET_ROWS)
                for (const Tensor* s : n->src) reads_written |= s && view_base(s) == view_base(nodes[k]->src[2]);
        if (reads_written) break;
        int c = -1;
        for (int k = 0; k < nc; ++k)
            if (ch[size_t(k)].cur && view_base(in) == view_base(ch[size_t(k)].cur) && !ch[size_t(k)].cur->view_src) c = k;
        // A node that reads another group node's output other than as its chain's next stage
        // (two readers of one output): the group ends before it.
        bool reads_group = false;
        for (size_t k = i; k < j; ++k) reads_group |= view_base(in) == view_base(nodes[k]) && nodes[k]->op != OpId::SET_ROWS;
        if (c < 0 && reads_group) break;
        if (c < 0) {
            if (nc == HeadRowsGroup::kMaxChains) break;
            c = nc++;
            ch[size_t(c)] = HeadRowChain{};
            ch[size_t(c)].x = in;
        }
        HeadRowChain& k = ch[size_t(c)];
        bool ok = false;
        if (n->op == OpId::RMS_NORM) ok = !k.cur;
        else if (n->op == OpId::ROPE) ok = !k.rope && !k.set && (k.cur ? in == k.cur : true);
        else ok = !k.set;
        if (!ok) {
            if (!k.cur) --nc;
            break;
        }
        (n->op == OpId::RMS_NORM ? k.norm : n->op == OpId::ROPE ? k.rope : k.set) = n;
        k.cur = n;
    }
    gr.nodes = j - i;
    return gr;
}

}  // namespace ls
