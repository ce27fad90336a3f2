#include "tools/cli/mpi_job.h"

#include <cstdio>
#include <cstring>
#include <fstream>

#include "backends/mpi/mpi_transport.h"
#include "core/gguf/gguf.h"
#include "core/runtime/session.h"
#include "tools/cli/app.h"

#ifndef LOCKSTEP_VERSION
#define LOCKSTEP_VERSION "unknown"
#endif

namespace ls::cli {

namespace {
// Bumped whenever what ranks exchange changes (Session's commands, the scheduler's crossings).
constexpr uint64_t kWireVersion = 1;

uint64_t fnv1a(const uint8_t* p, size_t n, uint64_t h = 1469598103934665603ull) {
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

}  // namespace

// Resident memory of this process, from /proc/self/status (0 where unknown).
size_t resident_bytes() {
    std::ifstream f("/proc/self/status");
    std::string key;
    while (f >> key) {
        if (key == "VmRSS:") {
            size_t kb = 0;
            f >> kb;
            return kb * 1024;
        }
        f.ignore(1 << 20, '\n');
    }
    return 0;
}

void check_same_job(Transport& link, const std::string& model_path) {
    uint64_t h = kWireVersion;
    h = fnv1a(reinterpret_cast<const uint8_t*>(LOCKSTEP_VERSION), std::strlen(LOCKSTEP_VERSION), h);
    std::string what = "lockstep " LOCKSTEP_VERSION " (wire " + std::to_string(kWireVersion) + ")";
    uint64_t file_h = 0;
    try {
        auto f = GgufFile::open(model_path);
        // The header: metadata and tensor table, everything before the first tensor's bytes.
        size_t header = f->size();
        for (const GgufTensorInfo& t : f->tensors()) header = std::min(header, size_t(t.data - f->base()));
        file_h = fnv1a(f->base(), header);
    } catch (const std::exception& e) {
        abort_mpi_job("lockstep: rank " + std::to_string(link.rank()) + " on " + link.host() + ": cannot open its model: " + e.what());
    }
    std::vector<uint8_t> mine(16);
    std::memcpy(mine.data(), &h, 8);
    std::memcpy(mine.data() + 8, &file_h, 8);
    std::vector<uint8_t> lead = mine;
    link.broadcast(lead);
    if (lead.size() != 16)
        abort_mpi_job("lockstep: rank " + std::to_string(link.rank()) + " on " + link.host() +
                      ": rank 0 sent no start-up check (are all ranks running the same lockstep?)");
    uint64_t lead_h = 0, lead_file = 0;
    std::memcpy(&lead_h, lead.data(), 8);
    std::memcpy(&lead_file, lead.data() + 8, 8);
    if (lead_h != h)
        abort_mpi_job("lockstep: rank " + std::to_string(link.rank()) + " on " + link.host() + " runs " + what +
                      ", which differs from rank 0's: every rank must run the same lockstep");
    if (lead_file != file_h)
        abort_mpi_job("lockstep: rank " + std::to_string(link.rank()) + " on " + link.host() + ": its model file " + model_path +
                      " differs from rank 0's (GGUF header checksum): every rank must load the same file");
}

int follow_rank0(const Options& o) {
    Transport& link = *process_transport();
    const std::string where = "lockstep: rank " + std::to_string(link.rank()) + " on " + link.host();
    try {
        App app = open_app(o);
        Session::follow_rank0(*app.model, link);
    } catch (const std::exception& e) {
        abort_mpi_job(where + ": " + e.what());
    }
    return 0;
}

}  // namespace ls::cli
