// The engine's embeddings jobs: each takes a free slot, and each engine step, after the
// generation step, evaluates the next chunks of every one (oldest first, at most a ubatch in
// all) in one Session::decode call with DecodeOutput::Hidden. A chunk's hidden states depend on nothing but the slot's own tokens, and
// EmbedRun pools them in token order, so a vector is the same bits alone or beside any load.
#include <algorithm>
#include <stdexcept>

#include "tools/server/engine.h"

namespace ls::server {

bool Engine::submit(std::shared_ptr<EmbedJob> job) {
    {
        std::lock_guard<std::mutex> l(m_);
        if (stop_) return false;
        const int64_t free_slots = int64_t(slots_.size()) - metrics_.slots_busy.load();
        if (int64_t(queue_.size() + embed_queue_.size()) >= std::max<int64_t>(free_slots, 0) + int64_t(max_queue_)) return false;
        embed_queue_.push_back(std::move(job));
    }
    cv_.notify_all();
    return true;
}

void Engine::admit_embed() {
    while (true) {
        int best = -1;
        {
            std::lock_guard<std::mutex> l(m_);
            if (embed_queue_.empty()) return;
            // The least recently used free slot: an embedding keeps nothing worth reusing, and
            // the slot whose cache is the least likely to be wanted loses least.
            for (size_t i = 0; i < slots_.size(); ++i)
                if (!slots_[i].taken() && (best < 0 || slots_[i].last_used < slots_[size_t(best)].last_used)) best = int(i);
            if (best < 0) return;
            Slot& sl = slots_[size_t(best)];
            sl = Slot{};
            sl.embed = std::move(embed_queue_.front());
            embed_queue_.pop_front();
            sl.last_used = ++clock_;
        }
        metrics_.slots_busy++;
    }
}

void Engine::end_embed(int i, const std::string& error) {
    Slot& sl = slots_[size_t(i)];
    std::shared_ptr<EmbedJob> job = std::move(sl.embed);
    sl.embed_run.reset();
    EmbedResult r = std::move(sl.embed_out);
    sl.embed_out = {};
    metrics_.slots_busy--;
    if (!error.empty()) {
        r.pooled.clear();
        r.error = error;
        // The slot may hold part of an input: start it afresh.
        try {
            s_.seq_rm(i, 0);
        } catch (const std::exception&) {
        }
    } else {
        metrics_.requests_finished++;
    }
    job->finish(std::move(r));
}

void Engine::step_embed() {
    // Embedding slots, oldest job first; each starts its next input if it has none running.
    std::vector<int> order;
    for (size_t k = 0; k < slots_.size(); ++k)
        if (slots_[k].embed) order.push_back(int(k));
    if (order.empty()) return;
    std::sort(order.begin(), order.end(), [&](int a, int b) { return slots_[size_t(a)].last_used < slots_[size_t(b)].last_used; });
    // One batch of at most a ubatch: the next chunk of each, oldest first.
    Batch b;
    std::vector<std::pair<int, size_t>> parts;  // slot, its flagged rows
    for (int i : order) {
        Slot& sl = slots_[size_t(i)];
        const int64_t room = s_.params().n_ubatch - int64_t(b.size());
        if (room <= 0) break;
        try {
            if (!sl.embed_run) {
                const auto& tokens = sl.embed->params.inputs.at(sl.embed_out.pooled.size());
                sl.embed_run = std::make_unique<EmbedRun>(s_, i, tokens, sl.embed->params.pooling);
                metrics_.prompt_tokens += tokens.size();
            }
            parts.emplace_back(i, sl.embed_run->add_to(b, room));
        } catch (const std::exception& e) {
            end_embed(i, std::string("embedding failed: ") + e.what());
        }
    }
    if (parts.empty()) return;
    std::vector<float> h;
    try {
        h = s_.decode(b, DecodeOutput::Hidden);
    } catch (const std::exception& e) {
        for (const auto& [i, rows] : parts) end_embed(i, std::string("embedding failed: ") + e.what());
        return;
    }
    const size_t E = size_t(s_.n_embd());
    size_t at = 0;
    for (const auto& [i, rows] : parts) {
        Slot& sl = slots_[size_t(i)];
        sl.embed_run->take(h.data() + at * E, rows);
        at += rows;
        if (sl.embed_run->done()) {
            sl.embed_out.pooled.push_back(sl.embed_run->pooled());
            sl.embed_out.prompt_tokens += int64_t(sl.embed_run->n_tokens());
            sl.embed_run.reset();
            if (sl.embed_out.pooled.size() == sl.embed->params.inputs.size()) end_embed(i, "");
        }
    }
}

}  // namespace ls::server
