#include "tools/cli/app.h"

#include "core/grammar/json_schema.h"
#include "core/runtime/grammar_vocab.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "backends/registry.h"
#include "core/runtime/default_model.h"
#include "core/models/registry.h"
#include "loader/open_model.h"
#include "core/sched/remote_backend.h"
#include "tools/cli/mpi_job.h"

namespace ls::cli {

namespace {
// Under mpirun: this rank's stage on its own device (--backend, --device), the other ranks'
// as RemoteBackends; layers split over the ranks (--tensor-split: shares per rank), the token
// embedding on rank 0, the output head on the last.
void open_stage(const Options& o, App& a, Transport& link) {
    PlacementFlags f;
    f.tensor_split = o.placement.tensor_split;
    if (!o.devices.empty() || o.placement.n_gpu_layers != PlacementFlags::kAll || !o.placement.overrides.empty() ||
        o.placement.cpu_moe || o.placement.n_cpu_moe > 0 || !o.placement.split_layers || o.placement.split_rows)
        throw std::runtime_error("under mpirun each rank runs its stage on one device (--backend, --device N) and "
                                 "--split-mode layer splits the layers over the ranks (--tensor-split: shares per rank); "
                                 "--device lists, -ngl, -ot and --cpu-moe are for one process");
    if (!o.draft_model.empty()) throw std::runtime_error("under mpirun there is no draft model (-md): --spec lookup or off");
    std::vector<ModelDevice> mds;
    for (int r = 0; r < link.size(); ++r) {
        if (r == link.rank()) a.devices.push_back(create_backend({o.backend, o.device, o.threads}));
        else a.devices.push_back(std::make_unique<RemoteBackend>(r));
        mds.push_back({a.devices.back().get(), {rank_device_name(r), 0, false}, r == link.rank() && o.backend == "cpu"});
    }
    Model::LoadOptions lo;
    // A CPU stage maps its share in place or copies it, as one process would (--mmap, --no-mmap).
    lo.mem = weight_memory(o.mmap);
    lo.placement = f;
    lo.state = {o.n_ctx, std::max(1, o.n_parallel), o.n_ubatch, o.type_k, o.type_v};
    a.model = load_model(a.model_path, mds, lo);
    const PlacementPlan& p = a.model->placement();
    for (int r = 0; r < link.size(); ++r)
        if (p.weight_bytes[size_t(r)] == 0)
            throw std::runtime_error("rank " + std::to_string(r) + " would hold no layer (" + p.describe() +
                                     "): give every rank a share (--tensor-split) or use fewer ranks");
    a.backend = a.model->backends().at(0);
    if (link.rank() == 0) std::fprintf(stderr, "lockstep: placement over %d ranks: %s\n", link.size(), p.describe().c_str());
    std::fprintf(stderr, "lockstep: rank %d on %s: %s of weights on %s; %s resident\n", link.rank(), link.host().c_str(),
                 format_bytes(p.weight_bytes[size_t(link.rank())]).c_str(), o.backend.c_str(), format_bytes(resident_bytes()).c_str());
    a.tokenizer = std::make_unique<Tokenizer>(Tokenizer::from_gguf(a.model->gguf()));
}
}  // namespace

ModelOpenOptions model_open_options(const Options& o) {
    ModelOpenOptions m;
    m.backend = o.backend;
    m.device = o.device;
    m.threads = o.threads;
    m.devices = o.devices;
    m.placement = o.placement;
    m.mmap = o.mmap;
    m.state = {o.n_ctx, std::max(1, o.n_parallel), o.n_ubatch, o.type_k, o.type_v};
    return m;
}

App open_app(const Options& o) {
    App a;
    a.model_path = o.model.empty() ? ls::default_model_path() : o.model;
    if (!std::filesystem::exists(a.model_path)) {
        if (o.model.empty())
            throw std::runtime_error("default model not found at " + a.model_path +
                                     "; run tools/scripts/fetch_model.sh, or pass -m FILE");
        throw std::runtime_error("model file not found: " + a.model_path);
    }
    if (Transport* link = process_transport()) {
        open_stage(o, a, *link);
        return a;
    }
    if (o.backend == "reference" && (o.placement.any() || !o.devices.empty()))
        throw std::runtime_error("--backend reference runs alone: no --device list or placement flags");
    OpenedModel opened = open_model(a.model_path, model_open_options(o));
    if (!opened.any_gpu && o.placement.n_gpu_layers != PlacementFlags::kAll)
        std::fprintf(stderr, "lockstep: no GPU device is open (--backend cuda|vulkan or --device cuda0): -ngl has nothing to offload to\n");
    a.devices = std::move(opened.devices);
    a.model = std::move(opened.model);
    a.backend = a.model->backends().at(0);
    if (a.model->backends().size() > 1 || o.placement.any())
        std::fprintf(stderr, "lockstep: placement: %s\n", a.model->placement().describe().c_str());
    a.tokenizer = std::make_unique<Tokenizer>(Tokenizer::from_gguf(a.model->gguf()));
    if (!o.draft_model.empty()) {
        if (!std::filesystem::exists(o.draft_model)) throw std::runtime_error("draft model file not found: " + o.draft_model);
        // The draft is small: on the device of the target's output head, where its guesses are checked.
        a.draft_model = load_model(o.draft_model, *a.model->output_backend(), weight_memory(o.mmap));
        check_draft_vocabulary(*a.model, *a.draft_model);
    }
    return a;
}

std::string App::device_label() const {
    std::string s;
    for (int d : model->placement().used_devices()) s += (s.empty() ? "" : "+") + model->placement().devices[size_t(d)].name;
    return s;
}

SessionParams App::session_params(const Options& o) const {
    SessionParams p;
    p.n_ctx = o.n_ctx;
    p.n_batch = o.n_batch;
    p.n_ubatch = o.n_ubatch;
    p.type_k = o.type_k;
    p.type_v = o.type_v;
    return p;
}

SamplerParams App::sampler_params(const Options& o) const {
    SamplerParams p;
    p.temp = o.temp;
    p.top_k = o.top_k;
    p.top_p = o.top_p;
    p.min_p = o.min_p;
    p.repeat_penalty = o.repeat_penalty;
    p.seed = o.seed;
    if (!o.grammar.empty() && !o.json_schema.empty()) throw UsageError("--grammar and --json-schema both constrain the output: give one");
    if (!o.grammar.empty() || !o.json_schema.empty()) {
        try {
            std::string gbnf = o.grammar;
            if (!o.json_schema.empty()) {
                nlohmann::ordered_json schema;
                try {
                    schema = nlohmann::ordered_json::parse(o.json_schema);
                } catch (const nlohmann::json::exception& e) {
                    throw UsageError(std::string("--json-schema: not JSON: ") + e.what());
                }
                gbnf = grammar::json_schema_to_gbnf(schema);
            }
            p.grammar = grammar::Grammar::parse(gbnf);
        } catch (const grammar::Error& e) {
            throw UsageError(std::string(o.grammar.empty() ? "--json-schema: " : "--grammar: ") + e.what());
        }
        if (!grammar_vocab_) grammar_vocab_ = grammar_vocab(*tokenizer);
        p.grammar_vocab = grammar_vocab_;
    }
    return p;
}

SpecParams App::spec_params(const Options& o) const {
    SpecParams p;
    p.mode = spec_mode_from_name(o.spec);
    p.draft_max = o.draft_max;
    p.draft_min = o.draft_min;
    return p;
}

std::unique_ptr<Speculator> App::speculator(const Options& o, const Session& target) {
    const SpecParams p = spec_params(o);
    if (p.mode == SpecMode::Off) return nullptr;
    if (p.mode == SpecMode::Draft) {
        SessionParams dp = target.params();
        dp.n_seq = 1;
        draft_session = std::make_unique<Session>(*draft_model, *backend, dp);
    }
    return std::make_unique<Speculator>(p, draft_session.get(), 0);
}

}  // namespace ls::cli
