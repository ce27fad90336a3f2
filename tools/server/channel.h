// A request as the engine sees it and the channel its results come back on: the HTTP handler
// that submitted it waits on the channel, the engine thread pushes to it. Generation (job.h)
// and embeddings (embed_job.h) are the same channel over their own parameters and results.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>

namespace ls::server {

template <class Params, class Result>
class Channel {
public:
    explicit Channel(Params p) : params(std::move(p)) {}
    const Params params;

    void push(Result e) {
        {
            std::lock_guard<std::mutex> l(m_);
            q_.push_back(std::move(e));
        }
        cv_.notify_all();
    }
    // Waits up to `timeout` for a result; false if none came.
    bool pop(Result& e, std::chrono::milliseconds timeout) {
        std::unique_lock<std::mutex> l(m_);
        if (!cv_.wait_for(l, timeout, [&] { return !q_.empty(); })) return false;
        e = std::move(q_.front());
        q_.pop_front();
        return true;
    }
    // The client went away: the engine drops the request at its next step.
    void cancel() { cancelled_.store(true); }
    bool cancelled() const { return cancelled_.load(); }

private:
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<Result> q_;
    std::atomic<bool> cancelled_{false};
};

}  // namespace ls::server
