// A build without Open MPI (LOCKSTEP_MPI off, or libopenmpi-dev missing): a job that mpirun
// started is refused with what to install, rather than N copies each running alone.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "backends/mpi/mpi_transport.h"

namespace ls {

bool launched_by_mpirun() {
    const char* n = std::getenv("OMPI_COMM_WORLD_SIZE");
    return n && std::atoi(n) > 1;
}

std::unique_ptr<Transport> open_mpi_transport() {
    throw std::runtime_error("this build of lockstep has no MPI: install libopenmpi-dev (tools/scripts/setup.sh) and build again");
}

void abort_mpi_job(const std::string& message) {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::exit(1);
}

}  // namespace ls
