// Tensor parallelism's host logic (README "Tensor parallelism"): which slice of an op's *output*
// dimension each GPU computes (--split-mode row's matrices, plan_placement), and how an NCCL
// all-gather's padded blocks put the slices back together (backends/cuda/nccl/). Only output dimensions are split, so every value is computed whole on
// one device, in the order one device would; the gather moves data and sums nothing, which keeps
// the same bits under any split (SEMANTICS.md section 5).
#pragma once
#include <cstdint>
#include <vector>

namespace ls {

struct UnitSlice {
    int64_t begin = 0, end = 0;  // [begin, end) in units of the split dimension
    int64_t size() const { return end - begin; }
};

// Splits n units (attention heads, FFN rows, vocabulary rows) over devices in proportion to
// `shares`, in whole granules (a KV head's group of query heads; a quantization block's rows),
// each device one contiguous range, in device order. Throws std::invalid_argument when n is
// not a multiple of the granule or the shares do not add up (negative, or all zero).
std::vector<UnitSlice> split_units(int64_t n, int64_t granule, const std::vector<double>& shares);

// An all-gather of per-device slices of rows (NCCL's ncclAllGather takes the same count from
// every rank): each device sends a buffer padded to the largest slice, `rows` rows of `padded`
// values each, slice-major; the gathered buffer holds device d's padded block at d * padded *
// rows. `place` lists the copies that turn it into whole rows [n, rows]: from the gathered buffer
// at `src`, `count` values, to the output at `dst`.
struct GatherLayout {
    int64_t padded = 0;  // values per row each device sends
    struct Copy {
        int64_t src = 0, dst = 0, count = 0;
    };
    std::vector<Copy> place;
};
GatherLayout gather_layout(const std::vector<UnitSlice>& slices, int64_t unit_values, int64_t rows);

}  // namespace ls
