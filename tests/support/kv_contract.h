// The KV contract of SEMANTICS.md section 1 as reusable checks over a loaded tiny model: each
// compares a batching of a prompt or a conversation with token-at-a-time evaluation or a fresh
// context, bit for bit. The per-family test files (tests/models/) call them on their models.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/models/registry.h"
#include "core/runtime/session.h"
#include "tests/support/logits_util.h"
#include "tests/support/test_util.h"

namespace ls::test {

struct LoadedModel {
    std::unique_ptr<Backend> be;
    std::unique_ptr<Model> model;
    int32_t n_vocab() const { return int32_t(model->hparams().n_vocab); }
};

// tests/data/<kind>_tiny.gguf on `backend`.
inline LoadedModel load_tiny(const std::string& backend, const std::string& kind) {
    LoadedModel l;
    l.be = make_backend(backend);
    l.model = load_model(test_data(kind + "_tiny.gguf"), *l.be);
    return l;
}

inline std::unique_ptr<Session> new_session(const LoadedModel& l, int64_t n_ctx, int64_t n_ubatch, DType kv, int32_t n_seq = 1) {
    SessionParams p;
    p.n_ctx = n_ctx;
    p.n_ubatch = n_ubatch;
    p.n_seq = n_seq;
    p.type_k = p.type_v = kv;
    return std::make_unique<Session>(*l.model, *l.be, p);
}

inline int32_t argmax_of(const float* l, int64_t n) { return int32_t(std::max_element(l, l + n) - l); }

// A prompt of n tokens evaluated in one ubatch, in ubatches of `chunk` (rings wrap when the
// window plus chunk is shorter than the prompt), and in calls of 3, 7, 15, ... tokens: each
// equals token at a time. Returns the token-at-a-time logits.
inline std::vector<float> check_batchings_equal_token_at_a_time(const LoadedModel& l, DType kv, size_t n, int64_t chunk) {
    const int32_t nv = l.n_vocab();
    const std::vector<int32_t> prompt = random_tokens(n, 5, nv);
    const std::vector<float> want = one_by_one(*new_session(l, 128, 1, kv), prompt);
    REQUIRE_BIT_IDENTICAL(new_session(l, 128, 64, kv)->eval(prompt, 0), want, nv);  // one ubatch
    REQUIRE_BIT_IDENTICAL(new_session(l, 128, chunk, kv)->eval(prompt, 0), want, nv);
    auto uneven = new_session(l, 128, chunk, kv);
    std::vector<float> got;
    for (size_t i0 = 0, step = 3; i0 < prompt.size(); i0 += step, step = step * 2 + 1) {
        const size_t i1 = std::min(prompt.size(), i0 + step);
        std::vector<float> part = uneven->eval({prompt.begin() + int64_t(i0), prompt.begin() + int64_t(i1)}, 0);
        got.insert(got.end(), part.begin(), part.end());
    }
    REQUIRE_BIT_IDENTICAL(got, want, nv);
    return want;
}

// Four sequences of 13, 3, 9 and 11 tokens interleaved token by token in one batch, logits
// wanted for every third token and each sequence's last one, in ubatches of 12 that split it
// mid-sequence: each row equals its sequence evaluated alone, token at a time.
inline void check_sequences_together_equal_alone(const LoadedModel& l, DType kv) {
    const int32_t nv = l.n_vocab();
    const std::vector<size_t> lens = {13, 3, 9, 11};
    std::vector<std::vector<int32_t>> prompts;
    std::vector<std::vector<float>> want;
    for (size_t q = 0; q < lens.size(); ++q) {
        prompts.push_back(random_tokens(lens[q], uint32_t(40 + q), nv));
        want.push_back(one_by_one(*new_session(l, 64, 1, kv), prompts.back()));
    }
    auto s = new_session(l, 64, 12, kv, int32_t(lens.size()));
    Batch b;
    for (size_t i = 0; i < 13; ++i)
        for (size_t q = 0; q < lens.size(); ++q)
            if (i < lens[q]) b.add(prompts[q][i], int32_t(q), int32_t(i), i % 3 == 0 || i + 1 == lens[q]);
    const std::vector<float> got = s->decode(b);
    size_t row = 0;
    for (size_t r = 0; r < b.size(); ++r) {
        if (!b.logits[r]) continue;
        const size_t q = size_t(b.seq[r]), p = size_t(b.pos[r]);
        INFO("sequence " << q << " position " << p);
        const std::vector<float> a(got.begin() + int64_t(row * nv), got.begin() + int64_t((row + 1) * nv));
        const std::vector<float> w(want[q].begin() + int64_t(p * nv), want[q].begin() + int64_t((p + 1) * nv));
        REQUIRE_BIT_IDENTICAL(a, w, nv);
        ++row;
    }
    REQUIRE(row * size_t(nv) == got.size());
}

// `turns` chat turns in ubatches of B: the user's turn (5 + 3 turn tokens), then a greedy
// reply of 6 tokens as a chat loop feeds them; each turn's logits equal a fresh evaluation of
// the whole transcript, and rolling back the last reply token and feeding it again (a front
// end re-rendering its template) is not noticed by the next turn.
inline void check_chat_prefix_reuse_equals_fresh(const LoadedModel& l, DType kv, int turns, int64_t B, size_t first_len = 5) {
    const int32_t nv = l.n_vocab();
    const int64_t n_ctx = 128;
    auto s = new_session(l, n_ctx, B, kv);
    std::vector<int32_t> transcript;
    for (int turn = 0; turn < turns; ++turn) {
        INFO("turn " << turn);
        const std::vector<int32_t> user = random_tokens(first_len + 3 * size_t(turn), uint32_t(60 + turn), nv);
        const size_t at = transcript.size();
        transcript = concat(transcript, user);
        std::vector<float> got = s->eval(user, 0);
        for (int r = 0; r < 6; ++r) {
            const int32_t next = argmax_of(got.data() + got.size() - size_t(nv), nv);
            transcript.push_back(next);
            std::vector<float> step = s->eval({next}, 0);
            got.insert(got.end(), step.begin(), step.end());
        }
        REQUIRE_BIT_IDENTICAL(got, new_session(l, n_ctx, B, kv)->eval(transcript, int64_t(at)), nv);
        REQUIRE(s->seq_rm(0, int64_t(transcript.size()) - 1));
        s->eval({transcript.back()}, 0);
    }
}

}  // namespace ls::test
