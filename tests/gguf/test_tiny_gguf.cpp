// The tiny Gemma 3 generator: valid, deterministic files that load, tokenize and run.
#include <catch2/catch.hpp>

#include <cmath>

#include "core/gguf/gguf.h"
#include "core/runtime/session.h"
#include "core/text/tokenizer.h"
#include "tests/support/tiny_model.h"
#include "core/models/registry.h"

using namespace ls;

TEST_CASE("tiny gemma3: metadata, vocabulary and determinism", "[tiny]") {
    TinyGemma3Spec spec;
    const std::vector<uint8_t> bytes = make_tiny_gemma3(spec);
    CHECK(make_tiny_gemma3(spec) == bytes);
    TinyGemma3Spec other = spec;
    other.seed = 2;
    CHECK(make_tiny_gemma3(other) != bytes);

    auto f = GgufFile::from_memory(bytes.data(), bytes.size());
    CHECK(f->get_string("general.architecture") == "gemma3");
    CHECK(f->get_int("gemma3.block_count") == spec.n_layer);
    CHECK(f->get_int("gemma3.attention.sliding_window") == spec.window);
    CHECK(f->get_int("gemma3.context_length") == spec.ctx);
    REQUIRE(f->find_tensor("token_embd.weight"));
    CHECK(f->find_tensor("token_embd.weight")->type == spec.wtype);
    CHECK(f->find_tensor("blk.2.post_ffw_norm.weight")->type == DType::F32);

    Tokenizer tok = Tokenizer::from_gguf(*f);
    CHECK(tok.n_vocab() == spec.n_vocab);
    CHECK(tok.bos() == tiny_vocab::kBos);
    CHECK(tok.eos() == tiny_vocab::kEos);
    CHECK(tok.eot() == tiny_vocab::kEndOfTurn);
    CHECK(tok.token_text(tiny_vocab::kFirstByte + 0x41) == "<0x41>");
    // Word pieces, byte fallback for the rest, and a lossless round trip.
    for (const char* text : {"the cat is in the hat", "Zürich 42!", "<start_of_turn>user\nhi<end_of_turn>"}) {
        INFO(text);
        const std::vector<int32_t> ids = tok.encode(text, true, true);
        REQUIRE(ids.size() > 1);
        CHECK(ids[0] == tiny_vocab::kBos);
        for (int32_t id : ids) CHECK((id >= 0 && id < spec.n_vocab));
        CHECK(tok.decode({ids.begin() + 1, ids.end()}) == text);
    }
    const std::vector<int32_t> the = tok.encode("the", false, false);
    REQUIRE(the.size() == 1);
    CHECK(tok.token_text(the[0]) == "\xe2\x96\x81the");
}

TEST_CASE("tiny gemma3: bad specs are rejected with the field named", "[tiny]") {
    auto rejects = [](TinyGemma3Spec s, const char* what) {
        INFO(what);
        REQUIRE_THROWS_WITH(make_tiny_gemma3(s), Catch::Contains(what));
    };
    TinyGemma3Spec s;
    s.wtype = DType::Q4_K;  // 256-element blocks, n_embd 64
    rejects(s, "multiple of the q4_k block size 256");
    s = {};
    s.n_ff = 100;
    rejects(s, "n_ff = 100");
    s = {};
    s.n_vocab = 100;
    rejects(s, "n_vocab must be at least 262");
    s = {};
    s.n_head = 3;
    s.n_head_kv = 2;
    rejects(s, "multiple of n_head_kv");
    s = {};
    s.wtype = DType::Q8_K;
    rejects(s, "cannot be used for matmul weights");
    s = {};
    s.n_layer = 0;
    rejects(s, "n_layer must be positive");
}

TEST_CASE("tiny gemma3: K-quant and legacy-quant variants load and run on both backends", "[tiny]") {
    TinyGemma3Spec k;
    k.n_layer = 2;
    k.n_embd = 256;
    k.n_head = 2;
    k.n_head_kv = 1;
    k.head_dim = 128;
    k.n_ff = 256;
    k.wtype = DType::Q4_K;
    TinyGemma3Spec q5;
    q5.wtype = DType::Q5_0;
    for (auto [name, spec] : {std::pair{"q4k", k}, std::pair{"q5_0", q5}}) {
        std::vector<std::vector<float>> logits;
        for (const std::string& bk : test::all_backend_names()) {
            INFO(name << " on " << bk);
            test::LoadedModel l = test::load_tiny(bk, name, spec);
            CHECK(l.model->hparams().n_vocab == spec.n_vocab);
            SessionParams p;
            p.n_ctx = 32;
            p.n_ubatch = 8;
            Session s(*l.model, *l.be, p);
            logits.push_back(s.eval({tiny_vocab::kBos, 300 - 1, 270, 17}));
            REQUIRE(logits.back().size() == size_t(spec.n_vocab));
            for (float x : logits.back()) REQUIRE(std::isfinite(x));
        }
        // Same integer dot products on both backends; only float summation order differs.
        for (size_t i = 0; i < logits[0].size(); ++i) REQUIRE(std::fabs(logits[0][i] - logits[1][i]) <= 1e-3);
    }
}

TEST_CASE("tiny gemma3: weights mapped in place and copied into owned memory give the same logits", "[tiny]") {
    TinyGemma3Spec spec;
    const std::string path = test::tiny_model_path("default", spec);
    for (const std::string& bk : test::all_backend_names()) {
        INFO(bk);
        std::vector<std::vector<float>> logits;
        for (Model::WeightMemory mem : {Model::WeightMemory::Map, Model::WeightMemory::Copy, Model::WeightMemory::Auto}) {
            auto be = test::make_backend(bk);
            auto m = load_model(path, *be, mem);
            SessionParams p;
            p.n_ctx = 32;
            Session s(*m, *be, p);
            logits.push_back(s.eval({tiny_vocab::kBos, 299, 270, 17}));
        }
        CHECK(logits[0] == logits[1]);
        CHECK(logits[0] == logits[2]);
    }
}

TEST_CASE("default model: weights copied into owned memory leave the file mapping released", "[gguf][model]") {
    // Copy mode must not keep the mapped file resident beside the copy: bench's peak memory
    // would be twice the weights (issue 17).
    auto be = test::make_backend("cpu");
    auto m = load_model(test::default_model_path(), *be, Model::WeightMemory::Copy);
    const long long rss = test::mapping_rss(m->gguf().base());
    REQUIRE(rss >= 0);  // -1: smaps unreadable
    INFO("file mapping resident: " << rss << " of " << m->gguf().size() << " bytes");
    CHECK(rss < (long long)(m->gguf().size() / 64));
    SessionParams p;
    p.n_ctx = 16;
    Session s(*m, *be, p);
    for (float x : s.eval({2, 818, 5279})) REQUIRE(std::isfinite(x));
    // Nothing after loading reads the weights through the mapping.
    CHECK(test::mapping_rss(m->gguf().base()) < (long long)(m->gguf().size() / 64));
}
