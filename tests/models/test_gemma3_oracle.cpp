// The default model against an independent oracle: tools/oracle/gemma3_numpy.py, a numpy
// forward pass over the same GGUF (weights dequantized by the `gguf` package, all math in
// float32, no activation quantization), whose logits for a 600-token prompt - past the
// 512-token window - are stored in tests/data/gemma3_oracle.bin (format in gemma3_oracle.md).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <ostream>

#include "core/runtime/session.h"
#include "tests/support/logits_util.h"
#include "tests/support/test_util.h"
#include "core/ref/ref_backend.h"
#include "core/models/registry.h"

using namespace ls;

namespace {

struct Golden {
    uint32_t T = 0, K = 0, n_vocab = 0;
    std::vector<int32_t> tokens;
    struct Rec {
        uint32_t argmax;
        float lse, next_logit;
        std::vector<uint32_t> top_ids;
        std::vector<float> top_logits;
    };
    std::vector<Rec> recs;
};

Golden read_golden(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    REQUIRE(f.good());
    auto u32 = [&] { uint32_t v; f.read(reinterpret_cast<char*>(&v), 4); return v; };
    auto f32 = [&] { float v; f.read(reinterpret_cast<char*>(&v), 4); return v; };
    char magic[8];
    f.read(magic, 8);
    REQUIRE(std::memcmp(magic, "LSGOLD01", 8) == 0);
    REQUIRE(u32() == 1);
    Golden g;
    g.T = u32();
    g.K = u32();
    g.n_vocab = u32();
    for (uint32_t i = 0; i < g.T; ++i) g.tokens.push_back(int32_t(u32()));
    for (uint32_t p = 0; p < g.T; ++p) {
        Golden::Rec r;
        r.argmax = u32();
        r.lse = f32();
        r.next_logit = f32();
        for (uint32_t k = 0; k < g.K; ++k) r.top_ids.push_back(u32());
        for (uint32_t k = 0; k < g.K; ++k) r.top_logits.push_back(f32());
        g.recs.push_back(std::move(r));
    }
    REQUIRE(f.good());
    return g;
}

struct Agreement {
    double max_top_diff = 0, mean_top_diff = 0, max_lp_diff = 0, ppl = 0, ppl_gold = 0;
    int argmax_mismatch = 0;     // anywhere
    double worst_gap_flipped = 0;  // the oracle's largest top-2 gap among flipped argmaxes
};

std::ostream& operator<<(std::ostream& o, const Agreement& a) {
    return o << "top-32 logits max |diff| " << a.max_top_diff << " mean " << a.mean_top_diff << "; max |log-prob diff| "
             << a.max_lp_diff << "; argmax flips " << a.argmax_mismatch << " (largest oracle gap flipped "
             << a.worst_gap_flipped << "); PPL " << a.ppl << " vs " << a.ppl_gold;
}

// Compares logits [T x V] with a golden file: top-32 logits, log-probs of the text's next
// tokens, argmax, perplexity.
Agreement compare(const Golden& gold, const std::vector<float>& logits, int64_t V) {
    Agreement a;
    double sum_nll = 0, sum_nll_gold = 0;
    for (uint32_t p = 0; p < gold.T; ++p) {
        const float* l = logits.data() + size_t(p) * V;
        const auto& r = gold.recs[p];
        int64_t am = 0;
        for (int64_t v = 1; v < V; ++v)
            if (l[v] > l[am]) am = v;
        double sum = 0;
        for (int64_t v = 0; v < V; ++v) sum += std::exp(double(l[v]) - l[am]);
        const double lse = std::log(sum) + l[am];
        for (uint32_t k = 0; k < gold.K; ++k) {
            const double d = std::fabs(double(l[r.top_ids[k]]) - r.top_logits[k]);
            a.max_top_diff = test::worst_of(a.max_top_diff, d);
            a.mean_top_diff += d / (double(gold.T) * gold.K);
        }
        if (uint32_t(am) != r.argmax) {
            ++a.argmax_mismatch;
            a.worst_gap_flipped = std::max(a.worst_gap_flipped, double(r.top_logits[0] - r.top_logits[1]));
        }
        if (p + 1 < gold.T) {
            const double lp = l[gold.tokens[p + 1]] - lse, lp_gold = double(r.next_logit) - r.lse;
            a.max_lp_diff = test::worst_of(a.max_lp_diff, std::fabs(lp - lp_gold));
            sum_nll -= lp;
            sum_nll_gold -= lp_gold;
        }
    }
    a.ppl = std::exp(sum_nll / (gold.T - 1));
    a.ppl_gold = std::exp(sum_nll_gold / (gold.T - 1));
    return a;
}

std::vector<float> run_default_model(Backend& be, const std::vector<int32_t>& tokens) {
    auto model = load_model(test::default_model_path(), be);
    SessionParams sp;
    sp.n_ctx = 1024;
    sp.n_ubatch = 256;  // three ubatches: the 512 window is crossed inside one, ring rows wrap
    Session s(*model, be, sp);
    return s.eval(tokens, 0);
}

}  // namespace

TEST_CASE("Gemma 3 270M agrees with the float32 numpy oracle over 600 tokens", "[model][oracle]") {
    const Golden gold = read_golden(test::test_data("gemma3_oracle.bin"));
    const Golden q8act = read_golden(test::test_data("gemma3_oracle_q8act.bin"));
    REQUIRE(q8act.tokens == gold.tokens);
    for (auto& be : test::backends_under_test()) {
        INFO("backend " << be->name());
        const std::vector<float> logits = run_default_model(*be, gold.tokens);
        const Agreement a = compare(gold, logits, gold.n_vocab);
        WARN(be->name() << " vs float32 oracle: " << a);
        // The oracle multiplies in float32; lockstep quantizes activations to Q8_0/Q8_K
        // before its integer dot products (as llama.cpp's CPU backend does). That is the whole
        // difference: with float32 activations (an experiment) the max |diff| was 0.018.
        // With Q8 activations the difference is chaotic rather than small: a last-bit change
        // moves a few activations across a rounding step (Gemma's outlier features make the
        // step large) and 18 layers amplify it. The oracle's own --act-quant mode, float32 vs
        // float64, differs by 2.0 with 23 flips (tests/data/gemma3_oracle.md). Three
        // ulp-level variants of lockstep's arithmetic measured: max 1.73-2.38, mean
        // 0.188-0.200, log-prob 0.51-1.21, flips 21-28 at oracle gaps <= 0.52, PPL off by
        // 0.12-0.48%; today's arithmetic: max 1.59, mean 0.190, log-prob 0.85, 21 flips at
        // gaps <= 0.38, PPL -0.14%. Bounds sit just above that spread. The exact checks are
        // per op (CPU == reference bit for bit, tests/ops/test_ops.cpp) and the semantic one
        // is here.
        CHECK(a.mean_top_diff < 0.25);
        CHECK(a.max_top_diff < 2.6);
        CHECK(a.max_lp_diff < 1.4);
        CHECK(a.worst_gap_flipped < 0.6);
        CHECK(a.argmax_mismatch <= 30);
        CHECK(std::fabs(a.ppl / a.ppl_gold - 1) < 0.005);

        // The same oracle with the engine's activation rounding (--act-quant: each matmul's
        // activation rows quantized to the weight's dot type, Q8_0 or Q8_K, and back), so the
        // one systematic difference above is gone and what remains is summation order, which
        // the quantized pass amplifies chaotically. Its size is the oracle's own: that file
        // against itself with only the matmul summation changed moves the top-32 logits by up
        // to 1.30, NLLs by 0.68, 32 argmaxes, PPL by 0.33% (gemma3_oracle.md). lockstep must
        // sit inside that spread (its float32 and float64 runs: 2.01, 0.83, 23 flips). Measured
        // on the CPU: max 2.08, mean 0.215, log-prob 0.61, 23 flips, PPL -0.26%. It is not
        // nearer to lockstep than the float32 file is (mean 0.19): the chaos, not the
        // activation rounding, sets the floor, so both files bound the same network.
        const Agreement q = compare(q8act, logits, q8act.n_vocab);
        WARN(be->name() << " vs q8-activation oracle: " << q);
        CHECK(q.mean_top_diff < 0.25);
        CHECK(q.max_top_diff < 2.6);
        CHECK(q.max_lp_diff < 1.0);
        CHECK(q.argmax_mismatch <= 32);
        CHECK(std::fabs(q.ppl / q.ppl_gold - 1) < 0.005);
    }
}

// The README's determinism claim on the real model, not only per op: the reference backend
// is the spec, and the CPU must give its logits byte for byte. 16 tokens in two ubatches of
// 8 (the second reads cache rows the first wrote); the reference is slow, so kept short.
TEST_CASE("Gemma 3 270M: logits on every backend equal the reference backend's bit for bit", "[model]") {
    const Golden gold = read_golden(test::test_data("gemma3_oracle.bin"));
    const std::vector<int32_t> prompt(gold.tokens.begin(), gold.tokens.begin() + 16);
    auto run = [&](Backend& be) {
        auto model = load_model(test::default_model_path(), be);
        SessionParams sp;
        sp.n_ctx = 64;
        sp.n_ubatch = 8;
        Session s(*model, be, sp);
        return s.eval(prompt, 0);
    };
    auto ref = make_reference_backend();
    const std::vector<float> want = run(*ref);
    REQUIRE(want.size() == prompt.size() * size_t(gold.n_vocab));
    for (auto& be : test::backends_under_test()) {
        INFO("backend " << be->name());
        REQUIRE_BIT_IDENTICAL(run(*be), want, gold.n_vocab);
    }
}
