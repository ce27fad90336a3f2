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

class EmbedJob {
public:
    explicit EmbedJob(EmbedParams p) : params(std::move(p)) {}
    const EmbedParams params;

    void finish(EmbedResult r) {
        {
            std::lock_guard<std::mutex> l(m_);
            result_ = std::move(r);
        }
        cv_.notify_all();
    }
    // Waits up to `timeout`; false if the result has not come.
    bool wait(EmbedResult& r, std::chrono::milliseconds timeout) {
        std::unique_lock<std::mutex> l(m_);
        if (!cv_.wait_for(l, timeout, [&] { return result_.has_value(); })) return false;
        r = std::move(*result_);
        return true;
    }
    void cancel() { cancelled_.store(true); }
    bool cancelled() const { return cancelled_.load(); }

private:
    std::mutex m_;
    std::condition_variable cv_;
    std::optional<EmbedResult> result_;
    std::atomic<bool> cancelled_{false};
};

}  // namespace ls::server
