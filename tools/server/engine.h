// The engine thread: the one owner of the Session. It admits queued requests to free slots
// and runs core/runtime's generation loop (DecodeLoop: one batch a step from every busy slot,
// each sampled with its own sampler), reading each slot's tokens into text (stop strings,
// reasoning) that goes back on its job's channel.
//
// A request's answer never depends on what else is served (DecodeLoop says why).
#pragma once
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/runtime/decode_loop.h"
#include "core/runtime/session.h"
#include "core/runtime/speculative.h"
#include "core/text/tokenizer.h"
#include "tools/server/embed_job.h"
#include "tools/server/job.h"
#include "tools/server/metrics.h"
#include "core/text/stop_text.h"

namespace ls::server {

class Engine {
public:
    // The session's n_seq is the number of slots; at most max_queue requests wait for one. A
    // job of n choices waits until n slots are free.
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
    // Queues an embeddings job (the same bound). It takes a free slot like a generation
    // request, and more while it has inputs to start and no generation request waits; each
    // engine step, after the generation batch, evaluates the next chunks of the
    // embeddings jobs (at most one ubatch in all) as a batch of its own, so that neither stalls
    // the other; its vectors are the same bits
    // whatever else the engine serves (DecodeOutput::Hidden, pooled in token order).
    bool submit(std::shared_ptr<EmbedJob> job);
    int n_slots() const { return int(slots_.size()); }
    // The projector that encodes prompts' images (set before the first job; null: none).
    void set_vision(const VisionEncoder* v) { vision_ = v; }

private:
    const VisionEncoder* vision_ = nullptr;
    // A job's images: the part of its prompt up to its last image evaluated into slot i (what
    // the slot's cache already holds is kept; only the images past it are encoded). Returns
    // how many prompt tokens the slot held before, or -1 when it held the whole part (then
    // DecodeLoop::start's count is the cached one).
    int64_t evaluate_images(int i, const JobParams& p);
    // An admitted embeddings job: its inputs go to the slots it holds, one at a time each.
    struct EmbedWork {
        std::shared_ptr<EmbedJob> job;
        uint64_t order = 0;  // admission, for oldest first
        size_t next = 0;     // the next input to start
        size_t done = 0;     // inputs finished
        EmbedResult out;
    };
    struct Slot {
        std::shared_ptr<Job> job;
        int choice = 0;
        int64_t n_gen = 0;
        std::unique_ptr<Sampler> sampler;
        std::unique_ptr<Speculator> spec;  // null with speculation off
        StopText text;
        std::unique_ptr<ReplySplitter> reply;  // JobParams::reply_template
        Utf8Stream reasoning_utf8;
        std::string reasoning;  // released with the next event
        std::vector<TokenOut> sampled;  // generated tokens, in order; released with their text
        Usage usage;
        StopText::Out last;  // what the final token released, sent with the finish
        uint64_t last_used = 0;
        // Or an embeddings job (engine_embed.cpp), which may hold several slots: the input this
        // slot runs (its index in the job's inputs).
        std::shared_ptr<EmbedWork> embed;
        std::unique_ptr<EmbedRun> embed_run;
        size_t embed_input = 0;
        bool taken() const { return job || embed; }
    };

    void run();
    bool busy() const;
    void drop_cancelled();
    void admit();
    void step();
    // Slot i's hooks in the loop.
    bool on_token(int i, int32_t id, bool last);
    void on_end(int i, EndReason why, const std::string& error);
    // Ends slot i's job: `last` is what the final token released (if any).
    void finish(int i, const std::string& reason, const std::string& error = {}, StopText::Out* last = nullptr);
    // Ends slot i's whole job with an error (every choice).
    void fail_job(int i, const std::string& error);
    void emit(Slot& sl, Job& job, StopText::Out&& out, const std::string& finish, const std::string& error);
    // Embeddings (engine_embed.cpp): queued jobs to free slots; a batch of their next chunks.
    void admit_embed();
    void step_embed();
    // Frees slot i from its embeddings job; the job ends (answered with `error`, or its
    // vectors) when `end`, and then every other slot it holds is freed too.
    void release_embed(int i, bool end, const std::string& error = {});

    Session& s_;
    const Tokenizer& tok_;
    Metrics& metrics_;
    const size_t max_queue_;
    const SpecParams spec_;
    std::vector<Slot> slots_;
    DecodeLoop loop_;
    uint64_t clock_ = 0;  // admissions and uses, for LRU

    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::shared_ptr<Job>> queue_;
    std::deque<std::shared_ptr<EmbedJob>> embed_queue_;
    bool stop_ = false;
    std::thread thread_;
};

}  // namespace ls::server
