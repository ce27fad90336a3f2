// The server's counters and gauges, rendered as Prometheus text for GET /metrics. The engine
// thread and the HTTP handlers update them; the names are lockstep_*.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace ls::server {

struct Metrics {
    // requests answered, by status class (2xx, 4xx, 5xx)
    std::array<std::atomic<uint64_t>, 6> http_by_class{};
    std::atomic<uint64_t> requests_finished{0}, requests_cancelled{0}, requests_rejected{0};
    std::atomic<uint64_t> prompt_tokens{0}, prompt_tokens_reused{0}, generated_tokens{0};
    std::atomic<int64_t> queue_length{0}, slots_busy{0};
    std::atomic<uint64_t> steps{0}, step_tokens{0}, step_us{0};  // engine steps, tokens, time
    std::atomic<uint64_t> spec_guessed{0}, spec_accepted{0};    // speculation: guesses checked, kept
    std::atomic<uint64_t> images_encoded{0}, images_reused{0};  // prompts' images: encoded, found in a slot's cache

    void count_status(int status) {
        const int c = status / 100;
        if (c >= 1 && c <= 5) http_by_class[size_t(c)]++;
    }
    std::string render(int n_slots) const;
};

}  // namespace ls::server
