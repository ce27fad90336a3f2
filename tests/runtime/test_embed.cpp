// Embeddings (core/runtime/embed.h): the final normalized hidden states that Session returns
// with DecodeOutput::Hidden, pooled and normalized. Against a float64 numpy oracle over the
// same GGUF tensors (tools/oracle/embed_numpy.py → tests/data/embed_tiny.oracle) on the tiny
// qwen3 (last-token and mean pooling) and llama (mean, CLS, last) models; bit for bit the
// same on every backend, every ubatch size, and beside other sequences in a batch.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/models/registry.h"
#include "core/quant/quant.h"
#include "core/runtime/embed.h"
#include "core/runtime/session.h"
#include "tests/runtime/embed_oracle.h"
#include "tests/support/kv_contract.h"
#include "tests/support/test_util.h"

using namespace ls;
using namespace ls::test;

namespace {

std::vector<OracleCase> read_oracle() {
    std::ifstream f(test_data("embed_tiny.oracle"));
    REQUIRE(f);
    std::vector<OracleCase> cases;
    std::string line;
    while (std::getline(f, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream h(line);
        std::string word;
        h >> word;
        REQUIRE(word == "case");
        cases.push_back(read_oracle_case(h, f));
    }
    return cases;
}

}  // namespace

TEST_CASE("embed: tiny qwen3 and llama embeddings match the float64 oracle, the same bits on every backend and ubatch", "[embed][families]") {
    const std::vector<OracleCase> cases = read_oracle();
    REQUIRE(cases.size() >= 16);
    double worst = 1.0;
    for (const std::string kind : {"qwen3", "llama"}) {
        OracleTally tally;  // per case, the reference backend's vector
        for (const std::string& bk : all_backend_names()) {
            LoadedModel l = load_tiny(bk, kind);
            REQUIRE(model_pooling(*l.model) == Pooling::None);  // the files set no pooling_type
            // (ubatch 5 only where the device is not emulated on the CPU: lavapipe takes minutes.)
            for (int64_t ub : {int64_t(512), int64_t(16), int64_t(5)}) {
                if (ub == 5 && cpu_emulated_gpu(bk)) continue;
                auto s = new_session(l, 256, ub, DType::F16, 2);
                size_t k = 0;
                for (const OracleCase& c : cases) {
                    if (c.model != kind + "_tiny.gguf") continue;
                    INFO(kind << " " << pooling_name(c.pooling) << ", " << c.tokens.size() << " tokens, backend " << bk << ", ubatch " << ub);
                    // Slot 1, after something else was in it: the embedding starts over.
                    tally.check(embed(*s, 1, c.tokens, c.pooling), c.want, k++);
                }
                // The same inputs side by side in both slots (embed_many): the same bits.
                for (Pooling pl : {Pooling::Mean, Pooling::Cls, Pooling::Last}) {
                    std::vector<std::vector<int32_t>> inputs;
                    std::vector<size_t> ks;
                    size_t j = 0;
                    for (const OracleCase& c : cases) {
                        if (c.model != kind + "_tiny.gguf") continue;
                        if (c.pooling == pl) inputs.push_back(c.tokens), ks.push_back(j);
                        ++j;
                    }
                    if (inputs.empty()) continue;
                    INFO(kind << " " << pooling_name(pl) << " side by side, backend " << bk << ", ubatch " << ub);
                    const auto many = embed_many(*s, {0, 1}, inputs, pl);
                    for (size_t q = 0; q < many.size(); ++q) CHECK(same_bits(many[q], tally.first[ks[q]]));
                }
            }
        }
        worst = std::min(worst, tally.worst);
    }
    WARN("worst cosine against the oracle: 1 - " << (1.0 - worst));
}

TEST_CASE("embed: a sequence's hidden states are the same bits beside other sequences in the batch", "[embed][families]") {
    for (const std::string& bk : all_backend_names()) {
        LoadedModel l = load_tiny(bk, "qwen3");
        const int64_t E = l.model->hparams().n_embd;
        const std::vector<int32_t> text = random_tokens(37, 11, l.n_vocab()), other = random_tokens(50, 12, l.n_vocab());
        auto alone = new_session(l, 128, 16, DType::F16, 3);
        Batch a;
        for (size_t i = 0; i < text.size(); ++i) a.add(text[i], 0, int32_t(i), true);
        const std::vector<float> want = alone->decode(a, DecodeOutput::Hidden);
        REQUIRE(want.size() == text.size() * size_t(E));
        // Interleaved with two other sequences (one flagged for states too), in ubatches of 16.
        auto mixed = new_session(l, 128, 16, DType::F16, 3);
        Batch b;
        for (size_t i = 0; i < other.size(); ++i) {
            if (i < text.size()) b.add(text[i], 2, int32_t(i), true);
            b.add(other[i], 0, int32_t(i), i % 3 == 0);
            if (i < 20) b.add(other[i], 1, int32_t(i), false);
        }
        const std::vector<float> h = mixed->decode(b, DecodeOutput::Hidden);
        std::vector<float> got;
        for (size_t j = 0, row = 0; j < b.size(); ++j) {
            if (!b.logits[j]) continue;
            if (b.seq[j] == 2) got.insert(got.end(), h.begin() + int64_t(row * E), h.begin() + int64_t((row + 1) * E));
            ++row;
        }
        INFO("backend " << bk);
        CHECK(same_bits(got, want));
        // And logits still come out of the same session afterwards.
        CHECK(mixed->eval({text[0]}, -1, 2).size() == size_t(l.n_vocab()));
    }
}

TEST_CASE("embed: pooling names, the GGUF key, normalization and refusals", "[embed]") {
    CHECK(parse_pooling("mean") == Pooling::Mean);
    CHECK(parse_pooling("cls") == Pooling::Cls);
    CHECK(parse_pooling("last") == Pooling::Last);
    CHECK(parse_pooling("3") == Pooling::Last);
    CHECK_THROWS_AS(parse_pooling("max"), std::invalid_argument);

    std::vector<float> v{3, -4, 0};
    auto n = [&](int norm) {
        std::vector<float> x = v;
        embd_normalize(x, norm);
        return x;
    };
    CHECK(n(-1) == v);
    CHECK(n(2) == std::vector<float>{0.6f, -0.8f, 0.0f});
    CHECK(n(1)[0] == Approx(3.0 / 7));
    CHECK(n(1)[1] == Approx(-4.0 / 7));
    CHECK(n(0)[1] == Approx(-32760.0f));
    CHECK(n(3)[0] == Approx(3.0 / std::cbrt(91.0)));
    std::vector<float> zero(4, 0.0f);
    embd_normalize(zero, 2);
    CHECK(zero == std::vector<float>(4, 0.0f));
    CHECK_THROWS_AS(embd_normalize(v, -2), std::invalid_argument);
    CHECK(embd_truncate({3, 4, 12}, 2, 2) == std::vector<float>{0.6f, 0.8f});
    CHECK_THROWS_AS(embd_truncate({3, 4, 12}, 4, 2), std::invalid_argument);
    CHECK_THROWS_AS(embd_truncate({3, 4, 12}, 0, 2), std::invalid_argument);

    LoadedModel l = load_tiny("cpu", "llama");
    auto s = new_session(l, 16, 8, DType::F16);
    CHECK_THROWS_AS(embed(*s, 0, {1, 2}, Pooling::None), std::invalid_argument);
    CHECK_THROWS_AS(embed(*s, 0, {1, 2}, Pooling::Rank), std::invalid_argument);
    CHECK_THROWS_AS(embed(*s, 0, {}, Pooling::Mean), std::length_error);
    CHECK_THROWS_AS(embed(*s, 0, std::vector<int32_t>(17, 1), Pooling::Mean), std::length_error);
    CHECK_THROWS_AS(embed(*s, 0, {1, l.n_vocab()}, Pooling::Mean), std::out_of_range);
    CHECK(embed(*s, 0, std::vector<int32_t>(16, 1), Pooling::Mean).size() == size_t(l.model->hparams().n_embd));
}

TEST_CASE("embed: every family's hidden states are what its output matrix multiplies", "[embed]") {
    // Each tiny family: the hidden states of 20 tokens (DecodeOutput::Hidden) times the output
    // matrix (dequantized, on the host in double), soft-capped where the family caps, against
    // the logits the same session gives. The two differ only by lockstep's float32 product.
    for (const std::string kind : {"llama", "qwen3", "qwen3moe", "gemma2", "gptoss", "gemma4", "gemma4moe", "qwen3next", "qwen3nextmoe",
                                   "qwen35", "qwen35moe"}) {
        INFO(kind);
        LoadedModel l = load_tiny("cpu", kind);
        const GgufFile& f = l.model->gguf();
        const int64_t E = l.model->hparams().n_embd, V = l.n_vocab();
        const GgufTensorInfo* w = f.find_tensor("output.weight");
        if (!w) w = f.find_tensor("token_embd.weight");
        REQUIRE(w);
        REQUIRE((w->ne[0] == E && w->ne[1] == V));
        std::vector<float> W(size_t(E * V));
        const size_t row_bytes = w->nbytes / size_t(V);
        for (int64_t r = 0; r < V; ++r) dequantize_row(w->type, w->data + size_t(r) * row_bytes, W.data() + r * E, E);
        const std::string arch = l.model->hparams().arch;
        const bool capped = arch == "gemma2" || arch == "gemma4";  // (Gemma 3 has no final soft cap)
        const double cap = capped ? f.get_float(arch + ".final_logit_softcapping", 30.0) : 0.0;
        const std::vector<int32_t> toks = random_tokens(20, 7, l.n_vocab());
        Batch b;
        for (size_t i = 0; i < toks.size(); ++i) b.add(toks[i], 0, int32_t(i), true);
        const std::vector<float> h = new_session(l, 64, 8, DType::F16)->decode(b, DecodeOutput::Hidden);
        const std::vector<float> logits = new_session(l, 64, 8, DType::F16)->decode(b, DecodeOutput::Logits);
        REQUIRE(h.size() == toks.size() * size_t(E));
        REQUIRE(logits.size() == toks.size() * size_t(V));
        double worst = 0, top = 0;
        for (size_t t = 0; t < toks.size(); ++t)
            for (int64_t v = 0; v < V; ++v) {
                double x = 0;
                for (int64_t e = 0; e < E; ++e) x += double(h[t * size_t(E) + size_t(e)]) * W[size_t(v * E + e)];
                if (cap > 0) x = cap * std::tanh(x / cap);
                worst = worst_of(worst, std::fabs(x - logits[t * size_t(V) + size_t(v)]));
                top = std::max(top, std::fabs(x));
            }
        INFO("largest |h W - logits| = " << worst << ", largest |logit| " << top);
        // lockstep's float32 products of length n_embd (64) against double.
        CHECK(worst <= 1e-4 * std::max(1.0, top));
    }
}
