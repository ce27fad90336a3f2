// lockstep: run, chat, perplexity, bench, info, devices, serve, embed.
#include <csignal>
#include <cstdio>
#include <exception>

#include "backends/mpi/mpi_transport.h"
#include "core/runtime/default_model.h"
#include "tools/cli/app.h"
#include "tools/cli/mpi_job.h"

namespace {
// The commands a job that mpirun started can run: rank 0 runs it, the others follow.
bool runs_under_mpirun(const std::string& command) {
    return command == "run" || command == "chat" || command == "perplexity" || command == "serve" || command == "bench";
}
}  // namespace

int main(int argc, char** argv) {
    using namespace ls::cli;
    Options o;
    try {
        o = parse_args(argc, argv);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "lockstep: %s\n\n%s", e.what(), usage(argc > 1 ? argv[1] : "").c_str());
        return 2;
    }
    if (o.help) {
        std::printf("%s", usage(o.command).c_str());
        return 0;
    }
    // Under mpirun: one rank of a pipeline (issue 31). Rank 0 runs the command; the others load
    // their stage and follow it. Any error on any rank ends the whole job at once.
    std::unique_ptr<ls::Transport> link;
    if (ls::launched_by_mpirun()) {
        try {
            link = ls::open_mpi_transport();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "lockstep: error: %s\n", e.what());
            return 1;
        }
        ls::set_process_transport(link.get());
        const std::string where = "lockstep " + o.command + ": rank " + std::to_string(link->rank()) + " on " + link->host();
        if (!runs_under_mpirun(o.command)) {
            if (link->rank() == 0)
                std::fprintf(stderr, "lockstep %s: not a command for mpirun (run, chat, perplexity, bench and serve are)\n", o.command.c_str());
            return 2;
        }
        // Every rank, before anything else: the same lockstep and the same model file.
        check_same_job(*link, o.model.empty() ? ls::default_model_path() : o.model);
        // mpirun passes SIGTERM and SIGINT to every rank: rank 0 ends the job in order (a server
        // finishes its requests), and the others leave when it tells them, not before.
        if (link->rank() != 0) {
            std::signal(SIGTERM, SIG_IGN);
            std::signal(SIGINT, SIG_IGN);
            return follow_rank0(o);
        }
        int rc = 2;
        try {
            if (o.command == "run") rc = cmd_run(o);
            else if (o.command == "chat") rc = cmd_chat(o);
            else if (o.command == "perplexity") rc = cmd_perplexity(o);
            else if (o.command == "bench") rc = cmd_bench(o);
            else rc = cmd_serve(o);
        } catch (const std::exception& e) {
            ls::abort_mpi_job(where + ": error: " + e.what());
        }
        ls::Session::release_ranks(*link);
        return rc;
    }
    try {
        if (o.command == "run") return cmd_run(o);
        if (o.command == "chat") return cmd_chat(o);
        if (o.command == "perplexity") return cmd_perplexity(o);
        if (o.command == "bench") return cmd_bench(o);
        if (o.command == "info") return cmd_info(o);
        if (o.command == "devices") return cmd_devices(o);
        if (o.command == "serve") return cmd_serve(o);
        if (o.command == "embed") return cmd_embed(o);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "lockstep %s: %s\n\n%s", o.command.c_str(), e.what(), usage(o.command).c_str());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lockstep %s: error: %s\n", o.command.c_str(), e.what());
        return 1;
    }
    return 2;
}
