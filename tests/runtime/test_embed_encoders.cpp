// BERT-style encoders (core/models/bert.cpp: "bert", "nomic-bert") and their WordPiece
// tokenizer (core/text/tokenizer_wpm.cpp), against tools/oracle/bert_tiny.py: BERT's tokenizer
// written from its definition, and a float64 numpy forward pass with non-causal attention,
// pooled and L2-normalized (tests/data/bert_tiny.oracle, bert_tiny.gguf, nomicbert_tiny.gguf).
// EmbeddingGemma ("gemma-embedding", core/models/gemma.cpp) against
// tools/oracle/gemma_embedding_tiny.py (tests/data/gemmaembed_tiny.{gguf,oracle}), and the same
// model with the sentence-transformers dense projections (gemmaembed_dense_tiny.{gguf,oracle}).
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "core/gguf/gguf.h"
#include "core/models/registry.h"
#include "core/quant/quant.h"
#include "core/runtime/embed.h"
#include "core/runtime/session.h"
#include "core/text/tokenizer.h"
#include "tests/runtime/embed_oracle.h"
#include "tests/support/byte_vocab.h"
#include "tests/support/gguf_edit.h"
#include "tests/server/engine_embed_job.h"
#include "tests/support/kv_contract.h"
#include "tests/support/test_util.h"
#include "tools/server/api_embed.h"
#include "tools/server/engine.h"

using namespace ls;
using namespace ls::test;
using namespace std::string_literals;

namespace {

struct TokCase {
    std::string text;
    std::vector<int32_t> ids;
};

// A JSON string as the oracle writes it (json.dumps, ensure_ascii=False): \" \\ \n \t escapes.
std::string unjson(const std::string& s) {
    REQUIRE(s.size() >= 2);
    std::string out;
    for (size_t i = 1; i + 1 < s.size(); ++i) {
        if (s[i] != '\\') {
            out += s[i];
            continue;
        }
        const char c = s[++i];
        out += c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
    }
    return out;
}

void read_oracle(std::vector<TokCase>& toks, std::vector<OracleCase>& cases, const std::string& file = "bert_tiny.oracle") {
    std::ifstream f(test_data(file));
    REQUIRE(f);
    std::string line;
    while (std::getline(f, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream h(line);
        std::string word;
        h >> word;
        if (word == "text") {
            TokCase t;
            t.text = unjson(line.substr(5));
            REQUIRE(std::getline(f, line));
            std::istringstream g(line);
            size_t n = 0;
            g >> word >> n;
            REQUIRE(word == "tok");
            t.ids.resize(n);
            for (auto& x : t.ids) g >> x;
            toks.push_back(std::move(t));
            continue;
        }
        REQUIRE(word == "case");
        cases.push_back(read_oracle_case(h, f));
    }
}

// The file's bytes with every `from` replaced by `to` (the same length), written to a scratch
// file: a tensor renamed (missing), two names swapped (a wrong shape), a key's value changed.
std::string patched(const std::string& file, const std::vector<std::pair<std::string, std::string>>& subs, const std::string& name) {
    std::ifstream in(test_data(file), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const auto& [from, to] : subs) {
        REQUIRE(from.size() == to.size());
        for (size_t at = bytes.find(from); at != std::string::npos; at = bytes.find(from, at + 1)) bytes.replace(at, from.size(), to);
    }
    const std::string path = temp_path(name);
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
}

}  // namespace

TEST_CASE("WordPiece: the bert vocabulary tokenizes as BERT's definition does", "[embed][text]") {
    std::vector<TokCase> toks;
    std::vector<OracleCase> cases;
    read_oracle(toks, cases);
    REQUIRE(toks.size() >= 5);
    for (const char* file : {"bert_tiny.gguf", "nomicbert_tiny.gguf"}) {
        auto f = GgufFile::open(test_data(file));
        const Tokenizer tok = Tokenizer::from_gguf(*f);
        REQUIRE(tok.kind() == TokenizerKind::WordPiece);
        for (const TokCase& t : toks) {
            INFO(file << ": '" << t.text << "'");
            CHECK(tok.encode(t.text, true, false) == t.ids);
            // Without special tokens: no [CLS] and no [SEP].
            const std::vector<int32_t> bare(t.ids.begin() + 1, t.ids.end() - 1);
            CHECK(tok.encode(t.text, false, false) == bare);
        }
        // Control tokens in the text: pieces with parse_special, punctuation and words without.
        const int32_t cls = tok.find_token("[CLS]"), sep = tok.find_token("[SEP]"), unk = tok.unk();
        REQUIRE(cls >= 0);
        REQUIRE(sep >= 0);
        CHECK(tok.encode("[SEP] hello", false, true) == std::vector<int32_t>{sep, tok.find_token("\xE2\x96\x81hello")});
        CHECK(tok.encode("[SEP]", false, false) ==
              std::vector<int32_t>{tok.find_token("\xE2\x96\x81["), tok.find_token("\xE2\x96\x81s"), tok.find_token("e"),
                                   tok.find_token("p"), tok.find_token("\xE2\x96\x81]")});
        // A word with a character no piece has is one [UNK]; words around it are kept.
        CHECK(tok.encode("hello \xCE\xA9mega world", false, false) ==
              std::vector<int32_t>{tok.find_token("\xE2\x96\x81hello"), unk, tok.find_token("\xE2\x96\x81world")});
        // Pieces decode back: "▁" is a space, a continuation joins the word.
        CHECK(tok.decode(tok.encode("unbelievable dogs", false, false)) == " unbelievable dogs");
        CHECK(tok.max_bytes_per_token() == 0);  // one [UNK] stands for a whole word
    }
}

TEST_CASE("WordPiece: a bert vocabulary without an unknown token, or an unknown tokenizer, is refused by name", "[embed][text]") {
    const std::string bad = patched("bert_tiny.gguf", {{"tokenizer.ggml.model\x08\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00" "bert"s,
                                                        "tokenizer.ggml.model\x08\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00" "bort"s}},
                                    "bert_bort.gguf");
    auto f = GgufFile::open(bad);
    CHECK_THROWS_WITH(Tokenizer::from_gguf(*f), Catch::Contains("unsupported tokenizer.ggml.model 'bort'"));
    const std::string no_unk = patched("bert_tiny.gguf", {{"tokenizer.ggml.unknown_token_id", "tokenizer.ggml.unknown_token_xx"}}, "bert_nounk.gguf");
    auto g = GgufFile::open(no_unk);
    CHECK_THROWS_WITH(Tokenizer::from_gguf(*g), Catch::Contains("unknown_token_id"));
}

TEST_CASE("encoders: tiny bert and nomic-bert embeddings match the float64 oracle, the same bits on every backend", "[embed][families]") {
    std::vector<TokCase> toks;
    std::vector<OracleCase> cases;
    read_oracle(toks, cases);
    REQUIRE(cases.size() >= 16);
    double worst = 1.0;
    for (const std::string kind : {"bert", "nomicbert"}) {
        OracleTally tally;  // per case, the reference backend's vector
        for (const std::string& bk : all_backend_names()) {
            LoadedModel l = load_tiny(bk, kind);
            REQUIRE(!l.model->hparams().causal);
            REQUIRE(model_pooling(*l.model) == Pooling::Mean);
            // A ubatch that holds every input (70 tokens at most): each evaluated in one.
            auto s = new_session(l, 96, 80, DType::F16, 2);
            size_t k = 0;
            for (const OracleCase& c : cases) {
                if (c.model != kind + "_tiny.gguf") continue;
                INFO(kind << " " << pooling_name(c.pooling) << ", " << c.tokens.size() << " tokens, backend " << bk);
                // float32 through 2 post-norm layers against float64, F16 K/V rows.
                tally.check(embed(*s, 1, c.tokens, c.pooling), c.want, k++);
            }
            // Side by side in both slots of one batch (each sees only its own sequence): the
            // same bits as alone.
            for (Pooling pl : {Pooling::Mean, Pooling::Cls}) {
                std::vector<std::vector<int32_t>> inputs;
                std::vector<size_t> ks;
                size_t j = 0;
                for (const OracleCase& c : cases) {
                    if (c.model != kind + "_tiny.gguf") continue;
                    if (c.pooling == pl) inputs.push_back(c.tokens), ks.push_back(j);
                    ++j;
                }
                INFO(kind << " " << pooling_name(pl) << " side by side, backend " << bk);
                const auto many = embed_many(*s, {0, 1}, inputs, pl);
                for (size_t q = 0; q < many.size(); ++q) CHECK(same_bits(many[q], tally.first[ks[q]]));
            }
        }
        worst = std::min(worst, tally.worst);
    }
    WARN("worst cosine of the encoders against the oracle: 1 - " << (1.0 - worst));
}

TEST_CASE("encoders: an input longer than the ubatch, a continued sequence and a request for logits are refused", "[embed]") {
    LoadedModel l = load_tiny("cpu", "bert");
    auto s = new_session(l, 96, 32, DType::F16, 2);
    std::vector<int32_t> long_input(70, 5), short_input(20, 6);
    long_input.front() = 2, long_input.back() = 3;
    // Non-causal: an input is evaluated whole, so one longer than the ubatch cannot be.
    CHECK_THROWS_WITH(embed(*s, 0, long_input, Pooling::Mean), Catch::Contains("more than the ubatch of 32") && Catch::Contains("-ub"));
    // Two inputs that fit only one at a time in a ubatch: embed_many waits for room, and each
    // gets what it gets alone.
    const std::vector<int32_t> other(25, 7);
    const auto many = embed_many(*s, {0, 1}, {short_input, other}, Pooling::Mean);
    CHECK(same_bits(many[0], embed(*s, 0, short_input, Pooling::Mean)));
    CHECK(same_bits(many[1], embed(*s, 1, other, Pooling::Mean)));
    // A decode that would continue a sequence, or that asks for logits.
    Batch b;
    b.add(5, 0, int32_t(s->seq_len(0)), true);
    CHECK_THROWS_WITH(s->decode(b, DecodeOutput::Hidden), Catch::Contains("already holds tokens"));
    s->seq_rm(0, 0);
    Batch c;
    c.add(5, 0, 0, true);
    CHECK_THROWS_WITH(s->decode(c, DecodeOutput::Logits), Catch::Contains("embedding model"));
    Batch big;
    for (int32_t i = 0; i < 40; ++i) big.add(5, 1, i, false);
    s->seq_rm(1, 0);
    CHECK_THROWS_WITH(s->decode(big, DecodeOutput::Hidden), Catch::Contains("larger than the ubatch"));
}

TEST_CASE("encoders: a bert GGUF missing a tensor or with a wrong shape is refused by name", "[embed]") {
    auto be = make_backend("cpu");
    const std::string missing = patched("bert_tiny.gguf", {{"blk.1.ffn_down.bias", "blk.1.ffn_down.bia_"}}, "bert_missing.gguf");
    CHECK_THROWS_WITH(load_model(missing, *be), Catch::Contains("blk.1.ffn_down.bias"));
    // Two biases of different lengths (64 and 128) trade names.
    const std::string swapped = patched("bert_tiny.gguf", {{"blk.0.ffn_up.bias", "blk.0.TMP_XY.bias"}, {"blk.0.attn_q.bias", "blk.0.ffn_up.bias"},
                                                           {"blk.0.TMP_XY.bias", "blk.0.attn_q.bias"}},
                                        "bert_swapped.gguf");
    CHECK_THROWS_WITH(load_model(swapped, *be), Catch::Contains("blk.0.attn_q.bias") && Catch::Contains("[64]"));
    const std::string no_pos = patched("nomicbert_tiny.gguf", {{"blk.0.attn_qkv.weight", "blk.0.attn_qkv.weighx"}}, "nomic_noqkv.gguf");
    CHECK_THROWS_WITH(load_model(no_pos, *be), Catch::Contains("blk.0.attn_q.weight"));
}

TEST_CASE("encoders: tiny EmbeddingGemma matches the float64 oracle, the same bits on every backend", "[embed][families]") {
    std::vector<TokCase> toks;
    std::vector<OracleCase> cases;
    read_oracle(toks, cases, "gemmaembed_tiny.oracle");
    REQUIRE(cases.size() >= 18);
    OracleTally tally;
    for (const std::string& bk : all_backend_names()) {
        LoadedModel l = load_tiny(bk, "gemmaembed");
        REQUIRE(!l.model->hparams().causal);
        REQUIRE(!l.model->hparams().has_logits);
        REQUIRE(model_pooling(*l.model) == Pooling::Mean);
        auto s = new_session(l, 64, 64, DType::F16, 2);
        size_t k = 0;
        for (const OracleCase& c : cases) {
            INFO(pooling_name(c.pooling) << ", " << c.tokens.size() << " tokens, backend " << bk);
            // float32 through 6 layers against float64 (the same F16-rounded weights), F16 K/V rows;
            // the 13- and 40-token inputs reach past the symmetric window of the sliding layers.
            tally.check(embed(*s, 1, c.tokens, c.pooling), c.want, k++);
        }
    }
    WARN("worst cosine of EmbeddingGemma against the oracle: 1 - " << (1.0 - tally.worst));
}

TEST_CASE("encoders: EmbeddingGemma's dense projections are applied after pooling, as the float64 oracle, on every backend",
          "[embed][families]") {
    std::vector<TokCase> toks;
    std::vector<OracleCase> cases;
    read_oracle(toks, cases, "gemmaembed_dense_tiny.oracle");
    REQUIRE(cases.size() >= 12);
    OracleTally tally;
    for (const std::string& bk : all_backend_names()) {
        LoadedModel l = load_tiny(bk, "gemmaembed_dense");
        const auto& proj = l.model->embd_projection();
        REQUIRE(proj.size() == 2);
        CHECK((proj[0].name == "dense_2.weight" && proj[0].n_in == 64 && proj[0].n_out == 128));
        CHECK((proj[1].name == "dense_3.weight" && proj[1].n_in == 128 && proj[1].n_out == 64));
        REQUIRE(model_pooling(*l.model) == Pooling::Mean);
        auto s = new_session(l, 64, 64, DType::F16, 2);
        size_t k = 0;
        for (const OracleCase& c : cases) {
            INFO(pooling_name(c.pooling) << ", " << c.tokens.size() << " tokens, backend " << bk);
            // The oracle projects once, after pooling and before normalizing: a vector not
            // projected, or projected twice, is far from it.
            tally.check(embed(*s, 1, c.tokens, c.pooling), c.want, k++);
        }
        // Side by side in both slots: the same bits as alone.
        for (Pooling pl : {Pooling::Mean, Pooling::Last}) {
            std::vector<std::vector<int32_t>> inputs;
            std::vector<size_t> ks;
            for (size_t j = 0; j < cases.size(); ++j)
                if (cases[j].pooling == pl) inputs.push_back(cases[j].tokens), ks.push_back(j);
            INFO(pooling_name(pl) << " side by side, backend " << bk);
            const auto many = embed_many(*s, {0, 1}, inputs, pl);
            for (size_t q = 0; q < many.size(); ++q) CHECK(same_bits(many[q], tally.first[ks[q]]));
        }
    }
    // The file without the projections gives other vectors (the projection is not a no-op here).
    LoadedModel plain = load_tiny("cpu", "gemmaembed");
    CHECK(plain.model->embd_projection().empty());
    CHECK(!same_bits(embed(*new_session(plain, 64, 64, DType::F16), 0, cases[3].tokens, cases[3].pooling), tally.first[3]));
    WARN("worst cosine of EmbeddingGemma with dense projections against the oracle: 1 - " << (1.0 - tally.worst));
}

TEST_CASE("encoders: the server's engine applies EmbeddingGemma's dense projections once, as embed()", "[embed][server]") {
    std::vector<TokCase> toks;
    std::vector<OracleCase> cases;
    read_oracle(toks, cases, "gemmaembed_dense_tiny.oracle");
    LoadedModel l = load_tiny("cpu", "gemmaembed_dense");
    const Tokenizer tok(test::byte_vocab({}));  // unused: the request gives token ids
    server::EmbedContext ctx = server::embed_context(*l.model, tok, 64, "", 2, "tiny");
    ctx.one_ubatch = 64;
    nlohmann::json ids = nlohmann::json::array();
    std::vector<std::vector<int32_t>> inputs;
    for (const OracleCase& c : cases)
        if (c.pooling == Pooling::Mean) ids.push_back(c.tokens), inputs.push_back(c.tokens);
    const server::EmbedRequest r = server::parse_embeddings({{"input", ids}}, ctx);
    const server::EmbedResult out = run_engine_job(l, tok, r.job, DType::F16);
    REQUIRE(out.error.empty());
    const nlohmann::json resp = server::embeddings_response(r, out, ctx);
    REQUIRE(resp["data"].size() == inputs.size());
    auto s = new_session(l, 64, 64, DType::F16);
    size_t k = 0;
    for (const OracleCase& c : cases) {
        if (c.pooling != Pooling::Mean) continue;
        const std::vector<float> got = resp["data"][k++]["embedding"].get<std::vector<float>>();
        CHECK(same_bits(got, embed(*s, 0, c.tokens, Pooling::Mean)));
        CHECK(cosine(got, c.want) >= 0.9999);
    }
}

TEST_CASE("encoders: EmbeddingGemma's dense projections quantized, or broken, load or are refused by name", "[embed]") {
    auto be = make_backend("cpu");
    const std::string src = test_data("gemmaembed_dense_tiny.gguf");
    const std::string a = "gemma-embedding.";
    auto rewritten = [&](const std::set<std::string>& keys, const std::set<std::string>& tensors, const std::function<void(GgufWriter&)>& edit,
                         const std::function<bool(const GgufTensorInfo&, GgufWriter&)>& tensor_edit = {}) {
        const std::string out = temp_path("gemmaembed_dense_edit.gguf");
        rewrite_gguf(src, out, keys, tensors, edit, tensor_edit);
        return out;
    };
    auto load_error = [&](const std::string& path) {
        std::string what = "(loaded)";
        try {
            load_model(path, *be);
        } catch (const std::exception& e) {
            what = e.what();
        }
        std::filesystem::remove(path);
        return what;
    };
    // Q8_0 projections (any type core/quant reads): dequantized at load, near the F16 oracle.
    {
        const std::string q8 = rewritten({}, {}, {}, [](const GgufTensorInfo& t, GgufWriter& w) {
            if (t.name.rfind("dense_", 0) != 0) return false;
            const int64_t K = t.ne[0], rows = t.ne[1];
            std::vector<float> row(size_t(K), 0.f);
            const size_t in_row = row_bytes(t.type, K), out_row = row_bytes(DType::Q8_0, K);
            std::vector<uint8_t> bytes(out_row * size_t(rows));
            for (int64_t o = 0; o < rows; ++o) {
                dequantize_row(t.type, t.data + size_t(o) * in_row, row.data(), K);
                quantize_row(DType::Q8_0, row.data(), bytes.data() + size_t(o) * out_row, K);
            }
            w.add_tensor(t.name, DType::Q8_0, {K, rows}, std::move(bytes));
            return true;
        });
        LoadedModel l;
        l.be = make_backend("cpu");
        l.model = load_model(q8, *l.be);
        std::filesystem::remove(q8);
        std::vector<TokCase> toks;
        std::vector<OracleCase> cases;
        read_oracle(toks, cases, "gemmaembed_dense_tiny.oracle");
        auto s = new_session(l, 64, 64, DType::F16);
        for (const OracleCase& c : cases) CHECK(cosine(embed(*s, 0, c.tokens, c.pooling), c.want) >= 0.999);
    }
    // The two matrices trade names: each has the other's shape.
    const std::string swapped =
        patched("gemmaembed_dense_tiny.gguf", {{"dense_2.weight", "dense_X.weight"}, {"dense_3.weight", "dense_2.weight"}, {"dense_X.weight", "dense_3.weight"}},
                "gemmaembed_dense_swapped.gguf");
    CHECK_THAT(load_error(swapped), Catch::Contains("tensor 'dense_2.weight' has shape [128 64]") && Catch::Contains("expects [64 128]"));
    // A width key missing, or not matching the other's.
    CHECK_THAT(load_error(rewritten({a + "dense_2_feat_out"}, {}, {})), Catch::Contains("dense_2.weight") && Catch::Contains("dense_2_feat_out"));
    CHECK_THAT(load_error(rewritten({a + "dense_3_feat_in"}, {}, [&](GgufWriter& w) { w.set_u32(a + "dense_3_feat_in", 96); })),
               Catch::Contains("dense_3_feat_in is 96") && Catch::Contains("dense_2's output has 128"));
    CHECK_THAT(load_error(rewritten({a + "dense_2_feat_in"}, {}, [&](GgufWriter& w) { w.set_u32(a + "dense_2_feat_in", 32); })),
               Catch::Contains("dense_2_feat_in is 32, not embedding_length 64"));
    CHECK_THAT(load_error(rewritten({a + "dense_3_feat_out"}, {}, [&](GgufWriter& w) { w.set_u32(a + "dense_3_feat_out", 128); })),
               Catch::Contains("dense_3_feat_out is 128, not embedding_length 64"));
    CHECK_THAT(load_error(rewritten({a + "dense_2_feat_out"}, {}, [&](GgufWriter& w) { w.set_i64(a + "dense_2_feat_out", int64_t(1) << 40); })),
               Catch::Contains("out of range"));
    // dense_2 alone would leave the embedding 128 wide.
    CHECK_THAT(load_error(rewritten({}, {"dense_3.weight"}, {})), Catch::Contains("no dense_3.weight maps them back"));
    // A bias: llama.cpp's gemma-embedding takes none, so it is refused rather than ignored.
    CHECK_THAT(load_error(rewritten({}, {}, {}, [](const GgufTensorInfo& t, GgufWriter& w) {
                   if (t.name == "dense_2.weight") w.add_tensor("dense_2.bias", DType::F32, {128}, std::vector<uint8_t>(128 * 4, 0));
                   return false;
               })),
               Catch::Contains("dense_2.bias"));
    // dense_3 alone, 64 -> 64 (dense_2 dropped, dense_3 replaced): loads, one stage.
    {
        const std::string only3 = rewritten({a + "dense_3_feat_in", a + "dense_2_feat_out"}, {"dense_2.weight"},
                                            [&](GgufWriter& w) { w.set_u32(a + "dense_3_feat_in", 64); },
                                            [](const GgufTensorInfo& t, GgufWriter& w) {
                                                if (t.name != "dense_3.weight") return false;
                                                w.add_tensor(t.name, DType::F32, {64, 64}, std::vector<uint8_t>(64 * 64 * 4, 0));
                                                return true;
                                            });
        auto m = load_model(only3, *be);
        std::filesystem::remove(only3);
        REQUIRE(m->embd_projection().size() == 1);
        CHECK(m->embd_projection()[0].name == "dense_3.weight");
    }
}
