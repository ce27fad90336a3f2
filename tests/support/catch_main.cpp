#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>

#include "backends/registry.h"

// LOCKSTEP_REQUIRE_DEVICE=<backend>: a CTest entry that runs one GPU backend's suite exits
// with 77 (its SKIP_RETURN_CODE), saying why, when this build lacks the backend or this
// machine has no device for it, instead of passing without having run anything.
int main(int argc, char* argv[]) {
    if (const char* need = std::getenv("LOCKSTEP_REQUIRE_DEVICE"); need && *need) {
        if (!ls::backend_built(need)) {
            std::printf("SKIPPED: this build has no %s backend\n", need);
            return 77;
        }
        if (ls::backend_device_count(need) == 0) {
            std::printf("SKIPPED: the %s backend is built but this machine has no %s device (driver missing or no GPU); "
                        "its kernels were compiled, not run\n", need, need);
            return 77;
        }
    }
    return Catch::Session().run(argc, argv);
}
