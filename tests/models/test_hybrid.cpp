// Hybrid recurrent models (Qwen3.5, arch qwen35): golden logits against transformers, and the
// contract of SEMANTICS.md section 2 (no bleed between sequences batched together, slot reuse,
// batch invariance, sequence edits) on every backend. The tiny model and its golden logits come
// from tools/oracle/qwen3_hybrid_tiny.py (random weights, head_k_dim 16 != head_v_dim 24, 4 value
// heads over 2 key heads stored tiled, log-decay of -30 x softplus(..) in half the heads).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/gguf/gguf.h"
#include "core/ir/ops.h"
#include "core/quant/quant.h"
#include "core/runtime/session.h"
#include "tests/support/golden.h"
#include "tests/ops/op_cases.h"
#include "tests/support/logits_util.h"
#include "tests/support/test_util.h"
#include "core/models/registry.h"

using namespace ls;

namespace {

std::string tiny_path() { return test::test_data("qwen35_tiny.gguf"); }  // the contract tests run on qwen35

SessionParams params(int32_t n_seq, int64_t n_ubatch = 512) {
    SessionParams p;
    p.n_ctx = 512;
    p.n_batch = 4096;
    p.n_ubatch = n_ubatch;
    p.n_seq = n_seq;
    p.type_k = p.type_v = DType::F32;
    return p;
}

int32_t argmax(const float* l, int64_t n) { return int32_t(std::max_element(l, l + n) - l); }

// Prompts of different lengths, one per sequence, evaluated together in one batch (sequences
// interleaved token by token where they overlap, so that ubatches mix them), then `steps`
// greedy steps with one token of every sequence per batch. Returns per sequence every logit row.
std::vector<std::vector<float>> decode_together(Session& s, const std::vector<std::vector<int32_t>>& prompts, int steps) {
    const int64_t V = s.n_vocab();
    const size_t N = prompts.size();
    std::vector<std::vector<float>> out(N);
    Batch b;
    size_t longest = 0;
    for (auto& p : prompts) longest = std::max(longest, p.size());
    for (size_t i = 0; i < longest; ++i)
        for (size_t q = 0; q < N; ++q)
            if (i < prompts[q].size()) b.add(prompts[q][i], int32_t(q), int32_t(i), true);
    std::vector<float> l = s.decode(b);
    std::vector<int32_t> last(N);
    for (size_t r = 0; r < b.size(); ++r) {
        const size_t q = size_t(b.seq[r]);
        out[q].insert(out[q].end(), l.begin() + int64_t(r) * V, l.begin() + int64_t(r + 1) * V);
        last[q] = argmax(l.data() + r * size_t(V), V);
    }
    for (int st = 0; st < steps; ++st) {
        b.clear();
        for (size_t q = 0; q < N; ++q) b.add(last[q], int32_t(q), int32_t(prompts[q].size()) + st, true);
        l = s.decode(b);
        for (size_t q = 0; q < N; ++q) {
            out[q].insert(out[q].end(), l.begin() + int64_t(q) * V, l.begin() + int64_t(q + 1) * V);
            last[q] = argmax(l.data() + q * size_t(V), V);
        }
    }
    return out;
}

}  // namespace

// qwen35: value heads tiled, ssm_beta/ssm_alpha; qwen3next: value heads grouped, ssm_ba;
// qwen35moe: qwen35 with a mixture-of-experts FFN (8 experts, 3 per token, a shared expert);
// qwen3nextmoe: a qwen3next file with that FFN (the published Qwen3-Next layout).
TEST_CASE("qwen35, qwen35moe, qwen3next, qwen3next MoE: tiny model logits match transformers for a 100-token prompt",
          "[hybrid][golden]") {
  for (const std::string arch : {"qwen35", "qwen35moe", "qwen3next", "qwen3nextmoe"}) {
    const test::Golden gold = test::read_golden(arch + "_tiny");
    test::SameBitsAsFirst same(gold.n_vocab);  // every backend: the reference's bits
    for (const std::string& name : test::all_backend_names()) {
        INFO(arch << " on backend " << name);
        auto be = test::make_backend(name);
        auto m = load_model(test::test_data(arch + "_tiny.gguf"), *be);
        REQUIRE(m->hparams().n_vocab == gold.n_vocab);
        Session s(*m, *be, params(1));
        const std::vector<float> l = s.eval(gold.tokens, 0);
        same.check(l);
        const test::GoldenDiff d = test::compare_golden(l, gold);
        // transformers runs its chunked delta rule in float32 torch (its own recurrent form
        // differs from it by 3e-5 on these logits, |logit| <= 4); lockstep sums dot products in
        // double and uses its own exp: differences of a few float ulps per op, over 4 layers.
        INFO("largest |logit - transformers| = " << d.worst);
        // Measured: 3.0e-5 (qwen35) and 2.8e-5 (qwen3next) on reference and CPU, the same as
        // transformers' own chunked vs recurrent difference.
        CHECK(d.worst <= 2e-4);
        CHECK(d.flipped == 0);  // the goldens' smallest top-1 margins: 7.9e-3 and 5.2e-4
    }
  }
}

TEST_CASE("qwen35: N sequences decoded together equal each decoded alone (no bleed)", "[hybrid][seq]") {
    for (const std::string& name : test::all_backend_names()) {
        auto be = test::make_backend(name);
        auto m = load_model(tiny_path(), *be);
        const int steps = name == "reference" ? 16 : 64;  // the reference backend is slow on purpose
        std::vector<std::vector<int32_t>> prompts;
        for (int q = 0; q < 6; ++q) prompts.push_back(test::random_tokens(size_t(5 + 7 * q), 100u + uint32_t(q), 256));
        std::vector<std::vector<float>> alone;
        for (int q = 0; q < 6; ++q) {
            Session s(*m, *be, params(1));
            alone.push_back(decode_together(s, {prompts[size_t(q)]}, steps)[0]);
        }
        for (int N : {1, 2, 3, 4, 6}) {
            INFO("backend " << name << ", " << N << " sequences");
            Session s(*m, *be, params(N, 16));  // ubatches of 16: prompts split and mixed
            auto together = decode_together(s, {prompts.begin(), prompts.begin() + N}, steps);
            for (int q = 0; q < N; ++q) {
                INFO("sequence " << q);
                CHECK(test::first_difference(together[size_t(q)], alone[size_t(q)], 256) == "");
            }
        }
    }
}

// The expert choice is per token: tokens batched together (other sequences, other positions
// of a prompt) must not change which experts a token gets or what they compute.
TEST_CASE("qwen35moe: sequences decoded together, and prompts in ubatches, equal token-at-a-time alone", "[hybrid][seq]") {
    for (const std::string& name : test::all_backend_names()) {
        auto be = test::make_backend(name);
        auto m = load_model(test::test_data("qwen35moe_tiny.gguf"), *be);
        const int steps = name == "reference" ? 8 : 24;
        std::vector<std::vector<int32_t>> prompts;
        for (int q = 0; q < 4; ++q) prompts.push_back(test::random_tokens(size_t(6 + 9 * q), 300u + uint32_t(q), 256));
        std::vector<std::vector<float>> alone;
        for (int q = 0; q < 4; ++q) {
            Session s(*m, *be, params(1));
            alone.push_back(decode_together(s, {prompts[size_t(q)]}, steps)[0]);
        }
        for (int N : {2, 4}) {
            INFO("backend " << name << ", " << N << " sequences");
            Session s(*m, *be, params(N, 16));
            auto together = decode_together(s, {prompts.begin(), prompts.begin() + N}, steps);
            for (int q = 0; q < N; ++q) CHECK(test::first_difference(together[size_t(q)], alone[size_t(q)], 256) == "");
        }
        INFO("backend " << name << ", a 90-token prompt in ubatches of 32 vs one token per ubatch");
        const auto prompt = test::random_tokens(90, 77, 256);
        Session chunked(*m, *be, params(1, 32));
        Session single(*m, *be, params(1, 32));
        CHECK(test::first_difference(chunked.eval(prompt, 0), test::one_by_one(single, prompt), 256) == "");
    }
}

TEST_CASE("qwen35: a slot reused at position 0 sees nothing of the sequence it held", "[hybrid][seq]") {
    for (const std::string& name : test::all_backend_names()) {
        INFO("backend " << name);
        auto be = test::make_backend(name);
        auto m = load_model(tiny_path(), *be);
        const auto a = test::random_tokens(40, 7, 256), b = test::random_tokens(30, 8, 256);
        Session fresh(*m, *be, params(2));
        const std::vector<float> want = fresh.eval(b, 0, 1);
        Session s(*m, *be, params(2));
        s.eval(a, 0, 1);
        REQUIRE(s.seq_rm(1, 0));  // dropping everything is always possible
        CHECK(test::first_difference(s.eval(b, 0, 1), want, 256) == "");
        s.eval(a, 0, 0);
        s.seq_keep(1);  // slot 0 emptied; its old state is still in memory
        CHECK(test::first_difference(s.eval(b, 0, 0), want, 256) == "");
    }
}

TEST_CASE("qwen35, lfm2, nemotron_h and granitehybrid: batch invariance: 4 sequences per ubatch vs 1, token at a time vs ubatches of 128", "[hybrid][seq]") {
    // (lfm2: short convolutions as its recurrent state, beside attention layers; nemotron_h:
    // Mamba-2's convolution and scan state, beside attention and MLP layers)
    const std::string file = GENERATE(as<std::string>(), "qwen35_tiny.gguf", "lfm2_tiny.gguf", "nemotron_h_tiny.gguf", "granitehybrid_tiny.gguf");
    for (const std::string& name : test::all_backend_names()) {
        INFO("backend " << name << ", " << file);
        auto be = test::make_backend(name);
        auto m = load_model(test::test_data(file), *be);
        const auto text = test::random_tokens(4 * 64, 21, 256);
        // The text cut into 4 sequences of 64 tokens: all four in each ubatch, or one sequence
        // per ubatch. Every logit bit-identical (every op computes a token the same way in any
        // batch); a sum of NLLs could hide differences that cancel or miss the other tokens.
        std::vector<std::vector<int32_t>> parts;
        for (int q = 0; q < 4; ++q) parts.emplace_back(text.begin() + q * 64, text.begin() + (q + 1) * 64);
        Session together(*m, *be, params(4, 256));
        const auto four = decode_together(together, parts, 0);
        for (int q = 0; q < 4; ++q) {
            INFO("sequence " << q << ": four per ubatch vs alone");
            Session s(*m, *be, params(1, 256));
            CHECK_BIT_IDENTICAL(four[size_t(q)], s.eval(parts[size_t(q)], 0), 256);
        }
        // Strong-decay heads: a 200-token prompt in ubatches of 128 (runs of 128 and 72) vs
        // one token per ubatch.
        const auto prompt = test::head(text, 200);
        Session chunked(*m, *be, params(1, 128));
        Session single(*m, *be, params(1, 128));
        CHECK(test::first_difference(chunked.eval(prompt, 0), test::one_by_one(single, prompt), 256) == "");
    }
}

TEST_CASE("qwen35, lfm2, nemotron_h and granitehybrid: sequence edits on recurrent state: seq_rm only whole, seq_cp copies the state", "[hybrid][seq]") {
    const std::string file = GENERATE(as<std::string>(), "qwen35_tiny.gguf", "lfm2_tiny.gguf", "nemotron_h_tiny.gguf", "granitehybrid_tiny.gguf");
    for (const std::string& name : test::all_backend_names()) {
        INFO("backend " << name << ", " << file);
        auto be = test::make_backend(name);
        auto m = load_model(test::test_data(file), *be);
        const auto a = test::random_tokens(30, 3, 256), more = test::random_tokens(10, 4, 256);
        Session s(*m, *be, params(3));
        s.eval(a, 0, 0);
        CHECK_FALSE(s.seq_rm(0, 10));  // the state cannot forget its last 20 tokens
        CHECK(s.seq_len(0) == 30);
        CHECK(s.seq_rm(0, 30));        // removes nothing
        CHECK_FALSE(s.seq_cp(0, 1, 12));
        REQUIRE(s.seq_cp(0, 1));
        CHECK(s.seq_len(1) == 30);
        const auto l1 = s.eval(more, 0, 1);
        const auto l0 = s.eval(more, 0, 0);
        CHECK(test::first_difference(l1, l0, 256) == "");
        Session fresh(*m, *be, params(1));
        CHECK(test::first_difference(fresh.eval(test::concat(a, more), 30), l0, 256) == "");
        // A prompt that extends what a sequence holds keeps it; one that diverges starts over.
        CHECK(s.reuse_prefix(0, test::concat(test::concat(a, more), {5})) == 40);
        CHECK(s.reuse_prefix(0, test::concat(test::head(a, 5), {1, 2})) == 0);
        CHECK(s.seq_len(0) == 0);
    }
}

TEST_CASE("qwen35, lfm2, nemotron_h and granitehybrid: a state checkpoint lets a chat turn resume from the previous prompt", "[hybrid][seq]") {
    const std::string file = GENERATE(as<std::string>(), "qwen35_tiny.gguf", "lfm2_tiny.gguf", "nemotron_h_tiny.gguf", "granitehybrid_tiny.gguf");
    for (const std::string& name : test::all_backend_names()) {
        INFO("backend " << name << ", " << file);
        auto be = test::make_backend(name);
        auto m = load_model(test::test_data(file), *be);
        const auto prompt = test::random_tokens(30, 5, 256), reply = test::random_tokens(8, 6, 256),
                   other = test::random_tokens(8, 7, 256), next = test::random_tokens(12, 8, 256);
        auto fresh = [&](const std::vector<int32_t>& t, int64_t from) {
            Session f(*m, *be, params(1));
            return f.eval(t, from);
        };
        Session s(*m, *be, params(2));
        s.eval(prompt, -1, 0);
        REQUIRE(s.checkpoint(0));
        CHECK(s.checkpoint_pos(0) == 30);
        s.eval(reply, -1, 0);
        // Only the checkpoint's point can be returned to (and 0, and the end).
        CHECK_FALSE(s.seq_rm(0, 31));
        CHECK_FALSE(s.seq_rm(0, 29));
        CHECK(s.seq_len(0) == 38);
        // The next turn's transcript: the prompt, a reply that re-tokenized differently, more.
        const auto transcript = test::concat(test::concat(prompt, other), next);
        CHECK(s.reuse_prefix(0, transcript) == 30);
        CHECK(s.seq_len(0) == 30);
        const auto got = s.eval({transcript.begin() + 30, transcript.end()}, 0, 0);
        CHECK(test::first_difference(got, fresh(transcript, 30), 256) == "");
        // The checkpoint stays at 30: the same point can be returned to again.
        REQUIRE(s.seq_rm(0, 30));
        CHECK(test::first_difference(s.eval(reply, 0, 0), fresh(test::concat(prompt, reply), 30), 256) == "");
        // Dropping below it, copying over it or keeping another sequence forgets it.
        REQUIRE(s.seq_cp(0, 1));
        CHECK(s.checkpoint_pos(1) == -1);
        REQUIRE(s.seq_rm(0, 0));
        CHECK(s.checkpoint_pos(0) == -1);
        s.eval(prompt, -1, 0);
        CHECK_FALSE(s.seq_rm(0, 10));
    }
    // Attention-only models need no checkpoint: any point in the ring can be returned to.
    auto be = test::make_backend("reference");
    auto g4 = load_model(test::test_data("gemma4_tiny.gguf"), *be);
    Session s(*g4, *be, params(1));
    CHECK_FALSE(s.checkpoint(0));
}

TEST_CASE("qwen35: a prompt evaluated beside another sequence's decode steps equals each alone", "[hybrid][seq]") {
    for (const std::string& name : test::all_backend_names()) {
        INFO("backend " << name);
        auto be = test::make_backend(name);
        auto m = load_model(tiny_path(), *be);
        const auto a = test::random_tokens(20, 11, 256), b = test::random_tokens(25, 12, 256);
        Session alone_a(*m, *be, params(1)), alone_b(*m, *be, params(1));
        const auto want_a = alone_a.eval(a, 0);
        const auto want_b = alone_b.eval(b, 0);
        Session s(*m, *be, params(2, 8));
        s.eval(test::head(a, 10), 0, 0);
        // One batch: sequence 0's last 10 tokens, one by one, interleaved with sequence 1's
        // whole 25-token prompt; ubatches of 8 mix a decode with a prompt chunk.
        Batch bt;
        for (int i = 0; i < 25; ++i) {
            if (i < 10) bt.add(a[size_t(10 + i)], 0, 10 + i, true);
            bt.add(b[size_t(i)], 1, i, true);
        }
        const auto got = s.decode(bt);
        std::vector<float> got_a, got_b;
        for (size_t r = 0; r < bt.size(); ++r)
            (bt.seq[r] == 0 ? got_a : got_b).insert((bt.seq[r] == 0 ? got_a : got_b).end(), got.begin() + int64_t(r) * 256,
                                                    got.begin() + int64_t(r + 1) * 256);
        CHECK(test::first_difference(got_a, std::vector<float>(want_a.begin() + 10 * 256, want_a.end()), 256) == "");
        CHECK(test::first_difference(got_b, want_b, 256) == "");
    }
}

TEST_CASE("recurrent ops refuse a bad run table before touching any state", "[hybrid][ops]") {
    for (const std::string& name : test::all_backend_names()) {
        auto be = test::make_backend(name);
        // (slot, first, n, reset) tables over 3 tokens and 2 slots, each wrong in one way.
        const std::vector<std::pair<std::vector<int32_t>, std::string>> bad = {
            {{2, 0, 3, 0}, "slot 2 outside"},
            {{0, 0, 2, 0, 0, 2, 1, 0}, "slot 0 appears in two runs"},
            {{0, 0, 2, 0}, "cover 2 of 3"},
            {{0, 1, 2, 0}, "does not continue"},
        };
        for (const auto& [runs, msg] : bad) {
            INFO(name << ": " << msg);
            Graph g;
            test::Keep keep;
            std::mt19937 rng(3);
            const std::vector<float> init = test::randn(rng, 3 * 8 * 2);
            Tensor* st = keep.persistent(*be, DType::F32, {3 * 8, 2}, test::as_bytes(init));
            Tensor* w = keep.persistent(*be, DType::F32, {4, 8}, test::as_bytes(test::randn(rng, 32)));
            const std::vector<float> x = test::randn(rng, 24);
            const std::vector<int32_t> order = {0, 1, 2};
            Tensor* y = ops::conv1d_scan(g, g.input(DType::F32, {8, 3}, x.data(), "x"), w, st,
                                         g.input(DType::I32, {4, int64_t(runs.size() / 4)}, runs.data(), "runs"),
                                         g.input(DType::I32, {3}, order.data(), "order"));
            g.mark_output(y);
            if (!test::runs_all(*be, g)) break;
            std::unique_ptr<Buffer> scratch;
            REQUIRE_THROWS_WITH(run_graph(*be, g, scratch), Catch::Contains(msg));
            std::vector<float> after(init.size());
            read_tensor(*be, *st, after.data());
            CHECK(after == init);
        }
    }
}

TEST_CASE("qwen35: a conv kernel stored as f16 loads and equals its f32 values rounded to f16", "[hybrid][golden]") {
    // Some converters store ssm_conv1d as f16; the model dequantizes it per graph. Rewrite the
    // tiny model with f16 conv kernels, then compare with the f32 model whose kernels are
    // rounded to the same f16 values: bit-identical logits.
    auto src = GgufFile::open(tiny_path());
    auto rewrite = [&](bool as_f16, const std::string& out) {
        GgufWriter w;
        for (const auto& [key, v] : src->metadata()) {
            switch (v.type) {
                case GgufType::STRING: w.set_string(key, std::get<std::string>(v.scalar)); break;
                case GgufType::U32: w.set_u32(key, uint32_t(std::get<uint64_t>(v.scalar))); break;
                case GgufType::F32: w.set_f32(key, float(std::get<double>(v.scalar))); break;
                case GgufType::ARRAY: {
                    std::vector<int32_t> a;
                    for (int64_t x : v.ints) a.push_back(int32_t(x));
                    for (uint64_t x : v.uints) a.push_back(int32_t(x));
                    w.set_i32_array(key, a);
                    break;
                }
                default: FAIL("unexpected metadata type for " << key);
            }
        }
        for (const GgufTensorInfo& t : src->tensors()) {
            std::vector<int64_t> ne(t.ne, t.ne + std::max(t.n_dims, 1));
            std::vector<uint8_t> bytes(t.data, t.data + t.nbytes);
            if (t.name.find("ssm_conv1d") != std::string::npos) {
                const int64_t n = int64_t(t.nbytes / 4);
                std::vector<uint16_t> h(static_cast<size_t>(n));
                const float* f = reinterpret_cast<const float*>(t.data);
                for (int64_t i = 0; i < n; ++i) h[size_t(i)] = fp32_to_fp16(f[i]);
                if (as_f16) {
                    w.add_tensor(t.name, DType::F16, ne, test::as_bytes(h));
                    continue;
                }
                std::vector<float> back(static_cast<size_t>(n));
                dequantize_row(DType::F16, h.data(), back.data(), n);
                bytes = test::as_bytes(back);
            }
            w.add_tensor(t.name, t.type, ne, bytes);
        }
        w.write(out);
    };
    const std::string p16 = test::temp_path("qwen35_conv_f16.gguf");
    const std::string p32 = test::temp_path("qwen35_conv_f32r.gguf");
    rewrite(true, p16);
    rewrite(false, p32);
    const auto prompt = test::random_tokens(40, 31, 256);
    for (const std::string& name : test::all_backend_names()) {
        INFO("backend " << name);
        auto be = test::make_backend(name);
        auto m16 = load_model(p16, *be);
        auto m32 = load_model(p32, *be);
        Session s16(*m16, *be, params(1)), s32(*m32, *be, params(1));
        CHECK(test::first_difference(s16.eval(prompt, 0), s32.eval(prompt, 0), 256) == "");
    }
    std::filesystem::remove(p16);
    std::filesystem::remove(p32);
}
