// Helpers shared by the tests.
#pragma once
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/ir/backend.h"

namespace ls::test {

// The default model (Gemma 3 270M Q4_K_M): $LOCKSTEP_MODEL, else the cache path that
// tools/scripts/fetch_model.sh fills. Fails the calling test with a clear message if absent.
std::string default_model_path();
// Root of the source tree (for files under tests/data).
std::string source_dir();
std::string test_data(const std::string& rel);
// A scratch file path of this process: temp dir / "lockstep_<pid>_<name>". CTest runs the
// suites in parallel processes over the same cases, and a file rewritten by one while
// another has it mapped is a SIGBUS (seen as "Bus error" in vulkan_suite).
std::string temp_path(const std::string& name);
// The resident bytes (Rss in /proc/self/smaps) of the mapping that begins at `start`: how
// much of a mapped file this process holds in memory. -1 where smaps is unreadable or no
// mapping begins there.
long long mapping_rss(const void* start);
// Names (as --backend takes them) of the backends that op, contract and model tests compare
// with the reference: $LOCKSTEP_TEST_BACKENDS (comma-separated; "all" = every backend this
// build has and this machine can run), "cpu" when unset. Each GPU backend's suite is its own
// CTest entry that sets it (and reports itself skipped where no device exists).
std::vector<std::string> backend_names_under_test();
// The same list with "reference" first: for tests that check a property on every backend.
std::vector<std::string> all_backend_names();
// A backend by name, device 0, two threads for CPU work.
std::unique_ptr<Backend> make_backend(const std::string& name);
std::vector<std::unique_ptr<Backend>> backends_under_test();
// Whether the named backend's device 0 runs on the CPU: Mesa's lavapipe, or the host emulator
// of the CUDA runtime. There the slowest generation tests check fewer tokens (CI time; the
// same cases run at full length on a real GPU, tools/scripts/gpu_check.sh).
bool cpu_emulated_gpu(const std::string& backend);
// Whether this binary was built with AddressSanitizer (LOCKSTEP_SANITIZE: the sanitizer run
// of tools/scripts/test.sh, where each test costs several times its Release time, on a CPU
// shared with the emulated CUDA runs). There a test whose time goes into going over the same
// code many times (every combination of a sweep) runs a reduced sweep that still reaches each
// path; the Release run keeps the whole sweep. A fact of the build, not a setting, so the
// Release run cannot be reduced by accident.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif
// Whether `be` can run every node of g. If not, the test fails (a non-fatal check naming the
// backend, the op and its shape) and the caller skips the case: every backend suite must run
// every case, so a lost kernel or a wrong supports() rule cannot pass as a skip.
bool runs_all(const Backend& be, const Graph& g);

// The larger of a running worst difference and a new one, NaN if either is NaN: std::max
// and std::fmax drop a NaN, so a NaN output would leave the worst at 0 and pass its bound.
inline double worst_of(double worst, double d) {
    if (std::isnan(worst) || std::isnan(d)) return std::numeric_limits<double>::quiet_NaN();
    return d > worst ? d : worst;
}

}  // namespace ls::test
