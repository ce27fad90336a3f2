#include "tools/server/api_rerank.h"

#include <httplib.h>

#include <algorithm>
#include <numeric>

#include "core/text/rerank_prompt.h"
#include "tools/server/api_request.h"
#include "tools/server/api_response.h"

namespace ls::server {

using nlohmann::json;

RerankRequest parse_rerank(const json& body, const EmbedContext& ctx) {
    if (ctx.pooling != Pooling::Rank)
        throw ApiError(400, "this model is not a reranker (it pools by " + std::string(pooling_name(ctx.pooling)) + ", not rank): " +
                                "/v1/rerank needs a model with a classifier head (pooling_type 4)", "", "model_not_reranker");
    RerankRequest r;
    r.job.pooling = Pooling::Rank;
    auto q = body.find("query");
    if (q == body.end() || !q->is_string()) throw ApiError(400, "'query' is required: a string", "query");
    const std::string query = q->get<std::string>();
    auto d = body.find("documents");
    if (d == body.end() || d->is_null()) d = body.find("texts");  // (TEI's name)
    if (d == body.end() || !d->is_array()) throw ApiError(400, "'documents' is required: a list of strings", "documents");
    if (d->empty()) throw ApiError(400, "'documents' is an empty list", "documents");
    if (d->size() > kMaxEmbedInputs)
        throw ApiError(400, "'documents' holds " + std::to_string(d->size()) + " documents; at most " + std::to_string(kMaxEmbedInputs),
                       "documents");
    for (size_t i = 0; i < d->size(); ++i) {
        const json& x = (*d)[i];
        // A string, or {"text": string} (Cohere's and Jina's objects).
        const json* t = x.is_string() ? &x : x.is_object() && x.contains("text") ? &x["text"] : nullptr;
        if (!t || !t->is_string())
            throw ApiError(400, "'documents' " + std::to_string(i) + " must be a string or {\"text\": string}", "documents");
        r.documents.push_back(t->get<std::string>());
    }
    // More bytes than a slot's context can hold as tokens: refused before tokenizing.
    for (size_t i = 0; i < r.documents.size(); ++i)
        if (ctx.max_piece_bytes > 0 && query.size() + r.documents[i].size() > size_t(ctx.n_ctx) * ctx.max_piece_bytes)
            throw ApiError(400, "'documents' " + std::to_string(i) + " with the query has more tokens than a slot's context of " +
                                    std::to_string(ctx.n_ctx), "documents", "context_length_exceeded");
    for (size_t i = 0; i < r.documents.size(); ++i) {
        std::vector<int32_t> ids = rerank_prompt(*ctx.tok, ctx.rerank_template, query, r.documents[i]);
        if (ids.empty()) throw ApiError(400, "'documents' " + std::to_string(i) + " with the query gives no tokens", "documents");
        if (int64_t(ids.size()) > ctx.n_ctx)
            throw ApiError(400, "'documents' " + std::to_string(i) + " with the query has " + std::to_string(ids.size()) +
                                    " tokens, more than a slot's context of " + std::to_string(ctx.n_ctx), "documents", "context_length_exceeded");
        if (ctx.one_ubatch > 0 && int64_t(ids.size()) > ctx.one_ubatch)
            throw ApiError(400, "'documents' " + std::to_string(i) + " with the query has " + std::to_string(ids.size()) +
                                    " tokens, more than the ubatch of " + std::to_string(ctx.one_ubatch) + ": " + ctx.arch +
                                    " attends both ways and evaluates an input in one ubatch (start the server with a larger -ub)",
                           "documents", "context_length_exceeded");
        r.job.inputs.push_back(std::move(ids));
    }
    r.top_n = r.documents.size();
    if (auto f = body.find("top_n"); f != body.end() && !f->is_null()) {
        if (!f->is_number_integer() || f->get<int64_t>() < 1)
            throw ApiError(400, "'top_n' must be a positive integer, got " + f->dump(), "top_n");
        r.top_n = size_t(std::min<int64_t>(f->get<int64_t>(), int64_t(r.documents.size())));
    }
    for (const char* k : {"return_documents", "return_text"})
        if (auto f = body.find(k); f != body.end() && !f->is_null()) {
            if (!f->is_boolean()) throw ApiError(400, std::string("'") + k + "' must be a boolean", k);
            r.return_documents = r.return_documents || f->get<bool>();
        }
    if (auto f = body.find("model"); f != body.end() && !f->is_null()) {
        if (!f->is_string()) throw ApiError(400, "'model' must be a string", "model");
        r.model = f->get<std::string>();
    }
    return r;
}

json rerank_response(const RerankRequest& r, const EmbedResult& res, const EmbedContext& ctx) {
    std::vector<size_t> order(res.pooled.size());
    std::iota(order.begin(), order.end(), size_t(0));
    // The first score is the relevance (llama-server's); stable: ties keep document order.
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return res.pooled[a][0] > res.pooled[b][0]; });
    json results = json::array();
    for (size_t k = 0; k < std::min(r.top_n, order.size()); ++k) {
        const size_t i = order[k];
        json e = {{"index", i}, {"relevance_score", res.pooled[i][0]}};
        if (r.return_documents) e["document"] = {{"text", r.documents[i]}};
        results.push_back(std::move(e));
    }
    return {{"model", r.model.empty() ? ctx.model_id : r.model},
            {"object", "list"},
            {"usage", {{"prompt_tokens", res.prompt_tokens}, {"total_tokens", res.prompt_tokens}}},
            {"results", std::move(results)}};
}

void handle_rerank(const EmbedContext& ctx, Engine& engine, Metrics& metrics, const std::atomic<bool>& ready,
                   const httplib::Request& req, httplib::Response& res) {
    RerankRequest r;
    handle_embed_route(
        req.body, engine, metrics, ready, res,
        [&](const json& b) {
            r = parse_rerank(b, ctx);
            return r.job;
        },
        [&](const EmbedResult& out) { return rerank_response(r, out, ctx); });
}

}  // namespace ls::server
