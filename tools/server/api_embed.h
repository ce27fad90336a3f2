// POST /v1/embeddings (and /embeddings): OpenAI's request and response shapes over the engine's
// embeddings jobs. Every check a client can fail is made here, before anything is queued.
#pragma once
#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/runtime/embed.h"
#include "core/text/tokenizer.h"
#include "tools/server/embed_job.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace ls::server {

class Engine;
struct Metrics;

// What a request needs besides its body.
struct EmbedContext {
    const Tokenizer* tok = nullptr;
    int64_t n_ctx = 0;    // a slot's context: the longest input
    int64_t n_embd = 0;   // the vector's length (and the most `dimensions` may ask)
    int64_t n_vocab = 0;  // the model's embedding rows: token ids in [0, n_vocab)
    Pooling pooling = Pooling::None;  // the GGUF's <arch>.pooling_type, or --pooling
    std::string arch;
    int normalize = 2;    // --embd-normalize (llama.cpp's numbers; 2: euclidean)
    size_t max_piece_bytes = 0;  // Tokenizer::max_bytes_per_token (0: no bound)
    std::string model_id;  // answered as "model" when the request names none
    // A non-causal model (an encoder) evaluates an input whole, in one ubatch: the longest
    // input it takes (0: no such limit).
    int64_t one_ubatch = 0;
    std::string rerank_template;  // tokenizer.chat_template.rerank ("": the vocabulary's markers)
};

// The context of a loaded model: pooling from `pooling` ("none", "mean", "cls", "last"; "" the
// GGUF's), normalize as llama.cpp's --embd-normalize. Throws std::invalid_argument for a bad flag.
EmbedContext embed_context(const Model& m, const Tokenizer& tok, int64_t n_ctx, const std::string& pooling, int normalize,
                           const std::string& model_id);

struct EmbedRequest {
    EmbedParams job;
    bool base64 = false;     // encoding_format "base64": little-endian float32 bytes, base64
    int64_t dimensions = 0;  // 0: n_embd; else the first `dimensions` values, normalized again
    std::string model;
};

// Limits on one request.
constexpr size_t kMaxEmbedInputs = 2048;  // OpenAI's

// Throws ApiError (api_request.h) naming the problem.
EmbedRequest parse_embeddings(const nlohmann::json& body, const EmbedContext& ctx);
// The answer: {"object":"list","data":[{"object":"embedding","index":i,"embedding":...}],
// "model":...,"usage":{"prompt_tokens":N,"total_tokens":N}}.
nlohmann::json embeddings_response(const EmbedRequest& r, const EmbedResult& res, const EmbedContext& ctx);
// Standard base64 (RFC 4648, padded) of the vector's little-endian float32 bytes.
std::string base64_f32(const std::vector<float>& v);

// Queues `params` on the engine and waits for the vectors: true with them in `out`; false
// with `res` answered (503 when the queue is full or the server stops, 500 for a failure, 499
// when the client left: the job is cancelled).
bool run_embed_job(const EmbedParams& params, Engine& engine, Metrics& metrics, const std::atomic<bool>& ready, httplib::Response& res,
                   EmbedResult& out);

// The course of a route over embeddings jobs (/v1/embeddings, /v1/rerank): `parse` the body
// (an ApiError it throws is answered as its status and OpenAI-style error), run_embed_job,
// answer 200 with `respond`'s JSON.
void handle_embed_route(const std::string& body, Engine& engine, Metrics& metrics, const std::atomic<bool>& ready, httplib::Response& res,
                        const std::function<EmbedParams(const nlohmann::json&)>& parse,
                        const std::function<nlohmann::json(const EmbedResult&)>& respond);

// The route: parses, queues on the engine, waits (a client that leaves cancels the job),
// answers. `ready` false while the server shuts down (a failure then is a 503).
void handle_embeddings(const EmbedContext& ctx, Engine& engine, Metrics& metrics, const std::atomic<bool>& ready,
                       const httplib::Request& req, httplib::Response& res);

}  // namespace ls::server
