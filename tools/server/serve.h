// `lockstep serve`: an OpenAI-compatible HTTP server over one Session with -np slots.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/sampling/sampler.h"
#include "core/runtime/session.h"
#include "core/runtime/speculative.h"
#include "loader/open_model.h"

namespace ls::server {

struct ServeConfig {
    std::string model_path;
    // The devices and placement (loader/open_model.h); its KV size is taken from `session`.
    ModelOpenOptions open;
    // Loads the model in place of the above (the CLI's, under mpirun: this rank's stage):
    // fills the devices and the model.
    std::function<void(std::vector<std::unique_ptr<Backend>>&, std::unique_ptr<Model>&)> load;
    SessionParams session;      // n_ctx is each slot's context; n_seq the slots
    SamplerParams sampling;     // what a request leaves out
    SpecParams spec;            // prompt lookup in slots while few are busy (mode off or lookup)
    std::string host = "127.0.0.1";
    int port = 8080;
    std::string api_key;        // empty: none asked
    int max_queue = 64;         // requests waiting for a slot; more get 503
    int timeout_s = 600;        // a write to a client that does not read
    int read_timeout_s = 10;    // a request's head and body, from when the server awaits it (--read-timeout)
    size_t max_body_bytes = size_t(16) << 20;  // larger bodies get 413 before they are read
    std::string cors_origin;    // "": no CORS; "*" or one origin: Access-Control-Allow-Origin and preflights
    // /v1/embeddings: --pooling ("": the GGUF's <arch>.pooling_type) and --embd-normalize.
    std::string pooling;
    int embd_normalize = 2;
    // Chats render with the model's own template (tokenizer.chat_template); these override it:
    // a Jinja source (--chat-template-file) or one of the file's named templates.
    std::string chat_template, chat_template_name;
    std::string mmproj;  // --mmproj: the model's projector, for images in chats ("": none)
    int64_t image_min_tokens = 0, image_max_tokens = 0;  // --image-min-tokens / --image-max-tokens
};

// Listens, loads the model (GET /health answers 503 until it is ready), serves until SIGINT
// or SIGTERM. Returns the process exit code; throws for a model that fails to load.
int serve(const ServeConfig& c);

}  // namespace ls::server
