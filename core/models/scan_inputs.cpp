#include "core/models/scan_inputs.h"

#include <algorithm>
#include <vector>

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

}  // namespace ls
