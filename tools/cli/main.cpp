// lockstep: run, chat, perplexity, bench, info, devices, serve.
#include <cstdio>
#include <exception>

#include "tools/cli/app.h"

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
    try {
        if (o.command == "run") return cmd_run(o);
        if (o.command == "chat") return cmd_chat(o);
        if (o.command == "perplexity") return cmd_perplexity(o);
        if (o.command == "bench") return cmd_bench(o);
        if (o.command == "info") return cmd_info(o);
        if (o.command == "devices") return cmd_devices(o);
        if (o.command == "serve") return cmd_serve(o);
    } catch (const UsageError& e) {
        std::fprintf(stderr, "lockstep %s: %s\n\n%s", o.command.c_str(), e.what(), usage(o.command).c_str());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lockstep %s: error: %s\n", o.command.c_str(), e.what());
        return 1;
    }
    return 2;
}
