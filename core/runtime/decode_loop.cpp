#include "core/runtime/decode_loop.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace ls {

DecodeLoop::DecodeLoop(Session& s, const Tokenizer& tok, LoopParams p)
    : s_(s), tok_(tok), p_(p), slots_(size_t(s.params().n_seq)) {}

size_t DecodeLoop::n_active() const {
    size_t n = 0;
    for (const Slot& sl : slots_) n += sl.active ? 1 : 0;
    return n;
}

int64_t DecodeLoop::start(int seq, Start st) {
    Slot& sl = slots_.at(size_t(seq));
    if (sl.active) throw std::logic_error("DecodeLoop::start: slot " + std::to_string(seq) + " is busy");
    if (!st.sampler) throw std::invalid_argument("DecodeLoop::start: no sampler");
    const int64_t n_ctx = s_.params().n_ctx;
    if (st.prompt.empty()) throw std::length_error("the prompt is empty");
    if (int64_t(st.prompt.size()) >= n_ctx)
        throw std::length_error("the prompt has " + std::to_string(st.prompt.size()) + " tokens, which leaves no room in the context of " +
                                std::to_string(n_ctx) + " (raise -c)");
    const int64_t kept = s_.reuse_prefix(seq, st.prompt);
    sl = Slot{};
    sl.rest.assign(st.prompt.begin() + kept, st.prompt.end());
    sl.st = std::move(st);
    sl.active = true;
    sl.order = ++clock_;
    return kept;
}

void DecodeLoop::fork(int src, int dst, Start st) {
    const Slot& from = slots_.at(size_t(src));
    Slot& sl = slots_.at(size_t(dst));
    if (sl.active) throw std::logic_error("DecodeLoop::fork: slot " + std::to_string(dst) + " is busy");
    if (!from.active || from.generating || from.fork_of >= 0)
        throw std::logic_error("DecodeLoop::fork: slot " + std::to_string(src) + " has no prompt being evaluated");
    if (!st.sampler) throw std::invalid_argument("DecodeLoop::fork: no sampler");
    sl = Slot{};
    st.prompt.clear();
    sl.st = std::move(st);
    sl.active = true;
    sl.order = ++clock_;
    sl.fork_of = src;
}

void DecodeLoop::cancel(int seq) {
    slots_.at(size_t(seq)) = Slot{};
    for (size_t j = 0; j < slots_.size(); ++j)
        if (slots_[j].active && slots_[j].fork_of == seq) end(int(j), EndReason::Error, "the prompt this choice continues was cancelled");
}

void DecodeLoop::start_forks(int i, const std::vector<float>& logits, int64_t held) {
    for (size_t j = 0; j < slots_.size(); ++j) {
        Slot& f = slots_[j];
        if (!f.active || f.fork_of != i) continue;
        const int d = int(j);
        try {
            s_.seq_rm(d, 0);
            if (!s_.seq_cp(i, d)) throw std::runtime_error("the sequence could not be copied");
            s_.checkpoint(d);
        } catch (const std::exception& e) {
            end(d, EndReason::Error, std::string("copying the prompt failed: ") + e.what());
            continue;
        }
        f.fork_of = -1;
        f.generating = true;
        if (f.st.hooks.on_prompt_done) f.st.hooks.on_prompt_done();
        std::vector<float> row = logits;  // (the sampler edits its logits in place)
        sample(d, row.data(), held);
    }
}

void DecodeLoop::end(int i, EndReason r, const std::string& error) {
    Slot& sl = slots_[size_t(i)];
    SlotHooks hooks = std::move(sl.st.hooks);
    sl = Slot{};
    if (hooks.on_end) hooks.on_end(r, error);
}

bool DecodeLoop::sample(int i, float* logits, int64_t held) {
    Slot& sl = slots_[size_t(i)];
    if (!sl.generating) {
        // The prompt is complete. Recurrent models remember the state here, so that the next
        // start that continues this prompt (a chat's next turn) resumes from it.
        s_.checkpoint(i);
        sl.generating = true;
        if (sl.st.hooks.on_prompt_done) sl.st.hooks.on_prompt_done();
        bool forks = false;
        for (const Slot& f : slots_) forks = forks || (f.active && f.fork_of == i);
        if (forks) {
            // The forks sample the same logits, after this slot (its sequence is the prompt
            // until the next step evaluates what it samples).
            const std::vector<float> row(logits, logits + s_.n_vocab());
            const bool go = sample(i, logits, held);
            start_forks(i, row, held);
            return go;
        }
    }
    int32_t id;
    bool go = true;
    try {
        // The penalties' history is everything the sequence holds: prompt and generated tokens.
        id = sl.st.sampler->sample(logits, int(s_.n_vocab()), s_.seq_tokens(i).data(), size_t(held), held);
        if (tok_.is_eog(id)) {
            end(i, EndReason::Eog);
            return false;
        }
        ++sl.n_gen;
        const bool limit = sl.st.n_predict >= 0 && sl.n_gen >= sl.st.n_predict;
        const bool full = held + 1 > s_.params().n_ctx;  // no room to evaluate the token
        if (sl.st.hooks.on_token) go = sl.st.hooks.on_token(id, limit || full);
        if (!go) {
            end(i, EndReason::Stopped);
            return false;
        }
        if (limit || full) {
            end(i, limit ? EndReason::Limit : EndReason::ContextFull);
            return false;
        }
    } catch (const std::exception& e) {
        // Sampling or reading the token failed for this slot alone: end it, keep the rest.
        end(i, EndReason::Error, std::string("sampling failed: ") + e.what());
        return false;
    }
    sl.next = id;
    return true;
}

bool DecodeLoop::step() {
    using clock = std::chrono::steady_clock;
    const size_t n_busy = n_active();
    if (n_busy == 0) return false;
    const auto t0 = clock::now();  // a step's time includes making its guesses (a draft model's steps)
    Batch b;
    // Each generating slot's rows (its sampled token, then any guesses), and each prompt that
    // completes (one row): consecutive logits rows, in batch order.
    struct Rows {
        int slot;
        int64_t start;  // the position of the group's first token
        std::vector<int32_t> guesses;
        bool generating;  // false: the last row of a prompt
    };
    std::vector<Rows> groups;
    const int64_t ub = s_.params().n_ubatch, n_ctx = s_.params().n_ctx;
    for (size_t i = 0; i < slots_.size(); ++i) {
        Slot& sl = slots_[i];
        if (!sl.active || !sl.generating) continue;
        const int64_t start = s_.seq_len(int(i));
        Rows g{int(i), start, {}, true};
        Speculator* spec = sl.st.spec;
        if (spec && n_busy <= p_.spec_max_busy) {
            // Guesses stay within one ubatch (so a windowed ring can still roll back), the
            // context and what is left to generate.
            int64_t k = std::min<int64_t>({spec->budget(), ub - 1, n_ctx - start - 1});
            if (sl.st.n_predict >= 0) k = std::min<int64_t>(k, sl.st.n_predict - sl.n_gen - 1);
            if (k > 0) g.guesses = spec->guess(s_.seq_tokens(int(i)), sl.next, int(k));
            if (int(g.guesses.size()) < std::max(1, spec->params().draft_min)) g.guesses.clear();
            if (!g.guesses.empty()) s_.checkpoint_step(int(i));
        }
        b.add(sl.next, int(i), int32_t(start), true);
        for (size_t t = 0; t < g.guesses.size(); ++t) b.add(g.guesses[t], int(i), int32_t(start + 1 + int64_t(t)), true);
        groups.push_back(std::move(g));
    }
    // Prompt chunks, oldest start first, up to one ubatch in all.
    int64_t budget = std::max<int64_t>(ub - int64_t(b.size()), 1);
    std::vector<int> prefill;
    for (size_t i = 0; i < slots_.size(); ++i)
        if (slots_[i].active && !slots_[i].generating && slots_[i].fork_of < 0) prefill.push_back(int(i));
    std::sort(prefill.begin(), prefill.end(), [&](int a, int c) { return slots_[size_t(a)].order < slots_[size_t(c)].order; });
    for (int i : prefill) {
        if (budget <= 0) break;
        Slot& sl = slots_[size_t(i)];
        const size_t k = size_t(std::min<int64_t>(budget, int64_t(sl.rest.size() - sl.at)));
        const int32_t p0 = int32_t(s_.seq_len(i));
        for (size_t t = 0; t < k; ++t) {
            const bool last = sl.at + t + 1 == sl.rest.size();
            b.add(sl.rest[sl.at + t], i, p0 + int32_t(t), last);
            if (last) groups.push_back({i, p0 + int64_t(t), {}, false});
        }
        sl.at += k;
        budget -= int64_t(k);
    }
    if (b.size() == 0) return n_active() > 0;

    std::vector<float> logits;
    try {
        logits = s_.decode(b);
    } catch (const std::exception& e) {
        // A failed evaluation may have left any slot's memory half written: end every slot.
        const std::string msg = std::string("evaluation failed: ") + e.what();
        for (size_t i = 0; i < slots_.size(); ++i)
            if (slots_[i].active) end(int(i), EndReason::Error, msg);
        if (p_.reset_on_failure) s_.reset();
        return false;
    }
    // A step is timed for the speculator only when it served one slot (others' tokens would
    // count against its guesses).
    const double took = std::chrono::duration<double>(clock::now() - t0).count();
    const double step_s = n_busy == 1 ? took : -1.0;
    stats_.steps++;
    stats_.step_tokens += b.size();
    stats_.step_us += uint64_t(took * 1e6);

    const size_t n_vocab = size_t(s_.n_vocab());
    size_t row = 0;
    for (const Rows& g : groups) {
        const int i = g.slot;
        Slot& sl = slots_[size_t(i)];
        if (!sl.active) {
            // Ended while this step's rows were read (a hook ended it with another slot: the
            // choices of one request): its rows are skipped.
            row += g.guesses.size() + 1;
            continue;
        }
        Speculator* spec = sl.st.spec;
        // Row r follows the token at g.start + r. A guess is kept while the slot samples it.
        size_t used = 0;
        for (size_t r = 0; r <= g.guesses.size(); ++r) {
            ++used;
            if (!sample(i, logits.data() + (row + r) * n_vocab, g.start + int64_t(r) + 1)) break;
            if (r == g.guesses.size() || sl.next != g.guesses[r]) break;
        }
        row += g.guesses.size() + 1;
        if (spec && g.guesses.empty() && g.generating && step_s >= 0) spec->plain(step_s);
        if (g.guesses.empty()) continue;
        if (spec) spec->record(int(g.guesses.size()), int(used - 1), step_s);
        stats_.guessed += g.guesses.size();
        stats_.accepted += used - 1;
        // The sequence holds what plain decoding would have (also for the next start that
        // reuses this slot's cache).
        try {
            spec_roll_back(s_, i, g.start + int64_t(used), g.start);
        } catch (const std::exception& e) {
            if (slots_[size_t(i)].active) end(i, EndReason::Error, std::string("rolling back guesses failed: ") + e.what());
            s_.seq_rm(i, 0);
        }
    }
    return n_active() > 0;
}

}  // namespace ls
