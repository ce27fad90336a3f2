// An embeddings request as the engine sees it: token lists to pool, one vector each, and the
// channel the answer comes back on (the HTTP handler waits; the engine thread fills it).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/runtime/embed.h"
#include "tools/server/channel.h"

namespace ls::server {

struct EmbedParams {
    std::vector<std::vector<int32_t>> inputs;  // each checked: not empty, within a slot's context, ids in the vocabulary
    Pooling pooling = Pooling::None;
};

struct EmbedResult {
    std::vector<std::vector<float>> pooled;  // per input, pooled, not normalized
    int64_t prompt_tokens = 0;
    std::string error;  // set: the request failed after it was accepted
};

// One result per request: the engine pushes it when the vectors are pooled, or the error.
using EmbedJob = Channel<EmbedParams, EmbedResult>;

}  // namespace ls::server
