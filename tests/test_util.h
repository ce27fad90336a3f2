// Helpers shared by the tests.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"

namespace ls::test {

// The default model (Gemma 3 270M Q4_K_M): $LOCKSTEP_MODEL, else the cache path that
// tools/fetch_model.sh fills. Fails the calling test with a clear message if absent.
std::string default_model_path();
// Root of the source tree (for files under tests/data).
std::string source_dir();
std::string test_data(const std::string& rel);
// The backends op and model tests compare with the reference: the CPU, and each GPU
// backend this build has and this machine can run.
std::vector<std::unique_ptr<Backend>> backends_under_test();

}  // namespace ls::test
