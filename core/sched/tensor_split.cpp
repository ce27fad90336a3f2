#include "core/sched/tensor_split.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ls {

std::vector<UnitSlice> split_units(int64_t n, int64_t granule, const std::vector<double>& shares) {
    if (shares.empty()) throw std::invalid_argument("tensor split: no device");
    if (granule < 1 || n < 0 || n % granule)
        throw std::invalid_argument("tensor split: " + std::to_string(n) + " units are not whole granules of " + std::to_string(granule));
    double total = 0;
    for (double s : shares) {
        if (!std::isfinite(s) || s < 0) throw std::invalid_argument("tensor split: shares must be >= 0");
        total += s;
    }
    if (total <= 0) throw std::invalid_argument("tensor split: the shares add up to 0");
    // Device d ends at the granule nearest its cumulative share: every granule goes to exactly
    // one device, the last device ends at n.
    const int64_t granules = n / granule;
    std::vector<UnitSlice> v(shares.size());
    double cum = 0;
    int64_t at = 0;
    for (size_t d = 0; d < shares.size(); ++d) {
        cum += shares[d];
        const int64_t end = d + 1 == shares.size() ? granules : std::min<int64_t>(granules, std::llround(cum / total * double(granules)));
        v[d] = {at * granule, std::max(at, end) * granule};
        at = std::max(at, end);
    }
    return v;
}

GatherLayout gather_layout(const std::vector<UnitSlice>& slices, int64_t unit_values, int64_t rows) {
    if (unit_values < 1 || rows < 0) throw std::invalid_argument("gather layout: bad row geometry");
    GatherLayout g;
    int64_t n = 0;
    for (const UnitSlice& s : slices) {
        if (s.begin != n || s.end < s.begin) throw std::invalid_argument("gather layout: slices must tile the dimension in order");
        n = s.end;
        g.padded = std::max(g.padded, s.size() * unit_values);
    }
    const int64_t width = n * unit_values;  // values per whole row
    for (size_t d = 0; d < slices.size(); ++d) {
        const int64_t len = slices[d].size() * unit_values;
        if (len == 0) continue;
        for (int64_t r = 0; r < rows; ++r)
            g.place.push_back({int64_t(d) * g.padded * rows + r * g.padded, r * width + slices[d].begin * unit_values, len});
    }
    return g;
}

}  // namespace ls
