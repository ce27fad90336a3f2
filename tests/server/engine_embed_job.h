// One embeddings job (an /v1/embeddings or /v1/rerank request's EmbedParams) through a server
// Engine over a fresh session of the tiny model, as the route runs it: the result it answers.
#pragma once
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>

#include "core/text/tokenizer.h"
#include "tests/support/kv_contract.h"
#include "tools/server/embed_job.h"
#include "tools/server/engine.h"
#include "tools/server/metrics.h"

namespace ls::test {

inline server::EmbedResult run_engine_job(const LoadedModel& l, const Tokenizer& tok, const server::EmbedParams& params, DType kv) {
    auto job = std::make_shared<server::EmbedJob>(params);
    server::EmbedResult out;
    auto s = new_session(l, 64, 64, kv, 2);
    server::Metrics metrics;
    server::Engine engine(*s, tok, metrics, 4);
    REQUIRE(engine.submit(job));
    REQUIRE(job->pop(out, std::chrono::seconds(120)));
    return out;
}

}  // namespace ls::test
