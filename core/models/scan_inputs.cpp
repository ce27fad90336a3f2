#include "core/models/scan_inputs.h"

#include <algorithm>
#include <vector>

#include "core/ir/ops.h"

namespace ls {

ScanInputs scan_inputs(Graph& g, const Ubatch& ub) {
    const int64_t T = int64_t(ub.tokens.size());
    std::vector<int32_t> runs, order, seqs;
    for (int32_t s : ub.seq)
        if (std::find(seqs.begin(), seqs.end(), s) == seqs.end()) seqs.push_back(s);
    for (int32_t s : seqs) {
        const int32_t first = int32_t(order.size());
        int32_t first_pos = -1;
        for (int64_t i = 0; i < T; ++i)
            if (ub.seq[size_t(i)] == s) {
                if (first_pos < 0) first_pos = ub.pos[size_t(i)];
                order.push_back(int32_t(i));
            }
        runs.insert(runs.end(), {s, first, int32_t(order.size()) - first, first_pos == 0 ? 1 : 0});
    }
    return {g.input(DType::I32, {4, int64_t(runs.size() / 4)}, runs.data(), "scan_runs"),
            g.input(DType::I32, {T}, order.data(), "scan_order")};
}

Tensor* conv_kernel_f32(Graph& g, Tensor* w, Tensor*& rows) {
    if (w->type == DType::F32) return w;
    if (!rows) {
        std::vector<int32_t> all(static_cast<size_t>(w->ne[1]));
        for (size_t i = 0; i < all.size(); ++i) all[i] = int32_t(i);
        rows = g.input(DType::I32, {w->ne[1]}, all.data(), "conv_rows");
    }
    return ops::get_rows(g, w, rows);
}

}  // namespace ls
