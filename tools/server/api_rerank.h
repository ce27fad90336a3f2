// POST /v1/rerank (and /rerank, /v1/reranking, /reranking): llama-server's request and
// answer (Jina's and Cohere's shape): a query, documents, the top_n most relevant back with
// their scores. Each pair is one input of the engine's embeddings jobs, pooled by rank
// through the model's classifier head (Model::rank_head): a pair's score is the same bits
// alone or beside others.
#pragma once
#include <atomic>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tools/server/api_embed.h"

namespace ls::server {

struct RerankRequest {
    EmbedParams job;                     // one input per document: rerank_prompt(query, document)
    std::vector<std::string> documents;  // as given (return_documents)
    size_t top_n = 0;                    // results kept, highest scores first
    bool return_documents = false;
    std::string model;
};

// Throws ApiError (api_request.h) naming the problem: a model that is not a reranker, a
// missing or non-string query, no documents or more than kMaxEmbedInputs, a pair longer than
// a slot's context (or, for an encoder, the ubatch), a bad top_n.
RerankRequest parse_rerank(const nlohmann::json& body, const EmbedContext& ctx);
// {"model", "object": "list", "usage": {...}, "results": [{"index", "relevance_score"
// [, "document": {"text"}]}]}: sorted by score, highest first (ties: lower index first).
nlohmann::json rerank_response(const RerankRequest& r, const EmbedResult& res, const EmbedContext& ctx);

void handle_rerank(const EmbedContext& ctx, Engine& engine, Metrics& metrics, const std::atomic<bool>& ready,
                   const httplib::Request& req, httplib::Response& res);

}  // namespace ls::server
