// The reference backend: host memory and the plain reference ops of core/ref/. It is the
// oracle every other backend is tested against (slow on purpose: no SIMD, one thread).
#pragma once
#include <memory>

#include "core/ir/backend.h"

namespace ls {

std::unique_ptr<Backend> make_reference_backend();

}  // namespace ls
