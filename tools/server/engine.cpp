#include "tools/server/engine.h"

#include "core/runtime/generate.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace ls::server {

Engine::Engine(Session& s, const Tokenizer& tok, Metrics& metrics, int max_queue, const SpecParams& spec)
    : s_(s), tok_(tok), metrics_(metrics), max_queue_(size_t(std::max(0, max_queue))), spec_(spec), slots_(size_t(s.params().n_seq)) {
    if (spec_.mode == SpecMode::Draft) throw std::invalid_argument("the server's slots speculate with prompt lookup only (--spec off or lookup)");
    thread_ = std::thread([this] { run(); });
}

void Engine::shutdown() {
    {
        std::lock_guard<std::mutex> l(m_);
        if (stop_) return;
        stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
    std::lock_guard<std::mutex> l(m_);
    JobEvent bye;
    bye.error = "server shutting down";
    for (auto& j : queue_) j->push(bye);
    queue_.clear();
    for (auto& sl : slots_)
        if (sl.job) sl.job->push(bye), sl.job.reset();
}

bool Engine::submit(std::shared_ptr<Job> job) {
    {
        std::lock_guard<std::mutex> l(m_);
        if (stop_) return false;
        // Waiting requests beyond the free slots count against the queue's bound.
        const int64_t free_slots = int64_t(slots_.size()) - metrics_.slots_busy.load();
        if (int64_t(queue_.size()) >= std::max<int64_t>(free_slots, 0) + int64_t(max_queue_)) return false;
        queue_.push_back(std::move(job));
        metrics_.queue_length = int64_t(queue_.size());
    }
    cv_.notify_all();
    return true;
}

bool Engine::busy() const {
    for (const auto& sl : slots_)
        if (sl.job) return true;
    return false;
}

void Engine::run() {
    while (true) {
        {
            std::unique_lock<std::mutex> l(m_);
            cv_.wait(l, [&] { return stop_ || !queue_.empty() || busy(); });
            if (stop_) return;
        }
        drop_cancelled();
        admit();
        step();
    }
}

void Engine::drop_cancelled() {
    for (auto& sl : slots_)
        if (sl.job && sl.job->cancelled()) {
            // The slot's cache keeps what was evaluated: a later request may reuse it.
            sl.job.reset();
            metrics_.requests_cancelled++;
            metrics_.slots_busy--;
        }
    std::lock_guard<std::mutex> l(m_);
    const size_t before = queue_.size();
    queue_.erase(std::remove_if(queue_.begin(), queue_.end(), [](const auto& j) { return j->cancelled(); }), queue_.end());
    metrics_.requests_cancelled += before - queue_.size();
    metrics_.queue_length = int64_t(queue_.size());
}

void Engine::admit() {
    while (true) {
        int best = -1;
        {
            std::lock_guard<std::mutex> l(m_);
            if (queue_.empty()) return;
            // The free slot whose cache shares the longest prefix with the prompt; among
            // equals, the least recently used (its cache is the least likely to be wanted).
            size_t best_common = 0;
            const auto& prompt = queue_.front()->params.prompt;
            for (size_t i = 0; i < slots_.size(); ++i) {
                if (slots_[i].job) continue;
                const auto& have = s_.seq_tokens(int(i));
                size_t c = 0;
                while (c < have.size() && c < prompt.size() && have[c] == prompt[c]) ++c;
                if (best < 0 || c > best_common || (c == best_common && slots_[i].last_used < slots_[size_t(best)].last_used))
                    best = int(i), best_common = c;
            }
            if (best < 0) return;
            Slot& sl = slots_[size_t(best)];
            sl = Slot{};
            sl.job = std::move(queue_.front());
            queue_.pop_front();
            metrics_.queue_length = int64_t(queue_.size());
            sl.admitted = sl.last_used = ++clock_;
        }
        metrics_.slots_busy++;
        const int i = best;
        Slot& sl = slots_[size_t(i)];
        const JobParams& p = sl.job->params;
        sl.sampler = std::make_unique<Sampler>(p.sampling);
        if (spec_.mode != SpecMode::Off) sl.spec = std::make_unique<Speculator>(spec_);
        sl.text = StopText(p.stop);
        if (p.reply_template) sl.reply = std::make_unique<ReplySplitter>(*p.reply_template);
        sl.usage.prompt_tokens = int64_t(p.prompt.size());
        metrics_.prompt_tokens += p.prompt.size();
        if (p.prompt.empty() || int64_t(p.prompt.size()) >= s_.params().n_ctx) {
            finish(i, "", "the prompt has " + std::to_string(p.prompt.size()) + " tokens; a slot's context holds " +
                              std::to_string(s_.params().n_ctx));
            continue;
        }
        try {
            const int64_t kept = s_.reuse_prefix(i, p.prompt);
            sl.usage.cached_tokens = kept;
            metrics_.prompt_tokens_reused += uint64_t(kept);
            sl.rest.assign(p.prompt.begin() + kept, p.prompt.end());
        } catch (const std::exception& e) {
            // (A failed cache edit, e.g. restoring a checkpoint: this request fails, the
            // slot starts afresh.)
            finish(i, "", std::string("preparing the slot failed: ") + e.what());
            try {
                s_.seq_rm(i, 0);
            } catch (const std::exception&) {
            }
        }
    }
}

void Engine::step() {
    Batch b;
    // Each generating slot's rows (its sampled token, then any guesses), and each prompt that
    // completes (one row): consecutive logits rows, in batch order.
    struct Rows {
        int slot;
        int64_t start;                // the position of the group's first token
        std::vector<int32_t> guesses;
    };
    std::vector<Rows> groups;
    size_t n_busy = 0;
    for (const Slot& sl : slots_) n_busy += sl.job ? 1 : 0;
    const int64_t ub = s_.params().n_ubatch, n_ctx = s_.params().n_ctx;
    for (size_t i = 0; i < slots_.size(); ++i) {
        Slot& sl = slots_[i];
        if (!sl.job || !sl.generating) continue;
        const int64_t start = s_.seq_len(int(i));
        Rows g{int(i), start, {}};
        if (sl.spec && n_busy <= kSpecSlots) {
            // Guesses stay within one ubatch (so a windowed ring can still roll back), the
            // slot's context and what is left to generate.
            int64_t k = std::min<int64_t>({sl.spec->budget(), ub - 1, n_ctx - start - 1});
            const int64_t max_tokens = sl.job->params.max_tokens;
            if (max_tokens >= 0) k = std::min<int64_t>(k, max_tokens - sl.n_gen - 1);
            if (k > 0) g.guesses = sl.spec->guess(s_.seq_tokens(int(i)), sl.next, int(k));
            if (int(g.guesses.size()) < std::max(1, spec_.draft_min)) g.guesses.clear();
            if (!g.guesses.empty()) s_.checkpoint_step(int(i));
        }
        b.add(sl.next, int(i), int32_t(start), true);
        for (size_t t = 0; t < g.guesses.size(); ++t) b.add(g.guesses[t], int(i), int32_t(start + 1 + int64_t(t)), true);
        groups.push_back(std::move(g));
    }
    // Prompt chunks, oldest request first, up to one ubatch in all.
    int64_t budget = std::max<int64_t>(ub - int64_t(b.size()), 1);
    std::vector<int> prefill;
    for (size_t i = 0; i < slots_.size(); ++i)
        if (slots_[i].job && !slots_[i].generating) prefill.push_back(int(i));
    std::sort(prefill.begin(), prefill.end(), [&](int a, int c) { return slots_[size_t(a)].admitted < slots_[size_t(c)].admitted; });
    for (int i : prefill) {
        if (budget <= 0) break;
        Slot& sl = slots_[size_t(i)];
        const size_t k = size_t(std::min<int64_t>(budget, int64_t(sl.rest.size() - sl.at)));
        const int32_t p0 = int32_t(s_.seq_len(i));
        for (size_t t = 0; t < k; ++t) {
            const bool last = sl.at + t + 1 == sl.rest.size();
            b.add(sl.rest[sl.at + t], i, p0 + int32_t(t), last);
            if (last) groups.push_back({i, p0 + int64_t(t), {}});
        }
        sl.at += k;
        budget -= int64_t(k);
    }
    if (b.size() == 0) return;

    const auto t0 = std::chrono::steady_clock::now();
    std::vector<float> logits;
    try {
        logits = s_.decode(b);
    } catch (const std::exception& e) {
        // A failed evaluation may have left any slot's memory half written: fail the
        // requests in this batch and start every cache afresh.
        for (size_t i = 0; i < slots_.size(); ++i)
            if (slots_[i].job) finish(int(i), "", std::string("evaluation failed: ") + e.what());
        s_.reset();
        return;
    }
    metrics_.steps++;
    metrics_.step_tokens += b.size();
    metrics_.step_us += uint64_t(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count());

    const size_t n_vocab = size_t(s_.n_vocab());
    size_t row = 0;
    for (const Rows& g : groups) {
        const int i = g.slot;
        Slot& sl = slots_[size_t(i)];
        // Row r follows the token at g.start + r. A guess is kept while the slot samples it.
        size_t used = 0;
        for (size_t r = 0; r <= g.guesses.size(); ++r) {
            ++used;
            try {
                on_logits(i, logits.data() + (row + r) * n_vocab, g.start + int64_t(r) + 1);
            } catch (const std::exception& e) {
                // Sampling or detokenizing failed for this request alone: end it, keep the rest.
                if (sl.job) finish(i, "", std::string("sampling failed: ") + e.what());
            }
            if (!sl.job || r == g.guesses.size() || sl.next != g.guesses[r]) break;
        }
        row += g.guesses.size() + 1;
        if (!g.guesses.empty()) {
            if (sl.spec) sl.spec->record(int(g.guesses.size()), int(used - 1));
            metrics_.spec_guessed += g.guesses.size();
            metrics_.spec_accepted += used - 1;
            // The slot's sequence holds what plain decoding would have (also for the next
            // request that reuses this slot's cache).
            try {
                spec_roll_back(s_, i, g.start + int64_t(used), g.start);
            } catch (const std::exception& e) {
                if (sl.job) finish(i, "", std::string("rolling back guesses failed: ") + e.what());
                s_.seq_rm(i, 0);
            }
        }
    }
}

void Engine::on_logits(int i, float* logits, int64_t held) {
    Slot& sl = slots_[size_t(i)];
    sl.last_used = ++clock_;
    if (!sl.generating) {
        // The prompt is complete. Recurrent models remember the state here, so that the next
        // request that continues this prompt (a chat's next turn) resumes from it.
        s_.checkpoint(i);
        sl.generating = true;
    }
    const JobParams& p = sl.job->params;
    // The penalties' history is everything the sequence holds: prompt and generated tokens.
    const int32_t id = sl.sampler->sample(logits, int(s_.n_vocab()), s_.seq_tokens(i).data(), size_t(held), held);
    if (tok_.is_eog(id)) {
        finish(i, "stop");
        return;
    }
    ++sl.n_gen;
    sl.usage.completion_tokens = sl.n_gen;
    metrics_.generated_tokens++;
    TokenOut t;
    t.id = id;
    // An id past the tokenizer's vocabulary (embedding rows can outnumber it) has no text.
    t.piece = id < tok_.n_vocab() ? tok_.token_to_piece(id, false) : std::string();
    if (p.sampling.want_logprobs) {
        t.logprob = sl.sampler->last_logprob();
        t.top = sl.sampler->last_top();
    }
    sl.sampled.push_back(t);
    std::string content = t.piece;
    if (sl.reply) {
        ReplySplitter::Out r = sl.reply->push(id < tok_.n_vocab() ? reply_piece(tok_, id, p.reply_template) : std::string());
        content = std::move(r.content);
        sl.reasoning += sl.reasoning_utf8.push(r.reasoning);
    }
    StopText::Out out = sl.text.push(content);
    if (out.stopped) {
        finish(i, "stop", "", &out);
        return;
    }
    const bool length = (p.max_tokens >= 0 && sl.n_gen >= p.max_tokens) || held + 1 > s_.params().n_ctx;
    if (length) {
        finish(i, "length", "", &out);
        return;
    }
    if (!out.text.empty() || !out.tokens.empty() || !sl.reasoning.empty()) emit(sl, *sl.job, std::move(out), "", "");
    sl.next = id;
}

void Engine::emit(Slot& sl, Job& job, StopText::Out&& out, const std::string& finish, const std::string& error) {
    JobEvent e;
    e.text = std::move(out.text);
    e.reasoning = std::move(sl.reasoning);
    sl.reasoning.clear();
    for (size_t k : out.tokens) e.tokens.push_back(sl.sampled.at(k));
    e.finish = finish;
    e.error = error;
    e.usage = sl.usage;
    job.push(std::move(e));
}

void Engine::finish(int i, const std::string& reason, const std::string& error, StopText::Out* last) {
    Slot& sl = slots_[size_t(i)];
    // What was released last, then whatever the stop-string check still holds back.
    StopText::Out out = last ? std::move(*last) : StopText::Out{};
    if (sl.reply && !sl.text.stopped()) {
        // What the splitter held back (text that might have begun a marker) ends the reply.
        ReplySplitter::Out r = sl.reply->finish();
        sl.reasoning += sl.reasoning_utf8.push(r.reasoning);
        StopText::Out more = sl.text.push(r.content, false);
        out.text += more.text;
        out.tokens.insert(out.tokens.end(), more.tokens.begin(), more.tokens.end());
    }
    if (sl.reply) sl.reasoning += sl.reasoning_utf8.flush();
    StopText::Out rest = sl.text.finish();
    out.text += rest.text;
    out.tokens.insert(out.tokens.end(), rest.tokens.begin(), rest.tokens.end());
    // The slot is free and counted so before the client hears of it.
    std::shared_ptr<Job> job = std::move(sl.job);
    metrics_.slots_busy--;
    if (error.empty()) metrics_.requests_finished++;
    emit(sl, *job, std::move(out), reason, error);
}

}  // namespace ls::server
