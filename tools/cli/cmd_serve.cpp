#include <filesystem>

#include "core/runtime/default_model.h"
#include "tools/cli/app.h"
#include "tools/server/serve.h"

namespace ls::cli {

int cmd_serve(const Options& o) {
    server::ServeConfig c;
    c.model_path = o.model.empty() ? ls::default_model_path() : o.model;
    if (!std::filesystem::exists(c.model_path))
        throw std::runtime_error(o.model.empty() ? "default model not found at " + c.model_path +
                                                       "; run tools/scripts/fetch_model.sh, or pass -m FILE"
                                                 : "model file not found: " + c.model_path);
    c.open = model_open_options(o);
    if (process_transport())  // under mpirun: rank 0's stage, loaded as every rank loads its own
        c.load = [o](std::vector<std::unique_ptr<Backend>>& devices, std::unique_ptr<Model>& model) {
            App a = open_app(o);
            devices = std::move(a.devices);
            model = std::move(a.model);
        };
    App defaults;  // its parameter mappings only: the server loads the model itself, after it listens
    c.session = defaults.session_params(o);
    c.session.n_seq = o.n_parallel;
    c.sampling = defaults.sampler_params(o);
    if (o.spec == "draft") throw UsageError("the server's slots speculate with prompt lookup only: --spec off or lookup");
    c.spec = defaults.spec_params(o);
    c.host = o.host;
    c.port = o.port;
    c.api_key = o.api_key;
    c.max_queue = o.max_queue;
    c.timeout_s = o.timeout_s;
    c.read_timeout_s = o.read_timeout_s;
    c.cors_origin = o.cors_origin;
    c.chat_template = o.chat_template;
    c.chat_template_name = o.chat_template_name;
    c.mmproj = o.mmproj;
    c.image_min_tokens = o.image_min_tokens;
    c.image_max_tokens = o.image_max_tokens;
    c.max_body_bytes = size_t(o.max_body_mib) << 20;
    c.pooling = o.pooling;
    c.embd_normalize = o.embd_normalize;
    return server::serve(c);
}

}  // namespace ls::cli
