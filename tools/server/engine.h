// The engine thread: the one owner of the Session. Each step it builds one batch from every
// busy slot (one token per generating slot, then prompt chunks up to the ubatch, oldest
// request first, so a long prompt never stalls the others), evaluates it, and samples each
// slot with its own sampler. Results go back on each job's channel.
//
// A request's answer never depends on what else is served: the backends give every sequence
// the same bits whatever shares its ubatch (SEMANTICS.md), a slot's reused prefix gives the
// logits of a fresh evaluation (Session::reuse_prefix), and each request samples with its own
// seeded sampler over its own history.
#pragma once
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/runtime/session.h"
#include "core/runtime/speculative.h"
#include "core/text/tokenizer.h"
#include "tools/server/job.h"
#include "tools/server/metrics.h"
#include "tools/server/stop_text.h"

namespace ls::server {

class Engine {
public:
    // The session's n_seq is the number of slots; at most max_queue requests wait for one.
    // While at most kSpecSlots slots are busy, generating slots check guesses from prompt
    // lookup (`spec`; mode off or lookup) in the same batch, as generate() does: the same
    // tokens, sooner, when the machine has slack.
    static constexpr size_t kSpecSlots = 2;
    Engine(Session& s, const Tokenizer& tok, Metrics& metrics, int max_queue, const SpecParams& spec = {});
    ~Engine() { shutdown(); }
    // Stops the thread and fails what is still queued or running ("server shutting down");
    // submit() refuses from then on.
    void shutdown();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Queues a job; false (and nothing queued) when every slot is busy and the queue is full.
    bool submit(std::shared_ptr<Job> job);
    int n_slots() const { return int(slots_.size()); }

private:
    struct Slot {
        std::shared_ptr<Job> job;
        std::vector<int32_t> rest;  // prompt tokens still to evaluate
        size_t at = 0;
        bool generating = false;
        int32_t next = -1;          // the token sampled last, evaluated in the next step
        int64_t n_gen = 0;
        std::unique_ptr<Sampler> sampler;
        std::unique_ptr<Speculator> spec;  // null with speculation off
        StopText text;
        std::unique_ptr<ReplySplitter> reply;  // JobParams::reply_template
        Utf8Stream reasoning_utf8;
        std::string reasoning;  // released with the next event
        std::vector<TokenOut> sampled;  // generated tokens, in order; released with their text
        Usage usage;
        uint64_t admitted = 0, last_used = 0;
    };

    void run();
    bool busy() const;
    void drop_cancelled();
    void admit();
    void step();
    // `held`: the tokens of slot i's sequence that the logits follow (its length, unless a
    // verification step put guesses after them).
    void on_logits(int i, float* logits, int64_t held);
    // Ends slot i's job: `last` is what the final token released (if any).
    void finish(int i, const std::string& reason, const std::string& error = {}, StopText::Out* last = nullptr);
    void emit(Slot& sl, Job& job, StopText::Out&& out, const std::string& finish, const std::string& error);

    Session& s_;
    const Tokenizer& tok_;
    Metrics& metrics_;
    const size_t max_queue_;
    const SpecParams spec_;
    std::vector<Slot> slots_;
    uint64_t clock_ = 0;  // admissions and uses, for LRU and prompt order

    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::shared_ptr<Job>> queue_;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace ls::server
