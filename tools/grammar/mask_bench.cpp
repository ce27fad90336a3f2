// Times the grammar token mask on a real vocabulary: a JSON-schema grammar is walked along a
// document's tokens, and at each step the full mask is computed three ways (cold: a new
// matcher, its transitions unlearned; warm: the matcher's transitions learned, no mask cache;
// cached: a mask-cache hit), plus allows() on single tokens. At every step the mask is checked
// against allows() on every token.
//
//   grammar_mask_bench MODEL.gguf [SCHEMA.json]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <numeric>

#include "core/gguf/gguf.h"
#include "core/grammar/json_schema.h"
#include "core/grammar/token_mask.h"
#include "core/text/tokenizer.h"

using namespace ls::grammar;
using Clock = std::chrono::steady_clock;

static double us_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

static void report(const char* what, std::vector<double> v) {
    std::sort(v.begin(), v.end());
    double mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
    std::printf("%-34s n=%4zu  mean %9.2f us  median %9.2f us  p90 %9.2f us  max %9.2f us\n", what, v.size(), mean,
                v[v.size() / 2], v[v.size() * 9 / 10], v.back());
}

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: grammar_mask_bench MODEL.gguf [SCHEMA.json]\n");
        return 2;
    }
    auto f = ls::GgufFile::open(argv[1]);
    auto tok = ls::Tokenizer::from_gguf(*f);
    int32_t n = tok.n_vocab();
    std::vector<std::string> pieces(static_cast<size_t>(n));
    std::vector<bool> eog(static_cast<size_t>(n)), special(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) {
        auto t = tok.token_type(i);
        special[size_t(i)] = t == ls::TokenType::Control || t == ls::TokenType::Unknown || t == ls::TokenType::Unused;
        eog[size_t(i)] = tok.is_eog(i);
        pieces[size_t(i)] = tok.token_to_piece(i, false);
    }
    auto t0 = Clock::now();
    auto vocab = std::make_shared<TokenMask>(pieces, eog, special, 256);
    std::printf("vocabulary: %d tokens, trie of %zu nodes built in %.1f ms\n", n, vocab->stats().trie_nodes,
                us_since(t0) / 1000.0);

    nlohmann::ordered_json schema = nlohmann::ordered_json::parse(R"({
      "type": "object",
      "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "email": {"type": "string", "format": "email"},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
        "address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"},
                    "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}, "required": ["street", "city"]},
        "active": {"type": "boolean"},
        "score": {"type": "number"}
      },
      "required": ["name", "age", "tags", "address", "active"]
    })");
    if (argc > 2) {
        std::ifstream sf(argv[2]);
        schema = nlohmann::ordered_json::parse(sf);
    }
    std::string doc = R"({"name": "Ada Lovelace", "age": 36, "email": "ada@example.com", "tags": ["math", "poetry", "engines"], )"
                      R"("address": {"street": "12 St James's Square", "city": "London", "zip": "10001"}, "active": true, "score": 9.75})";
    auto grammar = Grammar::parse(json_schema_to_gbnf(schema));
    std::vector<int32_t> ids = tok.encode(doc, false, false);
    std::printf("document: %zu bytes, %zu tokens\n", doc.size(), ids.size());

    std::vector<uint32_t> bits(vocab->mask_words()), check(vocab->mask_words());
    std::vector<double> cold, warm, cached, allow_one, allow_top;
    TokenMask nocache(pieces, eog, special, 0);
    Matcher m(grammar, vocab);
    size_t checked = 0;
    std::vector<size_t> allowed_counts;
    for (size_t step = 0; step <= ids.size(); ++step) {
        {  // cold: a fresh matcher replays the prefix (untimed), then one mask
            Matcher fresh(grammar, vocab);
            for (size_t k = 0; k < step; ++k) fresh.accept_token(ids[k]);
            auto t = Clock::now();
            nocache.fill_mask(fresh, bits.data());
            cold.push_back(us_since(t));
        }
        auto t = Clock::now();
        nocache.fill_mask(m, bits.data());
        warm.push_back(us_since(t));
        vocab->fill_mask(m, check.data());  // fills the cache (or hits it)
        t = Clock::now();
        vocab->fill_mask(m, check.data());
        cached.push_back(us_since(t));
        if (bits != check) { std::printf("MISMATCH cached vs uncached at step %zu\n", step); return 1; }
        size_t count = 0;
        for (uint32_t w : bits) count += size_t(__builtin_popcount(w));
        allowed_counts.push_back(count);
        if (step < ids.size()) {
            // allows() on the token the document takes, and on 40 candidates (as a sampler's top-k)
            t = Clock::now();
            bool ok = vocab->allows(m, ids[step]);
            allow_one.push_back(us_since(t));
            if (!ok) { std::printf("document token %zu refused\n", step); return 1; }
            t = Clock::now();
            int hits = 0;
            for (int32_t c = 0; c < 40; ++c) hits += vocab->allows(m, (ids[step] + c * 6151) % n);
            allow_top.push_back(us_since(t) / 40.0);
            (void)hits;
        }
        {  // the mask against allows() on every token
            for (int32_t id = 0; id < n; ++id) {
                bool bit = (bits[size_t(id) >> 5] >> (id & 31)) & 1;
                if (bit != vocab->allows(m, id)) { std::printf("MISMATCH mask vs allows at step %zu, token %d\n", step, id); return 1; }
            }
            ++checked;
        }
        if (step < ids.size() && !m.accept_token(ids[step])) { std::printf("accept_token failed at %zu\n", step); return 1; }
    }
    if (!m.is_accepting()) { std::printf("document not accepted at its end\n"); return 1; }
    std::printf("mask == allows() on all %d tokens at %zu steps; allowed per step: median %zu, min %zu, max %zu\n", n,
                checked, allowed_counts[allowed_counts.size() / 2], *std::min_element(allowed_counts.begin(), allowed_counts.end()),
                *std::max_element(allowed_counts.begin(), allowed_counts.end()));
    size_t worst = size_t(std::max_element(warm.begin(), warm.end()) - warm.begin());
    std::string prefix;
    for (size_t k = 0; k < worst; ++k) prefix += tok.token_to_piece(ids[k], false);
    std::printf("slowest warm step: %zu (%zu tokens allowed), after: %s\n", worst, allowed_counts[worst], prefix.c_str());
    report("fill_mask cold (new matcher)", cold);
    report("fill_mask warm matcher, no cache", warm);
    report("fill_mask cache hit", cached);
    report("allows(), document token", allow_one);
    report("allows(), per random candidate", allow_top);
    auto st = vocab->stats();
    std::printf("cache: %llu hits, %llu misses; matcher states: %zu\n", (unsigned long long)st.hits, (unsigned long long)st.misses,
                m.automaton().n_states());
    return 0;
}
