// The engine's embeddings jobs. A job takes a free slot, and more while it has inputs to start
// and no generation request waits; each slot runs one of its inputs at a time. Each engine
// step, after the generation step, the next chunks of every embedding slot (oldest job first,
// at most a ubatch in all) are evaluated in one Session::decode call with DecodeOutput::Hidden.
// A token's hidden state depends on nothing but its own sequence's tokens, and EmbedRun pools
// in token order, so a vector is the same bits alone or beside any load.
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
    std::lock_guard<std::mutex> l(m_);
    // The least recently used free slot: an embedding keeps nothing worth reusing, and the
    // slot whose cache is the least likely to be wanted loses least.
    auto free_slot = [&] {
        int best = -1;
        for (size_t i = 0; i < slots_.size(); ++i)
            if (!slots_[i].taken() && (best < 0 || slots_[i].last_used < slots_[size_t(best)].last_used)) best = int(i);
        return best;
    };
    auto take = [&](int i, const std::shared_ptr<EmbedWork>& w) {
        Slot& sl = slots_[size_t(i)];
        sl = Slot{};
        sl.embed = w;
        sl.embed_input = w->next++;
        sl.last_used = ++clock_;
        metrics_.slots_busy++;
    };
    // Jobs already running take more slots for inputs not yet started, while no generation
    // request waits for one.
    if (queue_.empty())
        for (size_t i = 0; i < slots_.size(); ++i)
            if (const auto& w = slots_[i].embed; w && w->next < w->job->params.inputs.size())
                for (int f; w->next < w->job->params.inputs.size() && (f = free_slot()) >= 0;) take(f, w);
    while (!embed_queue_.empty()) {
        int f = free_slot();
        if (f < 0) return;
        auto w = std::make_shared<EmbedWork>();
        w->job = std::move(embed_queue_.front());
        embed_queue_.pop_front();
        w->order = ++clock_;
        w->out.pooled.resize(w->job->params.inputs.size());
        take(f, w);
        while (queue_.empty() && w->next < w->job->params.inputs.size() && (f = free_slot()) >= 0) take(f, w);
    }
}

void Engine::release_embed(int i, bool end, const std::string& error) {
    std::shared_ptr<EmbedWork> w = slots_[size_t(i)].embed;
    auto free_one = [&](size_t k) {
        Slot& sl = slots_[k];
        if (sl.embed_run && !error.empty()) {
            // The slot may hold part of an input: start it afresh.
            try {
                s_.seq_rm(int(k), 0);
            } catch (const std::exception&) {
            }
        }
        sl.embed.reset();
        sl.embed_run.reset();
        metrics_.slots_busy--;
    };
    if (!end) {
        free_one(size_t(i));
        return;
    }
    for (size_t k = 0; k < slots_.size(); ++k)
        if (slots_[k].embed == w) free_one(k);
    if (!w->job) return;
    if (error.empty()) {
        metrics_.requests_finished++;
    } else {
        w->out.pooled.clear();
        w->out.error = error;
    }
    w->job->push(std::move(w->out));
    w->job.reset();
}

void Engine::step_embed() {
    // Embedding slots, oldest job first; each starts its input if it has not yet.
    std::vector<int> order;
    for (size_t k = 0; k < slots_.size(); ++k)
        if (slots_[k].embed) order.push_back(int(k));
    if (order.empty()) return;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return slots_[size_t(a)].embed->order < slots_[size_t(b)].embed->order; });
    // One batch of at most a ubatch: the next chunk of each.
    Batch b;
    std::vector<std::pair<int, size_t>> parts;  // slot, its flagged rows
    for (int i : order) {
        Slot& sl = slots_[size_t(i)];
        if (!sl.embed) continue;  // (its job failed earlier in this loop)
        const int64_t room = s_.params().n_ubatch - int64_t(b.size());
        if (room <= 0) break;
        try {
            if (!sl.embed_run) {
                const auto& tokens = sl.embed->job->params.inputs.at(sl.embed_input);
                sl.embed_run = std::make_unique<EmbedRun>(s_, i, tokens, sl.embed->job->params.pooling);
                metrics_.prompt_tokens += tokens.size();
            }
            parts.emplace_back(i, sl.embed_run->add_to(b, room));
        } catch (const std::exception& e) {
            release_embed(i, true, std::string("embedding failed: ") + e.what());
        }
    }
    parts.erase(std::remove_if(parts.begin(), parts.end(), [&](const auto& p) { return !slots_[size_t(p.first)].embed; }), parts.end());
    if (parts.empty()) return;
    std::vector<float> h;
    try {
        h = s_.decode(b, DecodeOutput::Hidden);
    } catch (const std::exception& e) {
        for (const auto& [i, rows] : parts)
            if (slots_[size_t(i)].embed) release_embed(i, true, std::string("embedding failed: ") + e.what());
        return;
    }
    const size_t E = size_t(s_.n_embd());
    size_t at = 0;
    for (const auto& [i, rows] : parts) {
        Slot& sl = slots_[size_t(i)];
        sl.embed_run->take(h.data() + at * E, rows);
        at += rows;
        if (!sl.embed_run->done()) continue;
        EmbedWork& w = *sl.embed;
        w.out.pooled[sl.embed_input] = sl.embed_run->pooled();
        w.out.prompt_tokens += int64_t(sl.embed_run->n_tokens());
        sl.embed_run.reset();
        sl.last_used = ++clock_;
        if (++w.done == w.job->params.inputs.size()) release_embed(i, true);
        else if (w.next < w.job->params.inputs.size()) sl.embed_input = w.next++;
        else release_embed(i, false);
    }
}

}  // namespace ls::server
