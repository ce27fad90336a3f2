// Helpers shared by the tests.
#pragma once
#include <string>

namespace ls::test {

// The default model (Gemma 3 270M Q4_K_M): $LOCKSTEP_MODEL, else the cache path that
// tools/fetch_model.sh fills. Fails the calling test with a clear message if absent.
std::string default_model_path();
// Root of the source tree (for files under tests/data).
std::string source_dir();
std::string test_data(const std::string& rel);

}  // namespace ls::test
