#include "tests/test_util.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>

#include "cpu/cpu_backend.h"

namespace ls::test {

std::string default_model_path() {
    std::string p;
    if (const char* e = std::getenv("LOCKSTEP_MODEL")) {
        p = e;
    } else {
        const char* cache = std::getenv("LOCKSTEP_CACHE");
        const char* xdg = std::getenv("XDG_CACHE_HOME");
        const char* home = std::getenv("HOME");
        std::string dir = cache ? cache : xdg ? std::string(xdg) + "/lockstep" : std::string(home ? home : ".") + "/.cache/lockstep";
        p = dir + "/gemma-3-270m-q4_k_m.gguf";
    }
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
