// Pipeline stages over Open MPI (issue 31): the Transport of a process that mpirun started as
// one rank of several. The launcher starts and connects the ranks (ssh, or any agent it is
// given), so lockstep opens no port of its own.
#pragma once
#include <memory>
#include <string>

#include "core/sched/transport.h"

namespace ls {

// Whether this process was started by mpirun as one of several ranks (Open MPI's environment);
// false in builds without MPI.
bool launched_by_mpirun();

// Initializes MPI (threads: serialized, as the server calls it from its engine thread), and
// ends it when destroyed. Throws when this build has no MPI.
std::unique_ptr<Transport> open_mpi_transport();

// Ends the whole job at once from any rank, after `message` is printed (MPI_Abort): a rank that
// cannot go on must not leave the others waiting.
[[noreturn]] void abort_mpi_job(const std::string& message);

}  // namespace ls
