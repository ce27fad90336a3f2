// The weight types added for issue 19 (IQ4_NL, IQ4_XS, MXFP4, TQ1_0, TQ2_0) through a whole
// model: a tiny Gemma 3 with every matmul weight and the token embedding (get_rows, and the
// tied output projection) in the type gives the reference's logits bit for bit on every
// backend, and a prompt in one ubatch equals the same prompt token at a time.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/quant/quant.h"
#include "core/runtime/session.h"
#include "tests/support/logits_util.h"
#include "tests/support/tiny_model.h"

using namespace ls;

namespace {
// Row lengths 256 and 512, whole super-blocks for the 256-element types; two layers, the
// first windowed (window 8) so the 20-token prompt wraps its ring.
TinyGemma3Spec spec_for(DType t) {
    TinyGemma3Spec s;
    s.n_layer = 2;
    s.n_embd = 256;
    s.n_head = 4;
    s.n_head_kv = 1;
    s.head_dim = 64;
    s.n_ff = 512;
    s.window = 8;
    s.seed = 19;
    s.wtype = t;
    return s;
}

std::vector<float> eval(const test::LoadedModel& l, const std::vector<int32_t>& prompt, int64_t n_ubatch) {
    SessionParams p;
    p.n_ctx = 64;
    p.n_ubatch = n_ubatch;
    Session s(*l.model, *l.be, p);
    return n_ubatch == 1 ? test::one_by_one(s, prompt) : s.eval(prompt, 0);
}
}  // namespace

TEST_CASE("weight types: a tiny model in each lookup-table and ternary type equals the reference on every backend",
          "[tiny][quant]") {
    const DType t = GENERATE(DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4, DType::TQ1_0, DType::TQ2_0);
    const std::string name = std::string("wt_") + dtype_name(t);
    test::LoadedModel ref = test::load_tiny("reference", name, spec_for(t));
    const int64_t nv = ref.model->hparams().n_vocab;
    const std::vector<int32_t> prompt = test::random_tokens(20, 3, int32_t(nv));
    const std::vector<float> want = eval(ref, prompt, 32);
    REQUIRE(want.size() == prompt.size() * size_t(nv));
    for (float x : want) REQUIRE(std::isfinite(x));
    for (const std::string& bk : test::backend_names_under_test()) {
        INFO("backend " << bk << ", weights " << dtype_name(t));
        test::LoadedModel l = test::load_tiny(bk, name, spec_for(t));
        REQUIRE_BIT_IDENTICAL(want, eval(l, prompt, 32), nv);
        REQUIRE_BIT_IDENTICAL(want, eval(l, prompt, 1), nv);
    }
}
