// What every CLI command starts from: the backend, the model and the tokenizer.
#pragma once
#include <memory>

#include "core/models/model.h"
#include "core/sampling/sampler.h"
#include "core/runtime/session.h"
#include "core/runtime/speculative.h"
#include "core/text/tokenizer.h"
#include "loader/open_model.h"
#include "tools/cli/cli_args.h"

namespace ls::cli {

struct App {
    std::string model_path;
    std::vector<std::unique_ptr<Backend>> devices;  // every device opened (open_devices)
    Backend* backend = nullptr;                     // the model's first: its token embedding's
    // "cpu", "cuda0", "cpu+cuda0" (a split model): what bench and the load line print.
    std::string device_label() const;
    std::unique_ptr<Model> model;
    std::unique_ptr<Tokenizer> tokenizer;
    std::unique_ptr<Model> draft_model;      // -md: on the same backend, vocabulary checked at load
    std::unique_ptr<Session> draft_session;  // made by speculator()
    SessionParams session_params(const Options& o) const;
    SamplerParams sampler_params(const Options& o) const;
    mutable std::shared_ptr<const grammar::TokenMask> grammar_vocab_;  // built on the first grammar
    SpecParams spec_params(const Options& o) const;
    // The guess source --spec asks for, for sequence 0 of `target` (null with --spec off).
    std::unique_ptr<Speculator> speculator(const Options& o, const Session& target);
};

App open_app(const Options& o);
// The device and placement flags as the loader takes them (the KV cache sized by -c, -np, -ub).
ModelOpenOptions model_open_options(const Options& o);

int cmd_run(const Options& o);
int cmd_chat(const Options& o);
int cmd_perplexity(const Options& o);
int cmd_bench(const Options& o);
int cmd_info(const Options& o);
int cmd_devices(const Options& o);
int cmd_serve(const Options& o);
int cmd_embed(const Options& o);

}  // namespace ls::cli
