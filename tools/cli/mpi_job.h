// A job that mpirun started (issue 31): the model's layers split over the ranks as pipeline
// stages, rank 0 doing what the command does (tokenizing, sampling, speaking to the user,
// serving HTTP) and the others following its session call for call.
#pragma once
#include <string>

#include "core/sched/transport.h"
#include "tools/cli/cli_args.h"

namespace ls::cli {

// Every rank: ends the job, naming the rank and host, when its model file or lockstep differs
// from rank 0's (a checksum of the GGUF header, the version and the wire protocol).
void check_same_job(Transport& link, const std::string& model_path);

// Ranks other than 0: loads this rank's stage and follows rank 0 until it ends the job.
int follow_rank0(const Options& o);

// Resident bytes of this process (VmRSS; 0 where unknown): what each rank reports after loading.
size_t resident_bytes();

// The device name plans give rank r's stage.
inline std::string rank_device_name(int r) { return "rank" + std::to_string(r); }

}  // namespace ls::cli
