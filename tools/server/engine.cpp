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
    for (auto& j : embed_queue_) j->push(gone);
    embed_queue_.clear();
    for (auto& sl : slots_)
        if (sl.embed) {
            if (sl.embed->job) sl.embed->job->push(gone), sl.embed->job.reset();
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
            // The slot's cache keeps what was evaluated: a later request may reuse it. (The
            // job is let go first: a fork that waited on this slot ends, and with it the job's
            // other slots, without coming back here.)
            const std::shared_ptr<Job> job = std::move(sl.job);
            metrics_.slots_busy--;
            if (sl.choice == 0) metrics_.requests_cancelled++;
            loop_.cancel(int(i));
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
        std::vector<int> chosen;  // the job's slots, choice by choice
        {
            std::lock_guard<std::mutex> l(m_);
            if (queue_.empty()) return;
            const Job& front = *queue_.front();
            const size_t n = size_t(std::max(1, front.params.n));
            std::vector<int> free;
            for (size_t i = 0; i < slots_.size(); ++i)
                if (!slots_[i].taken()) free.push_back(int(i));
            if (free.size() < n) return;  // (oldest first: later requests wait behind it)
            // Choice 0: the free slot whose cache shares the longest prefix with the prompt;
            // among equals, the least recently used (its cache is the least likely to be
            // wanted). The other choices copy its prompt: the least recently used of the rest.
            auto common = [&](int i) {
                const auto& have = s_.seq_tokens(i);
                const auto& prompt = front.params.prompt;
                size_t c = 0;
                while (c < have.size() && c < prompt.size() && have[c] == prompt[c]) ++c;
                return c;
            };
            std::stable_sort(free.begin(), free.end(), [&](int a, int b) { return slots_[size_t(a)].last_used < slots_[size_t(b)].last_used; });
            size_t best = 0, best_common = common(free[0]);
            for (size_t k = 1; k < free.size(); ++k)
                if (const size_t c = common(free[k]); c > best_common) best = k, best_common = c;
            chosen.push_back(free[best]);
            free.erase(free.begin() + std::ptrdiff_t(best));
            chosen.insert(chosen.end(), free.begin(), free.begin() + std::ptrdiff_t(n - 1));
            std::shared_ptr<Job> job = std::move(queue_.front());
            queue_.pop_front();
            metrics_.queue_length = int64_t(queue_.size());
            for (size_t k = 0; k < chosen.size(); ++k) {
                Slot& sl = slots_[size_t(chosen[k])];
                sl = Slot{};
                sl.job = job;
                sl.choice = int(k);
                sl.last_used = ++clock_;
            }
        }
        metrics_.slots_busy += int64_t(chosen.size());
        const JobParams& p = slots_[size_t(chosen[0])].job->params;
        metrics_.prompt_tokens += p.prompt.size();
        for (int i : chosen) {
            Slot& sl = slots_[size_t(i)];
            SamplerParams sp = p.sampling;
            sp.stream += uint64_t(sl.choice);
            sl.sampler = std::make_unique<Sampler>(sp);
            if (spec_.mode != SpecMode::Off) sl.spec = std::make_unique<Speculator>(spec_);
            sl.text = StopText(p.stop);
            if (p.reply_template) sl.reply = std::make_unique<ReplySplitter>(*p.reply_template);
            sl.usage.prompt_tokens = int64_t(p.prompt.size());
        }
        const int first = chosen[0];
        if (p.prompt.empty() || int64_t(p.prompt.size()) >= s_.params().n_ctx) {
            fail_job(first, "the prompt has " + std::to_string(p.prompt.size()) + " tokens; a slot's context holds " +
                                std::to_string(s_.params().n_ctx));
            continue;
        }
        auto starting = [&](int i) {
            DecodeLoop::Start st;
            st.prompt = p.prompt;
            st.sampler = slots_[size_t(i)].sampler.get();
            st.spec = slots_[size_t(i)].spec.get();
            st.n_predict = p.max_tokens;
            st.hooks.on_token = [this, i](int32_t id, bool last) { return on_token(i, id, last); };
            st.hooks.on_end = [this, i](EndReason why, const std::string& error) { on_end(i, why, error); };
            return st;
        };
        try {
            const int64_t held = p.images ? evaluate_images(first, p) : -1;
            const int64_t kept = held >= 0 ? held : loop_.start(first, starting(first));
            if (held >= 0) loop_.start(first, starting(first));
            for (int i : chosen) slots_[size_t(i)].usage.cached_tokens = kept;
            metrics_.prompt_tokens_reused += uint64_t(kept);
            for (size_t k = 1; k < chosen.size(); ++k) loop_.fork(first, chosen[k], starting(chosen[k]));
        } catch (const std::exception& e) {
            // (A failed cache edit, e.g. restoring a checkpoint: this request fails, the
            // slot starts afresh.)
            fail_job(first, std::string("preparing the slot failed: ") + e.what());
            try {
                s_.seq_rm(first, 0);
            } catch (const std::exception&) {
            }
        }
    }
}

int64_t Engine::evaluate_images(int i, const JobParams& p) {
    if (!vision_) throw std::logic_error("a job with images on an engine without a projector");
    ImageCounts n;
    const int64_t held = evaluate_image_prefix(s_, i, p.images->layout, *vision_, p.images->images, &n);
    metrics_.images_encoded += uint64_t(n.encoded);
    metrics_.images_reused += uint64_t(n.reused);
    return held;
}

void Engine::fail_job(int i, const std::string& error) {
    // One error ends the whole job: its other choices' slots are released silently.
    const std::shared_ptr<Job> job = slots_[size_t(i)].job;
    for (size_t j = 0; j < slots_.size(); ++j)
        if (int(j) != i && slots_[j].job == job) {
            loop_.cancel(int(j));
            slots_[j].job.reset();
            metrics_.slots_busy--;
        }
    finish(i, "", error);
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
        case EndReason::Error: fail_job(i, error); break;
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
    // A tool-call format's markers that are control tokens: their text goes to the reader.
    std::string marker;
    if (!p.render_markers.empty() && id < tok_.n_vocab() && tok_.token_type(id) == TokenType::Control) {
        const std::string& txt = tok_.token_text(id);
        for (const std::string& m : p.render_markers)
            if (!txt.empty() && m.find(txt) != std::string::npos) marker = txt;
        if (!marker.empty()) t.piece = marker;
    }
    if (p.sampling.want_logprobs) {
        t.logprob = sl.sampler->last_logprob();
        t.top = sl.sampler->last_top();
    }
    sl.sampled.push_back(t);
    std::string content = t.piece;
    if (sl.reply) {
        ReplySplitter::Out r = sl.reply->push(!marker.empty() ? marker : id < tok_.n_vocab() ? reply_piece(tok_, id, p.reply_template) : std::string());
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
    e.choice = sl.choice;
    e.text = std::move(out.text);
    e.reasoning = std::move(sl.reasoning);
    sl.reasoning.clear();
    // (Text the reasoning splitter released when the reply ended at its first token, an end of
    // generation, counts as a token that was never sampled: it has no logprobs to send. It used
    // to throw here, after the job had left its slot, and the client waited for ever.)
    for (size_t k : out.tokens)
        if (k < sl.sampled.size()) e.tokens.push_back(sl.sampled[k]);
    e.finish = finish;
    e.error = error;
    e.usage = sl.usage;
    job.push(std::move(e));
}

void Engine::finish(int i, const std::string& reason, const std::string& error, StopText::Out* last) {
    Slot& sl = slots_[size_t(i)];
    // The slot is free and counted so before the client hears of it.
    std::shared_ptr<Job> job = std::move(sl.job);
    metrics_.slots_busy--;
    try {
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
        if (error.empty()) metrics_.requests_finished++;
        emit(sl, *job, std::move(out), reason, error);
    } catch (const std::exception& e) {
        // The job has left its slot, so nothing later would answer it: whatever failed here,
        // its client hears of it instead of waiting for ever.
        JobEvent ev;
        ev.choice = sl.choice;
        ev.error = error.empty() ? std::string("finishing the answer failed: ") + e.what() : error;
        ev.usage = sl.usage;
        job->push(std::move(ev));
    }
}

}  // namespace ls::server
