// Rerankers (pooling_type rank): the classifier head on the pooled state (Model::rank_head,
// applied in EmbedRun), the pair's tokens (rerank_prompt) and /v1/rerank's parsing and answer.
// Oracles: tools/oracle/bert_tiny.py's float64 BERT reranker (tests/data/bert_rerank_tiny.*),
// and for Qwen3's form (last token, the language model's "yes" / "no" rows, softmax) the
// transformers logits of tests/data/qwen3_tiny.golden (tools/oracle/families_tiny.py).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/gguf/gguf.h"
#include "core/models/registry.h"
#include "core/runtime/embed.h"
#include "core/runtime/session.h"
#include "core/text/rerank_prompt.h"
#include "core/text/tokenizer.h"
#include "tests/runtime/embed_oracle.h"
#include "tests/support/gguf_edit.h"
#include "tests/support/golden.h"
#include "tests/server/engine_embed_job.h"
#include "tests/support/kv_contract.h"
#include "tests/support/test_util.h"
#include "tools/server/api_rerank.h"
#include "tools/server/api_request.h"
#include "tools/server/engine.h"
#include "tools/server/metrics.h"

using namespace ls;
using namespace ls::test;

namespace {

struct RerankOracle {
    std::string query;
    std::vector<std::string> docs;
    std::vector<std::vector<int32_t>> ids;
    std::vector<double> scores;
};

std::string unquote(const std::string& s) {  // json.dumps of ASCII text without escapes
    REQUIRE((s.size() >= 2 && s.front() == '"' && s.back() == '"'));
    return s.substr(1, s.size() - 2);
}

RerankOracle read_rerank_oracle() {
    std::ifstream f(test_data("bert_rerank_tiny.oracle"));
    REQUIRE(f.good());
    RerankOracle o;
    std::string line;
    while (std::getline(f, line)) {
        std::istringstream in(line);
        std::string kind;
        in >> kind;
        const std::string rest = line.size() > kind.size() ? line.substr(kind.size() + 1) : "";
        if (kind == "query") o.query = unquote(rest);
        if (kind == "document") o.docs.push_back(unquote(rest));
        if (kind == "tok") {
            size_t n = 0;
            in >> n;
            o.ids.emplace_back(n);
            for (int32_t& t : o.ids.back()) in >> t;
        }
        if (kind == "score") {
            double s = 0;
            in >> s;
            o.scores.push_back(s);
        }
    }
    REQUIRE((o.docs.size() >= 4 && o.ids.size() == o.docs.size() && o.scores.size() == o.docs.size()));
    return o;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, 4) == 0; }

}  // namespace

TEST_CASE("rerank: a tiny BERT reranker scores pairs as the float64 oracle, the same bits on every backend and side by side",
          "[embed][families]") {
    const RerankOracle o = read_rerank_oracle();
    std::vector<float> first;
    double worst = 0;
    for (const std::string& bk : all_backend_names()) {
        INFO("backend " << bk);
        LoadedModel l = load_tiny(bk, "bert_rerank");
        REQUIRE(model_pooling(*l.model) == Pooling::Rank);
        const RankHead* head = l.model->rank_head();
        REQUIRE(head);
        CHECK((head->cls.size() == 1 && head->out.n_out == 1 && !head->softmax && !head->last_token));
        const Tokenizer tok = Tokenizer::from_gguf(l.model->gguf());
        auto s = new_session(l, 64, 64, DType::F32, 2);
        std::vector<std::vector<int32_t>> inputs;
        for (size_t i = 0; i < o.docs.size(); ++i) {
            INFO("document " << i);
            // [CLS] query [SEP] document: llama-server's pair for a WordPiece vocabulary.
            const std::vector<int32_t> ids = rerank_prompt(tok, "", o.query, o.docs[i]);
            CHECK(ids == o.ids[i]);
            inputs.push_back(ids);
            const std::vector<float> sc = embed(*s, 1, ids, Pooling::Rank);
            REQUIRE(sc.size() == 1);
            const double err = std::fabs(double(sc[0]) - o.scores[i]);
            worst = std::max(worst, err);
            CHECK(err <= 1e-4 * (1 + std::fabs(o.scores[i])));
            if (first.size() <= i) first.push_back(sc[0]);
            else CHECK(same_bits(sc[0], first[i]));
        }
        const auto many = embed_many(*s, {0, 1}, inputs, Pooling::Rank);
        for (size_t i = 0; i < many.size(); ++i) CHECK(same_bits(many[i][0], first[i]));
    }
    WARN("worst |score - oracle| of the BERT reranker: " << worst);
}

TEST_CASE("rerank: Qwen3's form (last token, the yes / no rows, softmax) gives the transformers logits' probability", "[embed]") {
    // As convert_hf_to_gguf.py writes a Qwen3 reranker: pooling_type 4 and cls.output.weight =
    // the output matrix's rows of "yes" then "no" (here two arbitrary tokens' rows).
    const Golden g = read_golden("qwen3_tiny");
    const int32_t yes = 100, no = 201;
    const std::string path = temp_path("qwen3_rerank_tiny.gguf");
    {
        auto src = GgufFile::open(test_data("qwen3_tiny.gguf"));
        const GgufTensorInfo* out = src->find_tensor("output.weight");
        if (!out) out = src->find_tensor("token_embd.weight");
        REQUIRE((out && out->type == DType::F32));
        const size_t row = size_t(out->ne[0]) * 4;
        std::vector<uint8_t> rows(2 * row);
        std::memcpy(rows.data(), out->data + size_t(yes) * row, row);
        std::memcpy(rows.data() + row, out->data + size_t(no) * row, row);
        const int64_t E = out->ne[0];
        rewrite_gguf(test_data("qwen3_tiny.gguf"), path, {}, {}, [&](GgufWriter& w) {
            w.set_u32("qwen3.pooling_type", 4);
            w.add_tensor("cls.output.weight", DType::F32, {E, 2}, rows);
        });
    }
    LoadedModel l;
    l.be = make_backend("cpu");
    l.model = load_model(path, *l.be);
    std::filesystem::remove(path);
    const RankHead* head = l.model->rank_head();
    REQUIRE(head);
    CHECK((head->cls.empty() && head->out.n_out == 2 && head->softmax && head->last_token));
    auto s = new_session(l, 256, 64, DType::F32);
    const std::vector<float> sc = embed(*s, 0, g.tokens, Pooling::Rank);
    REQUIRE(sc.size() == 2);
    const float* last = g.logits.data() + size_t(g.n - 1) * size_t(g.n_vocab);
    const double p_yes = 1 / (1 + std::exp(double(last[no]) - double(last[yes])));
    CHECK(std::fabs(sc[0] - p_yes) <= 1e-5);
    CHECK(std::fabs(sc[0] + sc[1] - 1) <= 1e-6);
}

TEST_CASE("rerank: a file whose pooling is rank without cls.output, or with a wrong head shape, is refused by name", "[embed]") {
    auto be = make_backend("cpu");
    auto load_error = [&](const std::set<std::string>& drop, const std::function<bool(const GgufTensorInfo&, GgufWriter&)>& edit) {
        const std::string path = temp_path("bert_rerank_edit.gguf");
        rewrite_gguf(test_data("bert_rerank_tiny.gguf"), path, {}, drop, {}, edit);
        std::string what = "(loaded)";
        try {
            load_model(path, *be);
        } catch (const std::exception& e) {
            what = e.what();
        }
        std::filesystem::remove(path);
        return what;
    };
    CHECK_THAT(load_error({"cls.output.weight"}, {}), Catch::Contains("no cls.output.weight"));
    CHECK_THAT(load_error({}, [](const GgufTensorInfo& t, GgufWriter& w) {
                   if (t.name != "cls.weight") return false;
                   w.add_tensor(t.name, t.type, {t.ne[0] / 2, t.ne[1] * 2}, std::vector<uint8_t>(t.data, t.data + t.nbytes));
                   return true;
               }),
               Catch::Contains("tensor 'cls.weight' has shape [32 128]"));
    CHECK_THAT(load_error({}, [](const GgufTensorInfo& t, GgufWriter& w) {
                   if (t.name != "cls.output.bias") return false;
                   std::vector<uint8_t> b(8, 0);
                   w.add_tensor(t.name, t.type, {2}, b);
                   return true;
               }),
               Catch::Contains("cls.output.bias"));
    // A model without the head: rank pooling asked of it is refused before anything runs.
    LoadedModel plain = load_tiny("cpu", "bert");
    CHECK(!plain.model->rank_head());
    auto s = new_session(plain, 64, 64, DType::F16);
    CHECK_THROWS_WITH(embed(*s, 0, {2, 5, 3}, Pooling::Rank), Catch::Contains("classifier head"));
}

TEST_CASE("rerank: /v1/rerank parses, refuses bad requests by name, and answers sorted by score", "[embed][server]") {
    const RerankOracle o = read_rerank_oracle();
    LoadedModel l = load_tiny("cpu", "bert_rerank");
    const Tokenizer tok = Tokenizer::from_gguf(l.model->gguf());
    server::EmbedContext ctx = server::embed_context(*l.model, tok, 64, "", 2, "tiny-rerank");
    ctx.one_ubatch = 64;
    nlohmann::json docs = o.docs;
    docs[1] = {{"text", o.docs[1]}};  // Cohere's / Jina's object form
    const server::RerankRequest r = server::parse_rerank({{"query", o.query}, {"documents", docs}, {"top_n", 3}, {"return_documents", true}}, ctx);
    REQUIRE(r.job.inputs.size() == o.docs.size());
    for (size_t i = 0; i < o.docs.size(); ++i) CHECK(r.job.inputs[i] == o.ids[i]);
    const server::EmbedResult out = run_engine_job(l, tok, r.job, DType::F32);
    REQUIRE(out.error.empty());
    const nlohmann::json resp = server::rerank_response(r, out, ctx);
    REQUIRE(resp["results"].size() == 3);
    // Highest oracle scores first.
    std::vector<size_t> order(o.docs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return o.scores[a] > o.scores[b]; });
    for (size_t k = 0; k < 3; ++k) {
        const auto& e = resp["results"][k];
        CHECK(e["index"].get<size_t>() == order[k]);
        CHECK(std::fabs(e["relevance_score"].get<double>() - o.scores[order[k]]) <= 1e-4 * (1 + std::fabs(o.scores[order[k]])));
        CHECK(e["document"]["text"] == o.docs[order[k]]);
    }
    CHECK(resp["usage"]["prompt_tokens"].get<int64_t>() > 0);
    auto error_of = [&](const nlohmann::json& body) {
        try {
            server::parse_rerank(body, ctx);
        } catch (const server::ApiError& e) {
            return e.message;
        }
        return std::string("(accepted)");
    };
    CHECK_THAT(error_of({{"documents", {"a"}}}), Catch::Contains("'query' is required"));
    CHECK_THAT(error_of({{"query", "q"}}), Catch::Contains("'documents' is required"));
    CHECK_THAT(error_of({{"query", "q"}, {"documents", nlohmann::json::array()}}), Catch::Contains("empty list"));
    CHECK_THAT(error_of({{"query", "q"}, {"documents", {"a", 3}}}), Catch::Contains("'documents' 1 must be a string"));
    CHECK_THAT(error_of({{"query", "q"}, {"documents", {"a"}}, {"top_n", 0}}), Catch::Contains("'top_n' must be a positive integer"));
    std::string many_words;
    for (int i = 0; i < 20; ++i) many_words += "the quick ";
    CHECK_THAT(error_of({{"query", many_words}, {"documents", {many_words}}}), Catch::Contains("more than a slot's context of 64"));
    // An embedding model is not a reranker, and a reranker serves no embeddings.
    LoadedModel emb = load_tiny("cpu", "bert");
    const server::EmbedContext ectx = server::embed_context(*emb.model, tok, 64, "", 2, "tiny");
    CHECK_THROWS_WITH(server::parse_rerank({{"query", "q"}, {"documents", {"a"}}}, ectx), Catch::Contains("not a reranker"));
    CHECK_THROWS_WITH(server::parse_embeddings({{"input", "a"}}, ctx), Catch::Contains("/v1/rerank"));
}
