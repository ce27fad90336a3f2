// The CPU backend: oneTBB for parallelism, xsimd kernels (cpu/ops/<op>.cpp).
#pragma once
#include <memory>

#include "core/backend.h"

namespace ls {

// n_threads <= 0: one per core.
std::unique_ptr<Backend> make_cpu_backend(int n_threads = 0);

}  // namespace ls
