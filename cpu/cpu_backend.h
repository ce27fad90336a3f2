// The CPU backend: oneTBB for parallelism, xsimd kernels (cpu/ops/<op>.cpp).
#pragma once
#include <memory>

#include "core/ir/backend.h"

namespace ls {

// n_threads <= 0: one per core. single_sequence_scan: delta_scan runs its single-sequence-only
// twin (cpu/scan_single.h), for `lockstep bench --scan-vs-single` only.
std::unique_ptr<Backend> make_cpu_backend(int n_threads = 0, bool single_sequence_scan = false);

}  // namespace ls
