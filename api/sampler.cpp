// Samplers (core/sampling's chain, with a grammar or JSON schema) and the generation loop
// (core/runtime/decode_loop.h), as the CLI and the server run them.
#include <cstring>
#include <nlohmann/json.hpp>

#include "api/handles.h"
#include "core/grammar/grammar.h"
#include "core/grammar/json_schema.h"
#include "core/runtime/decode_loop.h"

namespace ls::capi {
namespace {

lockstep_sampler& sampler(lockstep_sampler* s) { return *need(s, "sampler"); }

// A sampling failure: the grammar stage's refusals ("grammar: no token can continue the
// text") are the grammar's, the rest a runtime failure.
[[noreturn]] void raise_sampling(const std::string& what) {
    const bool g = what.rfind("grammar:", 0) == 0 || what.find("failed: grammar:") != std::string::npos;
    throw Error(g ? LOCKSTEP_ERR_GRAMMAR : LOCKSTEP_ERR_RUNTIME, what);
}

int32_t sample_row(lockstep_sampler& h, const float* logits, const int32_t* history, size_t n_history, int64_t pos) {
    h.scratch.assign(logits, logits + h.n_vocab);
    try {
        return h.s->sample(h.scratch.data(), h.n_vocab, history, n_history, pos);
    } catch (const std::runtime_error& e) {
        raise_sampling(e.what());
    }
}

}  // namespace
}  // namespace ls::capi

using namespace ls;
using namespace ls::capi;

extern "C" {

LOCKSTEP_API lockstep_sampler_params lockstep_sampler_default_params(void) {
    const SamplerParams d;
    lockstep_sampler_params p;
    std::memset(&p, 0, sizeof p);
    p.temp = d.temp;
    p.top_k = d.top_k;
    p.top_p = d.top_p;
    p.min_p = d.min_p;
    p.repeat_penalty = d.repeat_penalty;
    p.frequency_penalty = d.frequency_penalty;
    p.presence_penalty = d.presence_penalty;
    p.repeat_last_n = d.repeat_last_n;
    p.seed = d.seed;
    p.stream = d.stream;
    return p;
}

LOCKSTEP_API int lockstep_sampler_new(const lockstep_model* model, const lockstep_sampler_params* params, lockstep_sampler** out) {
    return guarded("lockstep_sampler_new", [&] {
        need(out, "sampler");
        *out = nullptr;
        const auto& m = need(model, "model")->m;
        const lockstep_sampler_params p = params ? *params : lockstep_sampler_default_params();
        SamplerParams sp;
        sp.temp = p.temp;
        sp.top_k = p.top_k;
        sp.top_p = p.top_p;
        sp.min_p = p.min_p;
        sp.repeat_penalty = p.repeat_penalty;
        sp.frequency_penalty = p.frequency_penalty;
        sp.presence_penalty = p.presence_penalty;
        if (p.repeat_last_n < -1) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "repeat_last_n must be -1 (all) or >= 0, got " + std::to_string(p.repeat_last_n));
        sp.repeat_last_n = p.repeat_last_n;
        sp.seed = p.seed;
        sp.stream = p.stream;
        if (p.n_logit_bias < 0 || (p.n_logit_bias > 0 && (!p.logit_bias_tokens || !p.logit_bias_values)))
            throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "logit bias: " + std::to_string(p.n_logit_bias) + " entries without both arrays");
        for (int32_t i = 0; i < p.n_logit_bias; ++i) {
            check_token(*m, p.logit_bias_tokens[i]);
            sp.logit_bias.emplace_back(p.logit_bias_tokens[i], p.logit_bias_values[i]);
        }
        if (p.n_logprobs < 0) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "n_logprobs is negative");
        sp.want_logprobs = p.n_logprobs > 0;
        sp.n_logprobs = p.n_logprobs;
        if (p.grammar && p.json_schema) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "grammar and json_schema both constrain the output: give one");
        if (p.grammar || p.json_schema) {
            std::string gbnf;
            if (p.json_schema) {
                nlohmann::ordered_json schema;
                try {
                    schema = nlohmann::ordered_json::parse(p.json_schema);
                } catch (const nlohmann::json::exception& e) {
                    throw Error(LOCKSTEP_ERR_GRAMMAR, std::string("json_schema is not JSON: ") + e.what());
                }
                gbnf = grammar::json_schema_to_gbnf(schema);
            } else {
                gbnf = p.grammar;
            }
            sp.grammar = grammar::Grammar::parse(gbnf);
            sp.grammar_vocab = m->grammar_vocab();
        }
        auto h = std::make_unique<lockstep_sampler>();
        h->m = m;
        h->p = sp;
        h->n_vocab = int32_t(m->hp().n_vocab);
        h->s = std::make_unique<Sampler>(sp);
        *out = h.release();
    });
}

LOCKSTEP_API void lockstep_sampler_free(lockstep_sampler* s) { delete s; }

LOCKSTEP_API int lockstep_sampler_reset(lockstep_sampler* s) {
    return guarded("lockstep_sampler_reset", [&] {
        lockstep_sampler& h = sampler(s);
        h.s = std::make_unique<Sampler>(h.p);
    });
}

LOCKSTEP_API int lockstep_sampler_sample(lockstep_sampler* s, lockstep_session* session, int32_t seq, int32_t i, int32_t* token) {
    return guarded("lockstep_sampler_sample", [&] {
        lockstep_sampler& h = sampler(s);
        need(session, "session");
        need(token, "token");
        *token = -1;
        const float* row = output_row(*session, i, false);
        if (session->m->hp().n_vocab != h.n_vocab)
            throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "the sampler was made for another model's vocabulary");
        const int32_t n_seq = session->s->params().n_seq;
        if (seq < 0 || seq >= n_seq)
            throw Error(LOCKSTEP_ERR_OUT_OF_RANGE, "sequence " + std::to_string(seq) + " outside [0, " + std::to_string(n_seq) + ")");
        const std::vector<int32_t>& hist = session->s->seq_tokens(seq);
        *token = sample_row(h, row, hist.data(), hist.size(), int64_t(hist.size()));
    });
}

LOCKSTEP_API int lockstep_sampler_sample_logits(lockstep_sampler* s, const float* logits, int32_t n_vocab, const int32_t* history, int64_t n_history,
                                                int64_t pos, int32_t* token) {
    return guarded("lockstep_sampler_sample_logits", [&] {
        lockstep_sampler& h = sampler(s);
        need(logits, "logits");
        need(token, "token");
        *token = -1;
        if (n_vocab != h.n_vocab)
            throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "logits of " + std::to_string(n_vocab) + " entries, the vocabulary has " + std::to_string(h.n_vocab));
        if (n_history < 0) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "n_history is negative");
        if (n_history > 0) need(history, "history");
        if (pos < 0) throw Error(LOCKSTEP_ERR_OUT_OF_RANGE, "position " + std::to_string(pos) + " is negative");
        *token = sample_row(h, logits, history, size_t(n_history), pos);
    });
}

LOCKSTEP_API int lockstep_sampler_logprobs(const lockstep_sampler* s, float* chosen, int32_t* ids, float* logprobs, int32_t capacity,
                                           int32_t* n_top) {
    return guarded("lockstep_sampler_logprobs", [&] {
        const lockstep_sampler& h = *need(s, "sampler");
        need(n_top, "n_top");
        *n_top = 0;
        if (!h.p.want_logprobs) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "the sampler records no logprobs (n_logprobs 0)");
        if (capacity < 0) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "capacity is negative");
        const std::vector<TokenLogprob>& top = h.s->last_top();
        if (chosen) *chosen = h.s->last_logprob();
        *n_top = int32_t(top.size());
        for (int32_t k = 0; k < std::min<int32_t>(capacity, int32_t(top.size())); ++k) {
            if (ids) ids[k] = top[size_t(k)].id;
            if (logprobs) logprobs[k] = top[size_t(k)].logprob;
        }
    });
}

LOCKSTEP_API int lockstep_generate(lockstep_session* session, lockstep_sampler* s, int32_t seq, const int32_t* prompt, int32_t n_prompt,
                                   int32_t n_predict, lockstep_token_callback cb, void* user_data, lockstep_generate_result* result) {
    return guarded("lockstep_generate", [&] {
        lockstep_session& h = *need(session, "session");
        lockstep_sampler& smp = sampler(s);
        if (result) std::memset(result, 0, sizeof *result);
        const int32_t n_seq = h.s->params().n_seq;
        if (seq < 0 || seq >= n_seq)
            throw Error(LOCKSTEP_ERR_OUT_OF_RANGE, "sequence " + std::to_string(seq) + " outside [0, " + std::to_string(n_seq) + ")");
        if (n_prompt < 1) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "the prompt has " + std::to_string(n_prompt) + " tokens (at least one is needed)");
        need(prompt, "prompt");
        if (n_predict == 0) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "n_predict is 0 (-1: until the end)");
        if (h.m->hp().n_vocab != smp.n_vocab) throw Error(LOCKSTEP_ERR_INVALID_ARGUMENT, "the sampler was made for another model's vocabulary");
        const ModelState& m = *h.m;
        // (An image's tags, negative, only where the sequence holds them: lockstep_vision_prompt.)
        const std::vector<int32_t>& held = h.s->seq_tokens(seq);
        for (int32_t k = 0; k < n_prompt; ++k)
            if (prompt[k] >= 0 || size_t(k) >= held.size() || held[size_t(k)] != prompt[k]) check_token(m, prompt[k]);
        int32_t n_gen = 0;
        EndReason why = EndReason::Error;
        std::string error;
        DecodeLoop::Start st;
        st.prompt.assign(prompt, prompt + n_prompt);
        st.sampler = smp.s.get();
        st.n_predict = n_predict < 0 ? -1 : n_predict;
        st.hooks.on_token = [&](int32_t id, bool) {
            ++n_gen;
            if (!cb) return true;
            const ModelState::Piece& p = m.piece(id, false);
            return cb(user_data, id, m.piece_data(p), int32_t(p.len)) == 0;
        };
        st.hooks.on_end = [&](EndReason r, const std::string& e) {
            why = r;
            error = e;
        };
        DecodeLoop loop(*h.s, *m.tok);
        const int64_t kept = loop.start(seq, std::move(st));
        while (loop.step()) {
        }
        if (result) {
            result->n_generated = n_gen;
            result->n_reused = kept;
            result->n_evaluated = n_prompt - kept;
        }
        if (why == EndReason::Error) raise_sampling(error.empty() ? "generation ended without a reason" : error);
        if (result)
            result->end_reason = why == EndReason::Eog ? LOCKSTEP_END_EOG : why == EndReason::Stopped ? LOCKSTEP_END_STOPPED
                               : why == EndReason::Limit ? LOCKSTEP_END_LIMIT : LOCKSTEP_END_CONTEXT_FULL;
    });
}

}  // extern "C"
