#include "tools/server/engine.h"

#include "core/runtime/generate.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace ls::server {

Engine::Engine(Session& s, const Tokenizer& tok, Metrics& metrics, int max_queue, const SpecParams& spec)
    : s_(s),
      tok_(tok),
      metrics_(metrics),
      max_queue_(size_t(std::max(0, max_queue))),
      spec_(spec),
      slots_(size_t(s.params().n_seq)),
      loop_(s, tok, LoopParams{kSpecSlots, true}) {
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
    EmbedResult gone;
    gone.error = bye.error;
    for (auto& j : embed_queue_) j->finish(gone);
    embed_queue_.clear();
    for (auto& sl : slots_)
        if (sl.embed) {
            if (sl.embed->job) sl.embed->job->finish(gone), sl.embed->job.reset();
            sl.embed.reset();
        }
}

bool Engine::submit(std::shared_ptr<Job> job) {
    {
        std::lock_guard<std::mutex> l(m_);
        if (stop_) return false;
        // Waiting requests beyond the free slots count against the queue's bound.
        const int64_t free_slots = int64_t(slots_.size()) - metrics_.slots_busy.load();
        if (int64_t(queue_.size() + embed_queue_.size()) >= std::max<int64_t>(free_slots, 0) + int64_t(max_queue_)) return false;
        queue_.push_back(std::move(job));
        metrics_.queue_length = int64_t(queue_.size());
    }
    cv_.notify_all();
    return true;
}

bool Engine::busy() const {
    for (const auto& sl : slots_)
        if (sl.taken()) return true;
    return false;
}

void Engine::run() {
    while (true) {
        {
            std::unique_lock<std::mutex> l(m_);
            cv_.wait(l, [&] { return stop_ || !queue_.empty() || !embed_queue_.empty() || busy(); });
            if (stop_) return;
        }
        drop_cancelled();
        admit_embed();
        admit();
        step();
        step_embed();
    }
}

void Engine::drop_cancelled() {
    for (size_t i = 0; i < slots_.size(); ++i)
        if (Slot& sl = slots_[i]; sl.job && sl.job->cancelled()) {
            // The slot's cache keeps what was evaluated: a later request may reuse it.
            loop_.cancel(int(i));
            sl.job.reset();
            metrics_.requests_cancelled++;
            metrics_.slots_busy--;
        }
    for (size_t i = 0; i < slots_.size(); ++i)
        if (Slot& sl = slots_[i]; sl.embed && sl.embed->job->cancelled()) {
            metrics_.requests_cancelled++;
            release_embed(int(i), true, "cancelled");
        }
    std::lock_guard<std::mutex> l(m_);
    const size_t embeds = embed_queue_.size();
    embed_queue_.erase(std::remove_if(embed_queue_.begin(), embed_queue_.end(), [](const auto& j) { return j->cancelled(); }),
                       embed_queue_.end());
    metrics_.requests_cancelled += embeds - embed_queue_.size();
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
                if (slots_[i].taken()) continue;
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
            sl.last_used = ++clock_;
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
        DecodeLoop::Start st;
        st.prompt = p.prompt;
        st.sampler = sl.sampler.get();
        st.spec = sl.spec.get();
        st.n_predict = p.max_tokens;
        st.hooks.on_token = [this, i](int32_t id, bool last) { return on_token(i, id, last); };
        st.hooks.on_end = [this, i](EndReason why, const std::string& error) { on_end(i, why, error); };
        try {
            const int64_t kept = loop_.start(i, std::move(st));
            sl.usage.cached_tokens = kept;
            metrics_.prompt_tokens_reused += uint64_t(kept);
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
    const LoopStats before = loop_.stats();
    loop_.step();
    const LoopStats& now = loop_.stats();
    metrics_.steps += now.steps - before.steps;
    metrics_.step_tokens += now.step_tokens - before.step_tokens;
    metrics_.step_us += now.step_us - before.step_us;
    metrics_.spec_guessed += now.guessed - before.guessed;
    metrics_.spec_accepted += now.accepted - before.accepted;
}

void Engine::on_end(int i, EndReason why, const std::string& error) {
    Slot& sl = slots_[size_t(i)];
    if (!sl.job) return;
    StopText::Out last = std::move(sl.last);
    sl.last = {};
    switch (why) {
        case EndReason::Eog:
        case EndReason::Stopped: finish(i, "stop", "", &last); break;
        case EndReason::Limit:
        case EndReason::ContextFull: finish(i, "length", "", &last); break;
        case EndReason::Error: finish(i, "", error); break;
    }
}

bool Engine::on_token(int i, int32_t id, bool last) {
    Slot& sl = slots_[size_t(i)];
    sl.last_used = ++clock_;
    const JobParams& p = sl.job->params;
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
    if (out.stopped || last) {
        // The finish (on_end, next) carries what this token released.
        sl.last = std::move(out);
        return !sl.last.stopped;
    }
    if (!out.text.empty() || !out.tokens.empty() || !sl.reasoning.empty()) emit(sl, *sl.job, std::move(out), "", "");
    return true;
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
