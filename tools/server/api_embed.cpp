#include "tools/server/api_embed.h"

#include <httplib.h>

#include <chrono>
#include <cstring>

#include "tools/server/api_request.h"
#include "tools/server/api_response.h"
#include "tools/server/engine.h"
#include "tools/server/http_gate.h"
#include "tools/server/metrics.h"

namespace ls::server {

using nlohmann::json;

namespace {

std::vector<int32_t> token_list(const json& a, const EmbedContext& ctx, size_t index) {
    std::vector<int32_t> ids;
    ids.reserve(a.size());
    for (const json& x : a) {
        if (!x.is_number_integer())
            throw ApiError(400, "'input' " + std::to_string(index) + " holds " + (x.is_number() ? x.dump() : std::string("a non-number")) +
                                    ", not a token id", "input");
        const bool neg = !x.is_number_unsigned() && x.get<int64_t>() < 0;
        if (neg || (x.is_number_unsigned() ? x.get<uint64_t>() >= uint64_t(ctx.n_vocab) : x.get<int64_t>() >= ctx.n_vocab))
            throw ApiError(400, "'input' " + std::to_string(index) + " holds token id " + x.dump() + ", outside the vocabulary [0, " +
                                    std::to_string(ctx.n_vocab) + ")", "input");
        ids.push_back(int32_t(x.get<int64_t>()));
    }
    return ids;
}

std::vector<int32_t> tokenize(const std::string& text, const EmbedContext& ctx, size_t index) {
    if (text.empty()) throw ApiError(400, "'input' " + std::to_string(index) + " is an empty string", "input");
    // More bytes than n_ctx tokens can stand for: too long, known before tokenizing it.
    if (ctx.max_piece_bytes > 0 && text.size() > size_t(ctx.n_ctx) * ctx.max_piece_bytes)
        throw ApiError(400, "'input' " + std::to_string(index) + " has " + std::to_string(text.size()) +
                                " bytes, more tokens than a slot's context of " + std::to_string(ctx.n_ctx) + " holds", "input");
    // As llama-server: the vocabulary's BOS / EOS where it adds them, special tokens parsed.
    return ctx.tok->encode(text, ctx.tok->add_bos_default(), true);
}

}  // namespace

EmbedContext embed_context(const Model& m, const Tokenizer& tok, int64_t n_ctx, const std::string& pooling, int normalize,
                           const std::string& model_id) {
    if (normalize < -1) throw std::invalid_argument("--embd-normalize " + std::to_string(normalize) + ": -1, 0, 1, 2 or p > 2");
    EmbedContext c;
    c.tok = &tok;
    c.n_ctx = n_ctx;
    c.n_embd = m.hparams().n_embd;
    c.n_vocab = m.hparams().n_vocab;
    c.pooling = pooling.empty() ? model_pooling(m) : parse_pooling(pooling);
    c.arch = m.hparams().arch;
    c.normalize = normalize;
    c.max_piece_bytes = tok.max_bytes_per_token();
    c.model_id = model_id;
    c.rerank_template = m.gguf().get_string("tokenizer.chat_template.rerank", "");
    return c;
}

EmbedRequest parse_embeddings(const json& body, const EmbedContext& ctx) {
    if (ctx.pooling == Pooling::None)
        throw ApiError(400, "this model has no pooling (its GGUF sets no " + ctx.arch +
                                ".pooling_type): start the server with --pooling mean|cls|last", "", "model_not_embedding");
    if (ctx.pooling == Pooling::Rank)
        throw ApiError(400, "this model is a reranker (it pools by rank): it scores query-document pairs at /v1/rerank, not embeddings", "",
                       "model_not_embedding");
    EmbedRequest r;
    r.job.pooling = ctx.pooling;
    auto it = body.find("input");
    if (it == body.end() || it->is_null()) throw ApiError(400, "'input' is required: a string, a list of strings, or token ids", "input");
    const json& in = *it;
    auto& inputs = r.job.inputs;
    if (in.is_string()) {
        inputs.push_back(tokenize(in.get<std::string>(), ctx, 0));
    } else if (in.is_array()) {
        if (in.empty()) throw ApiError(400, "'input' is an empty list", "input");
        if (in.size() > kMaxEmbedInputs)
            throw ApiError(400, "'input' holds " + std::to_string(in.size()) + " inputs; at most " + std::to_string(kMaxEmbedInputs), "input");
        if (in[0].is_number()) {
            inputs.push_back(token_list(in, ctx, 0));
        } else {
            for (size_t i = 0; i < in.size(); ++i) {
                const json& x = in[i];
                if (x.is_string() && in[0].is_string()) {
                    inputs.push_back(tokenize(x.get<std::string>(), ctx, i));
                } else if (x.is_array() && in[0].is_array()) {
                    if (x.empty()) throw ApiError(400, "'input' " + std::to_string(i) + " is an empty list of tokens", "input");
                    inputs.push_back(token_list(x, ctx, i));
                } else {
                    throw ApiError(400, "'input' must be a string, a list of strings, a list of token ids or a list of lists of token ids "
                                        "(item " + std::to_string(i) + " does not fit)", "input");
                }
            }
        }
    } else {
        throw ApiError(400, "'input' must be a string, a list of strings, or token ids", "input");
    }
    for (size_t i = 0; i < inputs.size(); ++i)
        if (int64_t(inputs[i].size()) > ctx.n_ctx)
            throw ApiError(400, "'input' " + std::to_string(i) + " has " + std::to_string(inputs[i].size()) +
                                    " tokens, more than a slot's context of " + std::to_string(ctx.n_ctx), "input", "context_length_exceeded");
    for (size_t i = 0; ctx.one_ubatch > 0 && i < inputs.size(); ++i)
        if (int64_t(inputs[i].size()) > ctx.one_ubatch)
            throw ApiError(400, "'input' " + std::to_string(i) + " has " + std::to_string(inputs[i].size()) + " tokens, more than the ubatch of " +
                                    std::to_string(ctx.one_ubatch) + ": " + ctx.arch +
                                    " attends both ways and evaluates an input in one ubatch (start the server with a larger -ub)",
                           "input", "context_length_exceeded");
    if (auto f = body.find("encoding_format"); f != body.end() && !f->is_null()) {
        if (!f->is_string() || (*f != "float" && *f != "base64"))
            throw ApiError(400, "'encoding_format' must be \"float\" or \"base64\", got " + f->dump(), "encoding_format");
        r.base64 = *f == "base64";
    }
    if (auto f = body.find("dimensions"); f != body.end() && !f->is_null()) {
        // Matryoshka truncation: the first `dimensions` values, normalized again. Allowed for
        // every model (only Matryoshka-trained ones, Qwen3-Embedding among them, keep their
        // meaning when cut).
        if (!f->is_number_integer() || f->get<int64_t>() < 1 || f->get<int64_t>() > ctx.n_embd)
            throw ApiError(400, "'dimensions' must be an integer in [1, " + std::to_string(ctx.n_embd) + "] (the model's width), got " + f->dump(),
                           "dimensions");
        r.dimensions = f->get<int64_t>();
    }
    if (auto f = body.find("model"); f != body.end() && !f->is_null()) {
        if (!f->is_string()) throw ApiError(400, "'model' must be a string", "model");
        r.model = f->get<std::string>();
    }
    return r;
}

std::string base64_f32(const std::vector<float>& v) {
    static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::vector<uint8_t> b(v.size() * 4);
    for (size_t i = 0; i < v.size(); ++i) {
        uint32_t u;
        std::memcpy(&u, &v[i], 4);
        for (int j = 0; j < 4; ++j) b[i * 4 + size_t(j)] = uint8_t(u >> (8 * j));  // little-endian on any host
    }
    std::string out;
    out.reserve((b.size() + 2) / 3 * 4);
    for (size_t i = 0; i < b.size(); i += 3) {
        const uint32_t n = uint32_t(b[i]) << 16 | (i + 1 < b.size() ? uint32_t(b[i + 1]) << 8 : 0) | (i + 2 < b.size() ? b[i + 2] : 0);
        out += k[n >> 18 & 63];
        out += k[n >> 12 & 63];
        out += i + 1 < b.size() ? k[n >> 6 & 63] : '=';
        out += i + 2 < b.size() ? k[n & 63] : '=';
    }
    return out;
}

json embeddings_response(const EmbedRequest& r, const EmbedResult& res, const EmbedContext& ctx) {
    json data = json::array();
    for (size_t i = 0; i < res.pooled.size(); ++i) {
        std::vector<float> v = r.dimensions > 0 ? embd_truncate(res.pooled[i], r.dimensions, ctx.normalize) : res.pooled[i];
        if (r.dimensions == 0) embd_normalize(v, ctx.normalize);
        data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", r.base64 ? json(base64_f32(v)) : json(v)}});
    }
    return {{"object", "list"},
            {"data", std::move(data)},
            {"model", r.model.empty() ? ctx.model_id : r.model},
            {"usage", {{"prompt_tokens", res.prompt_tokens}, {"total_tokens", res.prompt_tokens}}}};
}

bool run_embed_job(const EmbedParams& params, Engine& engine, Metrics& metrics, const std::atomic<bool>& ready, httplib::Response& res,
                   EmbedResult& out) {
    auto send = [&](int status, const json& j) {
        res.status = status;
        res.set_content(dump(j), "application/json");
    };
    auto job = std::make_shared<EmbedJob>(params);
    if (!engine.submit(job)) {
        metrics.requests_rejected++;
        res.set_header("Retry-After", "1");
        send(503, error_body(503, "every slot is busy and the queue is full; retry later", "unavailable_error"));
        return false;
    }
    // Held until the vectors are known (so a failure still gets an error status); a client
    // that leaves meanwhile cancels the job.
    const socket_t fd = current_connection();
    while (!job->pop(out, std::chrono::milliseconds(50))) {
        if (client_gone(fd)) {
            job->cancel();
            res.status = 499;  // (nginx's "client closed request": counted, never sent)
            return false;
        }
    }
    if (!out.error.empty()) {
        if (ready.load()) send(500, error_body(500, out.error, "server_error"));
        else send(503, error_body(503, out.error, "unavailable_error"));
        return false;
    }
    return true;
}

void handle_embed_route(const std::string& body, Engine& engine, Metrics& metrics, const std::atomic<bool>& ready, httplib::Response& res,
                        const std::function<EmbedParams(const json&)>& parse, const std::function<json(const EmbedResult&)>& respond) {
    EmbedParams params;
    try {
        params = parse(parse_json_object(body));
    } catch (const ApiError& e) {
        res.status = e.status;
        res.set_content(dump(error_body(e.status, e.message, e.type, e.param, e.code)), "application/json");
        return;
    }
    EmbedResult out;
    if (!run_embed_job(params, engine, metrics, ready, res, out)) return;
    res.status = 200;
    res.set_content(dump(respond(out)), "application/json");
}

void handle_embeddings(const EmbedContext& ctx, Engine& engine, Metrics& metrics, const std::atomic<bool>& ready,
                       const httplib::Request& req, httplib::Response& res) {
    EmbedRequest r;
    handle_embed_route(
        req.body, engine, metrics, ready, res,
        [&](const json& b) {
            r = parse_embeddings(b, ctx);
            return r.job;
        },
        [&](const EmbedResult& out) { return embeddings_response(r, out, ctx); });
}

}  // namespace ls::server
