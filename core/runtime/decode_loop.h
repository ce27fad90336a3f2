// The generation loop: every user of the engine decodes through it, the CLI's generate() with
// one slot and the server's engine with many. Each step builds one batch from every active
// slot (its sampled token and any speculative guesses, then prompt chunks up to the ubatch,
// oldest start first, so a long prompt never stalls the others), evaluates it, and samples
// each slot with its own sampler, keeping a guess while the sampler picks it and rolling the
// sequence back past the first that it does not.
//
// What a slot gets never depends on what else is in the batch: the backends give a sequence
// the same bits whatever shares its ubatch (SEMANTICS.md), a reused prefix gives the logits of
// a fresh evaluation (Session::reuse_prefix), sampling draws are keyed by position, and each
// slot samples with its own sampler over its own history. Guesses change the speed only.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/runtime/session.h"
#include "core/runtime/speculative.h"
#include "core/sampling/sampler.h"
#include "core/text/tokenizer.h"

namespace ls {

enum class EndReason {
    Eog,          // the model wrote an end-of-generation token (not passed to on_token)
    Stopped,      // on_token asked to stop (a stop string)
    Limit,        // n_predict tokens generated
    ContextFull,  // no room in the context for the next token
    Error,        // sampling, a cache edit or the evaluation failed (the message says which)
};

struct SlotHooks {
    // The prompt is evaluated; the slot generates from now on.
    std::function<void()> on_prompt_done;
    // A generated token (end-of-generation tokens end the slot instead). `last`: the slot ends
    // with this token (its n_predict or the context is reached). Returning false ends the slot
    // with it (EndReason::Stopped).
    std::function<bool(int32_t id, bool last)> on_token;
    // The slot ended (after its last on_token); it may be started again.
    std::function<void(EndReason, const std::string& error)> on_end;
};

// What the loop did, since it was made.
struct LoopStats {
    uint64_t steps = 0, step_tokens = 0, step_us = 0;  // evaluations, their tokens and time
    uint64_t guessed = 0, accepted = 0;                // speculation: guesses checked, kept
};

struct LoopParams {
    // Guesses are checked only while at most this many slots are busy (the server's slack).
    size_t spec_max_busy = std::numeric_limits<size_t>::max();
    // After a failed evaluation every slot's memory is emptied (it may be half written).
    bool reset_on_failure = true;
};

class DecodeLoop {
public:
    // Sequence i of the session is slot i.
    DecodeLoop(Session& s, const Tokenizer& tok, LoopParams p = {});

    struct Start {
        std::vector<int32_t> prompt;  // the whole sequence wanted before generation
        Sampler* sampler = nullptr;   // the caller's, used on the loop's thread
        Speculator* spec = nullptr;   // null: no guesses
        int64_t n_predict = -1;       // -1: until end of generation or a full context
        SlotHooks hooks;
    };
    // Starts slot `seq` (which must be idle): keeps the longest cached prefix of the prompt
    // that the memory can restore and queues the rest for evaluation. Returns the number of
    // prompt tokens kept. Throws std::length_error for a prompt that is empty or leaves no
    // room in the context, and whatever a failed cache edit throws (the slot stays idle).
    int64_t start(int seq, Start st);
    // Starts slot `dst` (idle) as a copy of slot `src`, whose prompt is still being evaluated:
    // when src's prompt is done, dst's sequence becomes a copy of it (seq_cp) and dst samples
    // from the same logits with its own sampler (n choices of one prompt: the prompt is
    // evaluated once). `st.prompt` is ignored.
    void fork(int src, int dst, Start st);
    // Ends slot `seq` without telling its hooks (the client went away). Its cache keeps
    // what was evaluated, for a later start to reuse. Forks waiting on it end with an error.
    void cancel(int seq);
    bool active(int seq) const { return slots_.at(size_t(seq)).active; }
    size_t n_active() const;
    // One batch: evaluates and samples, calling the hooks. Returns false when no slot is active.
    bool step();
    const LoopStats& stats() const { return stats_; }

private:
    struct Slot {
        bool active = false, generating = false;
        Start st;
        std::vector<int32_t> rest;  // prompt tokens still to evaluate
        size_t at = 0;
        int32_t next = -1;  // the token sampled last, evaluated in the next step
        int64_t n_gen = 0;
        uint64_t order = 0;
        int fork_of = -1;  // fork(): the slot whose prompt this one waits for
    };
    // Slot i's prompt is done: the forks waiting on it copy its sequence and sample `logits`.
    void start_forks(int i, const std::vector<float>& logits, int64_t held);
    // Samples slot i from the logits that follow its first `held` tokens; false when it ended.
    bool sample(int i, float* logits, int64_t held);
    void end(int i, EndReason r, const std::string& error = {});

    Session& s_;
    const Tokenizer& tok_;
    LoopParams p_;
    std::vector<Slot> slots_;
    uint64_t clock_ = 0;
    LoopStats stats_;
};

}  // namespace ls
