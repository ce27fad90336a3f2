#include "tests/test_util.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "core/default_model.h"
#include "cpu/cpu_backend.h"

namespace ls::test {

std::string default_model_path() {
    const std::string p = ls::default_model_path();
    INFO("default model missing at " << p << ": run tools/fetch_model.sh (the README's test command does)");
    REQUIRE(std::filesystem::exists(p));
    return p;
}

std::vector<std::unique_ptr<Backend>> backends_under_test() {
    std::vector<std::unique_ptr<Backend>> v;
    v.push_back(make_cpu_backend());
    return v;
}

std::string source_dir() { return LOCKSTEP_SOURCE_DIR; }
std::string test_data(const std::string& rel) { return std::string(LOCKSTEP_TEST_DATA) + "/" + rel; }

}  // namespace ls::test
