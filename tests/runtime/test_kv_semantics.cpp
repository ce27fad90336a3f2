// The KV-cache / attention contract of SEMANTICS.md section 1, on a tiny random Gemma 3:
// batching, chunking across ring wraps, prefix reuse with seq_rm, cross-backend agreement,
// context and vocabulary errors, ring sizes; and the ring rule of the attention op checked
// against a dense, position-indexed computation with an explicit mask.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "core/rules/attention_rule.h"
#include "core/ir/ops.h"
#include "core/quant/quant.h"
#include "core/runtime/session.h"
#include "tests/support/logits_util.h"
#include "tests/support/tiny_model.h"

using namespace ls;
using namespace ls::test;

namespace {

constexpr int kWindow = 8;

// 7 layers: 0-4 windowed, 5 global, 6 windowed. head_dim * n_head_kv = 32, so Q8_0 and Q4_0
// caches work.
// Weights are Q8_0 unless `wtype` says otherwise. With quantized weights every mul_mat first
// quantizes its activations to Q8_0, which absorbs most float rounding differences; F32
// weights keep the float path end to end, so small differences are not hidden.
TinyGemma3Spec kv_spec(DType wtype = DType::Q8_0) {
    TinyGemma3Spec s;
    s.n_layer = 7;
    s.window = kWindow;
    s.ctx = 256;
    s.seed = 7;
    s.wtype = wtype;
    return s;
}

test::LoadedModel load(const std::string& k, DType wtype = DType::Q8_0) {
    return test::load_tiny(k, std::string("kv7_") + dtype_name(wtype), kv_spec(wtype));
}

std::unique_ptr<Session> make_session(const test::LoadedModel& l, int64_t n_ctx, int64_t n_ubatch, DType kv) {
    SessionParams p;
    p.n_ctx = n_ctx;
    p.n_ubatch = n_ubatch;
    p.type_k = p.type_v = kv;
    return std::make_unique<Session>(*l.model, *l.be, p);
}

const char* kv_name(DType t) { return dtype_name(t); }

}  // namespace

TEST_CASE("kv: the tiny gemma3 has windowed and global layers with the specified ring sizes", "[kv][tiny]") {
    TinyGemma3Spec spec = kv_spec();
    spec.n_layer = 6;
    test::LoadedModel l = test::load_tiny("reference", "kv6", spec);
    const Hparams& hp = l.model->hparams();
    REQUIRE(hp.n_layer == 6);
    for (int il = 0; il < 5; ++il) CHECK(hp.layers[il].window == kWindow);
    CHECK(hp.layers[5].window == 0);
    CHECK(hp.layers[0].rope_base == 10000.f);
    CHECK(hp.layers[5].rope_base == spec.rope_base);

    struct Case { int64_t n_ctx, n_ubatch, want_windowed, want_global; };
    // R = min(n_ctx, W + B) for windowed layers, n_ctx for global ones; B is the session's
    // ubatch after clamping to n_ctx.
    for (Case c : {Case{64, 4, kWindow + 4, 64}, Case{128, 8, kWindow + 8, 128}, Case{10, 4, 10, 10},
                   Case{3, 8, 3, 3}, Case{64, 1, kWindow + 1, 64}}) {
        INFO("n_ctx " << c.n_ctx << " n_ubatch " << c.n_ubatch);
        auto s = make_session(l, c.n_ctx, c.n_ubatch, DType::F16);
        for (int il = 0; il < 6; ++il) {
            CHECK(s->kv().window(il) == hp.layers[il].window);
            CHECK(s->kv().ring_rows(il) == (il < 5 ? c.want_windowed : c.want_global));
        }
    }
    // n_ctx is clamped to the training context.
    auto s = make_session(l, 100000, 4, DType::F16);
    CHECK(s->params().n_ctx == spec.ctx);
    CHECK(s->kv().ring_rows(5) == spec.ctx);
}

TEST_CASE("kv: a prompt longer than the window in one ubatch equals token at a time", "[kv]") {
    const std::string bk = GENERATE(from_range(test::all_backend_names()));
    const DType kv = GENERATE(DType::F32, DType::F16, DType::Q8_0, DType::Q4_0);
    const DType wtype = GENERATE(DType::Q8_0, DType::F32);
    INFO("backend " << bk << ", kv cache " << kv_name(kv) << ", weights " << dtype_name(wtype));
    test::LoadedModel l = load(bk, wtype);
    const int64_t nv = l.model->hparams().n_vocab;
    const std::vector<int32_t> prompt = random_tokens(29, 1, int32_t(nv));  // > W, < B

    auto whole = make_session(l, 64, 32, kv);  // R = 40: one ubatch, no wrap
    const std::vector<float> batched = whole->eval(prompt, 0);
    REQUIRE(batched.size() == prompt.size() * size_t(nv));
    for (float x : batched) REQUIRE(std::isfinite(x));

    auto single = make_session(l, 64, 1, kv);  // R = W + 1: wraps every 9 tokens
    REQUIRE_BIT_IDENTICAL(batched, one_by_one(*single, prompt), nv);
    auto same_ring = make_session(l, 64, 32, kv);  // token at a time in the R = 40 ring
    REQUIRE_BIT_IDENTICAL(batched, one_by_one(*same_ring, prompt), nv);
}

TEST_CASE("kv: chunked evaluation across ring wraps equals token at a time", "[kv]") {
    const std::string bk = GENERATE(from_range(test::all_backend_names()));
    const DType kv = GENERATE(DType::F32, DType::F16, DType::Q8_0, DType::Q4_0);
    test::LoadedModel l = load(bk);
    const int64_t nv = l.model->hparams().n_vocab;
    // n_ctx > W + B, so the windowed rings (R = W + B) wrap several times; every prompt's
    // last chunk is shorter than W, so its last query reaches back across the chunk boundary
    // and across a wrap.
    struct Case { int64_t n_ctx, n_ubatch; size_t len; };
    for (Case c : {Case{64, 4, 50}, Case{128, 8, 117}, Case{96, 5, 96}, Case{80, 7, 73}}) {
        INFO("backend " << bk << ", kv cache " << kv_name(kv) << ", n_ctx " << c.n_ctx
                        << ", n_ubatch " << c.n_ubatch << ", prompt " << c.len);
        REQUIRE(c.len % c.n_ubatch != 0);
        REQUIRE(int64_t(c.len % c.n_ubatch) < kWindow);
        const std::vector<int32_t> prompt = random_tokens(c.len, uint32_t(c.len), int32_t(nv));
        auto ref = make_session(l, c.n_ctx, 1, kv);
        const std::vector<float> want = one_by_one(*ref, prompt);

        auto chunked = make_session(l, c.n_ctx, c.n_ubatch, kv);
        REQUIRE(chunked->kv().ring_rows(0) == kWindow + c.n_ubatch);
        REQUIRE_BIT_IDENTICAL(chunked->eval(prompt, 0), want, nv);

        // The same prompt in uneven eval calls: chunks start at positions that are not
        // multiples of B.
        auto uneven = make_session(l, c.n_ctx, c.n_ubatch, kv);
        std::vector<float> got;
        for (size_t i0 = 0, step = 3; i0 < prompt.size(); i0 += step, step = step * 2 + 1) {
            const size_t i1 = std::min(prompt.size(), i0 + step);
            std::vector<float> part = uneven->eval({prompt.begin() + i0, prompt.begin() + i1}, 0);
            got.insert(got.end(), part.begin(), part.end());
        }
        REQUIRE_BIT_IDENTICAL(got, want, nv);
    }
}

TEST_CASE("kv: multi-turn prefix reuse with seq_rm equals a fresh evaluation of the transcript", "[kv]") {
    const std::string bk = GENERATE(from_range(test::all_backend_names()));
    const DType kv = GENERATE(DType::F32, DType::F16, DType::Q8_0, DType::Q4_0);
    INFO("backend " << bk << ", kv cache " << kv_name(kv));
    test::LoadedModel l = load(bk);
    const int32_t nv = int32_t(l.model->hparams().n_vocab);
    const int64_t n_ctx = 96, B = 4, R = kWindow + B;  // windowed rings of 12 rows; global 96
    // Logits of transcript[from..] evaluated in a fresh session.
    auto fresh = [&](const std::vector<int32_t>& transcript, size_t from) {
        auto f = make_session(l, n_ctx, B, kv);
        return f->eval(transcript, int64_t(from));
    };

    auto s = make_session(l, n_ctx, B, kv);
    REQUIRE(s->kv().ring_rows(0) == R);
    const std::vector<int32_t> A = random_tokens(30, 11, nv), B1 = random_tokens(15, 12, nv),
                               C = random_tokens(10, 13, nv), D = random_tokens(9, 14, nv);

    SECTION("before the ring wraps, any point can be restored") {
        const std::vector<int32_t> A0 = head(A, 10);  // n = 10 <= R
        s->eval(A0, 0);
        REQUIRE(s->seq_rm(0, 2));
        REQUIRE(s->seq_len(0) == 2);
        const std::vector<int32_t> transcript = concat(head(A0, 2), B1);
        REQUIRE_BIT_IDENTICAL(s->eval(B1, 0), fresh(transcript, 2), nv);
    }

    SECTION("rollback inside the ring, a failing rollback, then clear and re-evaluate") {
        s->eval(A, 0);
        REQUIRE(s->seq_len(0) == 30);
        REQUIRE(s->seq_rm(0, 30));  // nothing to drop
        REQUIRE(s->seq_rm(0, 31));
        REQUIRE(s->seq_len(0) == 30);
        // n - p0 <= R - W + 1 = 5: p0 = 24 needs key 17, which position 29 overwrote.
        REQUIRE_FALSE(s->seq_rm(0, 24));
        REQUIRE(s->seq_len(0) == 30);
        REQUIRE(s->seq_rm(0, 25));  // keys 18..24 are still in the ring
        REQUIRE(s->seq_len(0) == 25);
        std::vector<int32_t> transcript = concat(head(A, 25), B1);
        REQUIRE_BIT_IDENTICAL(s->eval(B1, 0), fresh(transcript, 25), nv);

        // A failed seq_rm changes nothing: the conversation goes on as if it was not called.
        REQUIRE_FALSE(s->seq_rm(0, 34));
        REQUIRE(s->seq_len(0) == 40);
        const size_t at = transcript.size();
        transcript = concat(transcript, C);
        REQUIRE_BIT_IDENTICAL(s->eval(C, 0), fresh(transcript, at), nv);

        // The caller's fallback: clear and re-evaluate from a point it can restore (here 0).
        REQUIRE_FALSE(s->seq_rm(0, 44));
        REQUIRE(s->seq_len(0) == 50);
        s->reset();
        REQUIRE(s->seq_len(0) == 0);
        transcript = concat(head(transcript, 44), D);
        REQUIRE_BIT_IDENTICAL(s->eval(transcript, 0), fresh(transcript, 0), nv);
    }

    SECTION("rolled-back positions overwrote ring rows: restoring past them is refused") {
        // Speculative guesses are written, then rolled back: len drops to 26, but positions
        // 26..29 took the rows of 14..17. Going back to 22 needs keys 15..21; with len alone
        // (ring 14..25) it looked possible and gave other logits than a fresh evaluation.
        s->eval(A, 0);
        REQUIRE(s->seq_rm(0, 26));
        REQUIRE_FALSE(s->seq_rm(0, 22));
        REQUIRE(s->seq_len(0) == 26);
        REQUIRE(s->seq_rm(0, 25));  // keys 18..24: still there
        std::vector<int32_t> transcript = concat(head(A, 25), C);
        REQUIRE_BIT_IDENTICAL(s->eval(C, 0), fresh(transcript, 25), nv);
        // Writes past the old frontier move it on: 35 -> back to 31 (keys 24..30, rows of 23..34).
        REQUIRE(s->seq_rm(0, 31));
        REQUIRE_FALSE(s->seq_rm(0, 26));
        transcript = concat(head(transcript, 31), D);
        REQUIRE_BIT_IDENTICAL(s->eval(D, 0), fresh(transcript, 31), nv);
    }

    SECTION("rolling back to position 0 needs no key and always succeeds") {
        s->eval(A, 0);  // n = 30 > R: the ring has wrapped
        REQUIRE_FALSE(s->seq_rm(0, 1));  // position 1 needs key 0, long overwritten
        REQUIRE(s->seq_rm(0, 0));
        REQUIRE(s->seq_len(0) == 0);
        REQUIRE_BIT_IDENTICAL(s->eval(B1, 0), fresh(B1, 0), nv);
    }
}

TEST_CASE("kv: several sequences of different lengths in one ubatch equal each evaluated alone", "[kv]") {
    const std::string bk = GENERATE(from_range(test::all_backend_names()));
    const DType kv = GENERATE(DType::F16, DType::Q4_0);
    INFO("backend " << bk << ", kv cache " << kv_name(kv));
    test::LoadedModel l = load(bk);
    const int32_t nv = int32_t(l.model->hparams().n_vocab);
    const int64_t n_ctx = 64, B = 8;  // a step takes at most 3 + 2 + 3 tokens
    const std::vector<std::vector<int32_t>> prompts = {random_tokens(40, 21, nv), random_tokens(23, 22, nv),
                                                       random_tokens(33, 23, nv)};
    // Each alone, token at a time.
    std::vector<std::vector<float>> want;
    for (const auto& p : prompts) want.push_back(one_by_one(*make_session(l, n_ctx, 1, kv), p));

    // Together: ubatches of at most B tokens mixing the three sequences, each sequence
    // advancing by a different, varying count. Slot 2 is filled with sequence 1's tokens
    // first and then restarted at position 0 with sequence 2: it must not see the old keys.
    KvCache cache(*l.be, l.model->kv_layout(), KvCacheConfig{n_ctx, 3, B, kv, kv});
    std::unique_ptr<Buffer> scratch;
    auto run = [&](const std::vector<std::pair<int, std::vector<int32_t>>>& parts) {
        Ubatch ub;
        for (auto& [slot, toks] : parts)
            for (int32_t t : toks) {
                ub.out_idx.push_back(int32_t(ub.tokens.size()));
                ub.tokens.push_back(t);
                ub.pos.push_back(int32_t(cache.seq_len(slot)));
                ub.seq.push_back(slot);
                cache.set_seq_len(slot, cache.seq_len(slot) + 1);
            }
        REQUIRE(int64_t(ub.tokens.size()) <= B);
        Graph g;
        Tensor* logits = l.model->build_graph(g, ub, cache);
        run_graph(*l.be, g, scratch);
        std::vector<float> out(size_t(logits->nelements()));
        read_tensor(*l.be, *logits, out.data());
        return std::make_pair(ub, out);
    };
    for (size_t i = 0; i < 20; i += 5) run({{2, {prompts[1].begin() + i, prompts[1].begin() + i + 5}}});
    REQUIRE(cache.seq_rm(2, 0));  // no key before position 0 is needed: always possible
    REQUIRE(cache.seq_len(2) == 0);

    std::vector<std::vector<float>> got(3);
    size_t at[3] = {0, 0, 0};
    for (int step = 0; at[0] < 40 || at[1] < 23 || at[2] < 33; ++step) {
        std::vector<std::pair<int, std::vector<int32_t>>> parts;
        const size_t want_n[3] = {size_t(1 + step % 3), size_t(2 - step % 2), size_t(step % 4)};
        for (int s = 0; s < 3; ++s) {
            const size_t n = std::min(want_n[s], prompts[s].size() - at[s]);
            if (n) parts.push_back({s, {prompts[s].begin() + at[s], prompts[s].begin() + at[s] + n}});
            at[s] += n;
        }
        if (parts.empty()) continue;
        auto [ub, out] = run(parts);
        for (size_t i = 0; i < ub.tokens.size(); ++i)
            got[ub.seq[i]].insert(got[ub.seq[i]].end(), out.begin() + i * nv, out.begin() + (i + 1) * nv);
    }
    for (int s = 0; s < 3; ++s) {
        INFO("sequence " << s);
        REQUIRE_BIT_IDENTICAL(got[s], want[s], nv);
    }
}

TEST_CASE("kv: every backend agrees with the reference on the tiny model", "[kv]") {
    const DType kv = GENERATE(DType::F32, DType::F16);
    const DType wtype = GENERATE(DType::Q8_0, DType::F32);
    test::LoadedModel r = load("reference", wtype);
    const int64_t nv = r.model->hparams().n_vocab;
    const std::vector<int32_t> prompt = random_tokens(61, 5, int32_t(nv));
    const std::vector<float> lr = make_session(r, 64, 8, kv)->eval(prompt, 0);
    for (const std::string& bk : test::backend_names_under_test()) {
        INFO("backend " << bk << ", kv cache " << kv_name(kv) << ", weights " << dtype_name(wtype));
        test::LoadedModel c = load(bk, wtype);
        // Every logit bit for bit (the canonical arithmetic, core/rules/canon.h): every backend
        // computes each op in the reference's order and rounding and reads the same cache bytes.
        // SEMANTICS.md section 4's 1e-3 nats is the bound for engines that do not; a tolerance
        // here would pass a backend one ulp off in some kernel.
        REQUIRE_BIT_IDENTICAL(make_session(c, 64, 8, kv)->eval(prompt, 0), lr, nv);
    }
}

TEST_CASE("kv: context overflow and bad token ids are errors raised before evaluating", "[kv]") {
    const std::string bk = GENERATE(from_range(test::all_backend_names()));
    INFO("backend " << bk);
    test::LoadedModel l = load(bk);
    const int32_t nv = int32_t(l.model->hparams().n_vocab);
    auto s = make_session(l, 32, 4, DType::F16);
    auto cache_is_zero = [&] {
        std::vector<uint8_t> bytes(s->kv().k(0)->nbytes());
        read_tensor(*l.be, *s->kv().k(0), bytes.data());
        for (uint8_t b : bytes)
            if (b) return false;
        return true;
    };
    REQUIRE_THROWS_AS(s->eval(random_tokens(33, 1, nv), 0), std::length_error);
    CHECK(s->seq_len(0) == 0);
    CHECK(cache_is_zero());
    REQUIRE_THROWS_AS(s->eval({1, 2, nv}), std::out_of_range);
    REQUIRE_THROWS_AS(s->eval({-1}), std::out_of_range);
    CHECK(s->seq_len(0) == 0);
    CHECK(cache_is_zero());

    const std::vector<int32_t> a = random_tokens(20, 2, nv), b = random_tokens(12, 3, nv);
    const std::vector<float> want = make_session(l, 32, 4, DType::F16)->eval(concat(a, b), 20);
    s->eval(a);
    REQUIRE_THROWS_AS(s->eval(random_tokens(13, 4, nv)), std::length_error);  // 20 + 13 > 32
    REQUIRE_THROWS_AS(s->eval(concat(head(b, 5), {nv + 7})), std::out_of_range);
    CHECK(s->seq_len(0) == 20);
    // Exactly filling the context works, and matches a fresh evaluation.
    REQUIRE_BIT_IDENTICAL(s->eval(b, 0), want, nv);
    REQUIRE_THROWS_AS(s->eval({1}), std::length_error);
}

// ---------------------------------------------------------------------------------------
// The ring rule itself: the attention op over a ring-indexed cache (filled with set_rows at
// rows s*R + p mod R) against a dense computation over position-indexed keys with an explicit
// mask (k <= p and, for W > 0, p - k < W), for two interleaved sequences of different lengths.

namespace {

struct RingCase {
    int32_t W;
    int64_t B;  // most tokens of one sequence per step
    int64_t R;
    DType type;
};

void check_ring_rule(const std::string& bk, const RingCase& c) {
    INFO("backend " << bk << ", W " << c.W << ", B " << c.B << ", R " << c.R << ", cache "
                    << dtype_name(c.type));
    std::unique_ptr<Backend> be = test::make_backend(bk);
    const int64_t Dk = 16, Dv = 32, Hkv = 2, H = 4, n_seq = 2, group = H / Hkv;
    const float scale = 0.25f;

    // The cache tensors: [Dk*Hkv, n_seq*R] and [Dv*Hkv, n_seq*R], poisoned with NaN bytes so
    // that reading a row never written shows up.
    Tensor kc, vc;
    size_t total = 0;
    for (auto [t, row] : {std::pair{&kc, Dk * Hkv}, std::pair{&vc, Dv * Hkv}}) {
        t->type = c.type;
        t->ne[0] = row;
        t->ne[1] = n_seq * c.R;
        set_contiguous_strides(*t);
        t->kind = TensorKind::Persistent;
        t->offset = total;
        total += (t->nbytes() + 255) / 256 * 256;
    }
    std::unique_ptr<Buffer> buf = be->alloc(total);
    be->fill(*buf, 0, total, 0xFF);
    kc.buffer = vc.buffer = buf.get();

    // Dense, position-indexed copies of what the cache holds (after the type's round trip).
    std::vector<std::vector<std::vector<float>>> keys(n_seq), vals(n_seq);
    uint64_t rng = 12345;
    auto rnd = [&] {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        return float(double(rng >> 11) * 0x1.0p-53 * 2.0 - 1.0);
    };
    auto round_trip = [&](std::vector<float> x) {
        std::vector<uint8_t> q(row_bytes(c.type, int64_t(x.size())));
        quantize_row(c.type, x.data(), q.data(), int64_t(x.size()));
        dequantize_row(c.type, q.data(), x.data(), int64_t(x.size()));
        return x;
    };

    const int64_t n_pos = c.W > 0 ? 6 * c.R + 3 : c.R;  // several wraps where the ring allows
    std::unique_ptr<Buffer> scratch;
    int64_t len[2] = {0, 0};
    int64_t n_queries = 0;
    for (int step = 0; len[0] < n_pos || len[1] < n_pos - 5; ++step) {
        // Sequence 0 takes 1..B tokens per step, sequence 1 a different count; interleaved.
        const int64_t take[2] = {std::min<int64_t>(n_pos - len[0], 1 + step % c.B),
                                 std::min<int64_t>(n_pos - 5 - len[1], c.B - step % c.B)};
        std::vector<int32_t> pos, seq;
        for (int64_t i = 0; i < std::max(take[0], take[1]); ++i)
            for (int s = 0; s < 2; ++s)
                if (i < take[s]) {
                    pos.push_back(int32_t(len[s] + i));
                    seq.push_back(s);
                }
        const int64_t T = int64_t(pos.size());
        if (T == 0) continue;
        std::vector<float> knew(size_t(T * Dk * Hkv)), vnew(size_t(T * Dv * Hkv)), q(size_t(T * H * Dk));
        std::vector<int64_t> rows(static_cast<size_t>(T));
        for (int64_t t = 0; t < T; ++t) {
            std::vector<float> kr(size_t(Dk * Hkv)), vr(size_t(Dv * Hkv));
            for (float& x : kr) x = rnd();
            for (float& x : vr) x = rnd() * 4;
            std::copy(kr.begin(), kr.end(), knew.begin() + t * Dk * Hkv);
            std::copy(vr.begin(), vr.end(), vnew.begin() + t * Dv * Hkv);
            auto& ks = keys[seq[t]];
            auto& vs = vals[seq[t]];
            REQUIRE(int64_t(ks.size()) == pos[t]);
            ks.push_back(round_trip(kr));
            vs.push_back(round_trip(vr));
            rows[t] = seq[t] * c.R + pos[t] % c.R;  // SEMANTICS.md section 1, written out here
        }
        for (float& x : q) x = rnd() * 3;

        Graph g;
        Tensor* kin = g.input(DType::F32, {Dk * Hkv, T}, knew.data(), "k_new");
        Tensor* vin = g.input(DType::F32, {Dv * Hkv, T}, vnew.data(), "v_new");
        Tensor* idx = g.input(DType::I64, {T}, rows.data(), "rows");
        Tensor* qin = g.input(DType::F32, {Dk, H, T}, q.data(), "q");
        Tensor* pin = g.input(DType::I32, {T}, pos.data(), "pos");
        Tensor* sq = g.input(DType::I32, {T}, seq.data(), "seq");
        Tensor* kview = ops::set_rows(g, &kc, kin, idx);
        Tensor* vview = ops::set_rows(g, &vc, vin, idx);
        Tensor* out = ops::attention(g, qin, kview, vview, pin, sq, AttentionParams{c.W, int32_t(c.R), int32_t(Hkv), scale, 0.f});
        g.mark_output(out);
        run_graph(*be, g, scratch);
        std::vector<float> got(size_t(Dv * H * T));
        read_tensor(*be, *out, got.data());

        // The dense oracle: every key of the sequence so far, masked explicitly.
        for (int64_t t = 0; t < T; ++t) {
            const int64_t p = pos[t];
            const auto& ks = keys[seq[t]];
            const auto& vs = vals[seq[t]];
            for (int64_t h = 0; h < H; ++h) {
                const int64_t hk = h / group;
                std::vector<double> w(ks.size(), 0.0);
                std::vector<bool> visible(ks.size());
                double mx = -INFINITY;
                for (int64_t k = 0; k < int64_t(ks.size()); ++k) {
                    visible[k] = k <= p && (c.W == 0 || p - k < c.W);
                    if (!visible[k]) continue;
                    double dot = 0;
                    for (int64_t i = 0; i < Dk; ++i) dot += double(q[(t * H + h) * Dk + i]) * ks[k][hk * Dk + i];
                    w[k] = dot * scale;
                    mx = std::fmax(mx, w[k]);
                }
                double sum = 0;
                for (int64_t k = 0; k < int64_t(ks.size()); ++k)
                    if (visible[k]) sum += (w[k] = std::exp(w[k] - mx));
                for (int64_t i = 0; i < Dv; ++i) {
                    double want = 0;
                    for (int64_t k = 0; k < int64_t(ks.size()); ++k)
                        if (visible[k]) want += w[k] / sum * vs[k][hk * Dv + i];
                    const float g_ = got[(t * H + h) * Dv + i];
                    // F32 accumulation in the op against double here, over at most n_pos keys
                    // of values |v| <= 4: rounding stays far below 1e-4.
                    if (!(std::fabs(g_ - want) <= 1e-4)) {
                        FAIL_CHECK("seq " << seq[t] << " pos " << p << " head " << h << " dim " << i << ": got " << g_
                                          << ", dense masked attention gives " << want);
                        return;
                    }
                }
            }
        }
        n_queries += T;
        len[0] += take[0];
        len[1] += take[1];
    }
    CHECK(n_queries == 2 * n_pos - 5);
}

}  // namespace

TEST_CASE("ring: attention over a wrapped cache equals dense attention with an explicit mask", "[kv][ring]") {
    const std::string bk = GENERATE(from_range(test::all_backend_names()));
    for (RingCase c : {RingCase{5, 3, 8, DType::F32}, RingCase{4, 1, 5, DType::F32}, RingCase{6, 4, 10, DType::Q8_0},
                       RingCase{3, 2, 5, DType::Q4_0}, RingCase{5, 3, 20, DType::F16}, RingCase{0, 3, 40, DType::F32},
                       RingCase{0, 4, 33, DType::Q8_0}})
        check_ring_rule(bk, c);
}
