// The run table of the recurrent ops (conv1d_scan, delta_scan), SEMANTICS.md section 2, read
// and validated on the host by every backend before any state is touched.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ls {

struct ScanRun {
    int32_t slot, first, n, reset;
};

// runs: n_runs x (slot, first, n, reset); order: T token indices. Throws std::out_of_range
// unless every slot is in [0, n_slots) and used by one run only (two runs of one slot would
// race on its state), the runs cover order[0..T) without overlap, and order is a permutation
// of 0..T-1 (each token scanned exactly once).
inline std::vector<ScanRun> read_scan_runs(const int32_t* runs, int64_t n_runs, const int32_t* order, int64_t T,
                                           int64_t n_slots, const char* op) {
    auto bad = [&](const std::string& what) { throw std::out_of_range(std::string(op) + ": " + what); };
    std::vector<ScanRun> v(static_cast<size_t>(n_runs));
    std::vector<uint8_t> slot_used(static_cast<size_t>(n_slots), 0), tok_seen(static_cast<size_t>(T), 0);
    int64_t covered = 0;
    for (int64_t r = 0; r < n_runs; ++r) {
        ScanRun s{runs[4 * r], runs[4 * r + 1], runs[4 * r + 2], runs[4 * r + 3]};
        if (s.slot < 0 || s.slot >= n_slots) bad("run " + std::to_string(r) + " names slot " + std::to_string(s.slot) +
                                                 " outside [0, " + std::to_string(n_slots) + ")");
        if (slot_used[size_t(s.slot)]++) bad("slot " + std::to_string(s.slot) + " appears in two runs");
        if (s.first != covered || s.n < 1 || int64_t(s.first) + s.n > T)
            bad("run " + std::to_string(r) + " (first " + std::to_string(s.first) + ", n " + std::to_string(s.n) +
                ") does not continue the runs before it inside " + std::to_string(T) + " tokens");
        covered += s.n;
        v[size_t(r)] = s;
    }
    if (covered != T) bad("the runs cover " + std::to_string(covered) + " of " + std::to_string(T) + " tokens");
    for (int64_t i = 0; i < T; ++i) {
        if (order[i] < 0 || order[i] >= T || tok_seen[size_t(order[i])]++)
            bad("order is not a permutation of the ubatch's tokens (entry " + std::to_string(i) + ")");
    }
    return v;
}

}  // namespace ls
