// The decoder families of issue 20 on tiny random-weight models from
// tools/oracle/families_tiny.py (transformers' reference classes, exported as llama.cpp's
// converter writes them):
//   llama_tiny     interleaved rope (Q/K permuted by the converter), Llama 3 rope scaling
//                  (rope_freqs.weight), separate output;
//   qwen2_tiny     NeoX rope, biases on q, k and v (none on the output projection), separate
//                  output;
//   qwen3_tiny     NeoX rope, q/k RMS norms, tied output;
//   mistral3_tiny  llama's rope with YaRN (factor 16 over an original context of 32, mscale_all_dim
//                  1) and Llama 4's attention temperature (queries x 1 + 0.1 ln(1 + floor(pos / 32)),
//                  three steps within the prompt);
//   phi3_tiny      q, k and v in one matrix and gate and up in another (split by views),
//                  NeoX rope on half of each head (partial_rotary_factor 0.5);
//   lfm2_tiny      short-convolution blocks (conv1d_scan state) beside attention blocks;
//   granitemoe_tiny  granite's multipliers with 8 experts, 3 per token (top-k softmax);
//   olmo2_tiny     NeoX rope, no norms before attention and FFN, RMS norms of their outputs
//                  before the residual adds, q/k norms over the whole projections;
//   granite_tiny   llama's rope, Granite's four multipliers (embeddings x12, branches x0.22,
//                  attention scale 0.25, logits / 8), biases on every projection, tied output;
//   qwen3moe_tiny  qwen3 with 8 experts, 3 per token, softmax router renormalised;
//   gemma2_tiny    sliding window 4 on the even layers, attention and final soft-caps, four
//                  norms per layer;
//   gptoss_tiny    sliding window 4 on the even layers, attention sinks, biases, YaRN rope,
//                  MXFP4 experts with biases and the clamped SwiGLU;
//   deepseek2_tiny DeepSeek-V2-Lite's layout: multi-head latent attention (the cache holds the
//                  latent and its rope part, V inside K), YaRN with mscale, a dense first layer,
//                  then 8 experts (softmax, top 2) and 2 shared experts;
//   deepseek3_tiny DeepSeek V3's: low-rank queries, a sigmoid router with correction bias over 4
//                  groups of which 2 are kept, renormalised and scaled by 2.5, one shared expert;
//   glm4moe_tiny   GLM-4.5's: q/k/v biases, per-head q/k norms, NeoX rope on half of each head,
//                  a dense first layer, a sigmoid router with bias, a shared expert, an
//                  appended NextN layer that is not run;
//   nemotron_h_tiny Nemotron-H's: Mamba-2 layers (ssm_scan: 8 heads in 2 groups, state 16, its
//                  convolution and gated group norm) beside an attention layer without rope and
//                  squared-ReLU MLP layers;
//   phi3longrope_tiny phi3 with LongRoPE (short and long factors, attn_factor), two goldens;
//   granitehybrid_tiny Granite 4.0-H's: Mamba-2, rope-less attention, Mamba-2, Mamba-2, each with
//                  8 experts (softmax, top 2) and a shared expert, Granite's four multipliers
//                  (attention scale 1/16, not the default 1/4), tied output.
// Golden logits against transformers (a 100-token prompt: every ring wraps) within float32's
// spread, and bit for bit against the reference backend on every backend and ubatch size; the
// KV contract of SEMANTICS.md section 1 on the sliding-window ones, every backend, f16 and q8_0.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>

#include "core/gguf/gguf.h"
#include "core/models/registry.h"
#include "core/runtime/session.h"
#include "tests/support/gguf_edit.h"
#include "tests/support/golden.h"
#include "tests/support/kv_contract.h"
#include "tests/support/logits_util.h"
#include "tests/support/test_util.h"

using namespace ls;
using namespace ls::test;

namespace {

const std::vector<std::string> kFamilies = {"llama",    "qwen2", "qwen3", "qwen3moe",   "gemma2",    "gptoss",    "granite", "olmo2",
                                            "mistral3", "lfm2",  "phi3",  "granitemoe", "deepseek2", "deepseek3", "glm4moe", "nemotron_h",
                                            "granitehybrid", "phi3longrope"};
const std::vector<std::string> kSliding = {"gemma2", "gptoss"};
constexpr float kOne = 1.0f;

}  // namespace

TEST_CASE("families: tiny model logits match transformers, whole and in ubatches, on every backend", "[families][golden]") {
    // gpt-oss: the file with its experts as F32 copies of their MXFP4 values (see below).
    for (const std::string kind : {"llama", "qwen2", "qwen3", "qwen3moe", "gemma2", "gptossf32", "granite", "olmo2", "mistral3", "lfm2", "phi3",
                                   "granitemoe", "deepseek2", "deepseek3", "glm4moe", "nemotron_h", "granitehybrid"}) {
        const Golden gold = read_golden(kind == "gptossf32" ? "gptoss_tiny" : kind + "_tiny");
        SameBitsAsFirst same(gold.n_vocab);
        for (const std::string& bk : all_backend_names()) {
            LoadedModel l = load_tiny(bk, kind);
            REQUIRE(l.model->hparams().n_vocab == gold.n_vocab);
            for (int64_t ub : {int64_t(128), int64_t(16)}) {
                INFO(kind << " on backend " << bk << ", ubatch " << ub);
                auto s = new_session(l, 128, ub, DType::F32);
                const std::vector<float> got = s->eval(gold.tokens, 0);
                same.check(got);
                const GoldenDiff d = compare_golden(got, gold);
                // float32 on both sides, each in its own summation order: transformers' own
                // whole-prompt and token-at-a-time paths differ by up to 1.7e-5 (qwen3), 2.7e-6
                // (gpt-oss), 7.9e-6 (gemma2) on these logits (|logit| <= 18).
                INFO("largest |logit - transformers| = " << d.worst);
                CHECK(d.worst <= 1e-4);
                CHECK(d.flipped == 0);
            }
        }
    }
}

// LongRoPE (Phi-3.5-mini, Phi-4-mini): the short factors for a context within the original 64
// positions, the long ones beyond it, chosen per session as llama.cpp does, with cos and sin
// scaled by rope.scaling.attn_factor: each against transformers on a prompt that makes it use
// the same set (48 tokens: short; 100: long); and the other set is visibly off.
TEST_CASE("families: phi3 LongRoPE picks its factors by the context and matches transformers with each", "[families][golden]") {
    const Golden lng = read_golden("phi3longrope_tiny"), sht = read_golden("phi3longrope_short");
    for (const std::string& bk : all_backend_names()) {
        LoadedModel l = load_tiny(bk, "phi3longrope");
        for (const auto& [gold, n_ctx] : {std::pair<const Golden&, int64_t>{lng, 128}, std::pair<const Golden&, int64_t>{sht, 64}}) {
            INFO("backend " << bk << ", context " << n_ctx);
            const GoldenDiff d = compare_golden(new_session(l, n_ctx, 16, DType::F32)->eval(gold.tokens, 0), gold);
            INFO("largest |logit - transformers| = " << d.worst);
            CHECK(d.worst <= 1e-4);
            CHECK(d.flipped == 0);
        }
        // the short prompt in a long context: the long factors, not what transformers used
        CHECK(compare_golden(new_session(l, 128, 16, DType::F32)->eval(sht.tokens, 0), sht).worst > 1e-2);
    }
}

TEST_CASE("families: gpt-oss with MXFP4 experts stays within 8-bit activation rounding of transformers", "[families][golden]") {
    // A quantized matmul rounds its activations to 8-bit blocks (as llama.cpp does), which the
    // float oracle does not: typical logits move by a few hundredths, and a token whose router
    // margin is smaller than that can pick another expert (the tiny model's smallest top-k
    // margin is 3.8e-3 in router logit). Bounds: mean error, and argmax on all but 3 positions.
    const Golden gold = read_golden("gptoss_tiny");
    SameBitsAsFirst same(gold.n_vocab);
    for (const std::string& bk : all_backend_names()) {
        INFO("backend " << bk);
        LoadedModel l = load_tiny(bk, "gptoss");
        const std::vector<float> got = new_session(l, 128, 128, DType::F32)->eval(gold.tokens, 0);
        same.check(got);
        const GoldenDiff d = compare_golden(got, gold);
        double sum = 0;
        for (size_t i = 0; i < got.size(); ++i) sum += std::fabs(double(got[i]) - gold.logits[i]);
        const double mean = sum / double(got.size());
        INFO("largest " << d.worst << ", mean " << mean << ", argmax flips " << d.flipped);
        CHECK(mean <= 0.05);
        CHECK(d.flipped <= 3);
    }
}

TEST_CASE("families: the sliding layers and their rings come from the metadata", "[families][kv]") {
    for (const std::string& kind : kSliding) {
        INFO(kind);
        LoadedModel l = load_tiny("reference", kind);
        const Hparams& hp = l.model->hparams();
        const int32_t W = hp.layers[0].window;
        REQUIRE(W == 4);
        auto s = new_session(l, 64, 4, DType::F16);
        for (int64_t il = 0; il < hp.n_layer; ++il) {
            INFO("layer " << il);
            CHECK(hp.layers[size_t(il)].window == (il % 2 == 0 ? W : 0));
            CHECK(s->kv().ring_rows(int(il)) == (il % 2 == 0 ? W + 4 : 64));  // R = min(n_ctx, W + B)
        }
    }
}

TEST_CASE("families: one ubatch, chunks across ring wraps and uneven calls all equal token at a time", "[families][kv]") {
    const std::string bk = GENERATE(from_range(all_backend_names()));
    const std::string kind = GENERATE(from_range(kSliding));
    const DType kv = GENERATE(DType::F16, DType::Q8_0);
    INFO(kind << " on backend " << bk << ", kv cache " << dtype_name(kv));
    LoadedModel l = load_tiny(bk, kind);
    REQUIRE(new_session(l, 128, 8, kv)->kv().ring_rows(0) == 12);  // windowed rings wrap every 12 tokens
    check_batchings_equal_token_at_a_time(l, kv, 43, 8);           // the last chunk of 3 < W
}

TEST_CASE("families: sequences of different lengths in one ubatch equal each alone", "[families][kv]") {
    const std::string bk = GENERATE(from_range(all_backend_names()));
    const std::string kind = GENERATE(from_range(kFamilies));
    const DType kv = GENERATE(DType::F16, DType::Q8_0);
    INFO(kind << " on backend " << bk << ", kv cache " << dtype_name(kv));
    check_sequences_together_equal_alone(load_tiny(bk, kind), kv);
}

TEST_CASE("families: multi-turn chat with prefix reuse equals a fresh evaluation of the transcript", "[families][kv]") {
    const std::string bk = GENERATE(from_range(all_backend_names()));
    const std::string kind = GENERATE(from_range(kSliding));
    const DType kv = GENERATE(DType::F16, DType::Q8_0);
    INFO(kind << " on backend " << bk << ", kv cache " << dtype_name(kv));
    check_chat_prefix_reuse_equals_fresh(load_tiny(bk, kind), kv, 4, 4);  // windowed rings of 8 rows
}

// The full-attention families (the sliding ones above, the hybrids in test_hybrid.cpp): chunked
// prompts equal token at a time, and chat turns with a rolled-back reply token equal a fresh
// evaluation, on every backend (routers, latent caches, LongRoPE, fused projections).
TEST_CASE("families: the full-attention families keep the KV contract in chunks and chat turns", "[families][kv]") {
    const std::string bk = GENERATE(from_range(all_backend_names()));
    const std::string kind = GENERATE(as<std::string>{}, "llama", "qwen2", "qwen3", "qwen3moe", "granite", "granitemoe", "olmo2", "mistral3",
                                      "phi3", "phi3longrope", "deepseek2", "deepseek3", "glm4moe");
    const DType kv = GENERATE(DType::F16, DType::Q8_0);
    INFO(kind << " on backend " << bk << ", kv cache " << dtype_name(kv));
    LoadedModel l = load_tiny(bk, kind);
    check_batchings_equal_token_at_a_time(l, kv, 29, 8);
    check_chat_prefix_reuse_equals_fresh(l, kv, 3, 4);
}

TEST_CASE("families: broken metadata and missing tensors are load errors naming the problem", "[families]") {
    auto ref = make_backend("reference");
    auto load_error = [&](const std::string& kind, const std::set<std::string>& keys, const std::set<std::string>& tensors,
                          const std::function<void(GgufWriter&)>& edit) {
        const std::string out = test::temp_path(kind + "_broken.gguf");
        rewrite_gguf(test_data(kind + "_tiny.gguf"), out, keys, tensors, edit);
        std::string what = "(loaded)";
        try {
            load_model(out, *ref);
        } catch (const std::exception& e) {
            what = e.what();
        }
        std::filesystem::remove(out);
        return what;
    };
    for (const std::string& kind : kFamilies) CHECK(load_error(kind, {}, {}, {}) == "(loaded)");
    // llama: a head count that does not divide, Llama 3 factors of the wrong length, a rope
    // scaling lockstep does not know.
    CHECK_THAT(load_error("llama", {"llama.attention.head_count_kv"}, {}, [](GgufWriter& w) { w.set_u32("llama.attention.head_count_kv", 3); }),
               Catch::Contains("llama: inconsistent"));
    CHECK_THAT(load_error("llama", {"llama.rope.dimension_count"}, {}, [](GgufWriter& w) { w.set_u32("llama.rope.dimension_count", 8); }),
               Catch::Contains("rope_freqs.weight"));
    CHECK_THAT(load_error("llama", {"llama.rope.scaling.type"}, {}, [](GgufWriter& w) { w.set_string("llama.rope.scaling.type", "longrope"); }),
               Catch::Contains("rope scaling type 'longrope' is not supported"));
    CHECK_THAT(load_error("llama", {}, {"blk.2.ffn_up.weight"}, {}), Catch::Contains("blk.2.ffn_up.weight"));
    // granite: a multiplier that is not a number, Granite MoE's shared experts and Granite
    // without rope (neither built here: refused, not left out).
    CHECK_THAT(load_error("granite", {"granite.residual_scale"}, {}, [](GgufWriter& w) { w.set_f32("granite.residual_scale", -1.f); }),
               Catch::Contains("residual_scale"));
    CHECK_THAT(load_error("granite", {}, {}, [](GgufWriter& w) { w.set_u32("granite.expert_shared_feed_forward_length", 64); }),
               Catch::Contains("shared experts"));
    CHECK_THAT(load_error("granite", {}, {}, [](GgufWriter& w) { w.set_bool("granite.rope.scaling.finetuned", false); }),
               Catch::Contains("without rope"));
    // mistral3: the temperature needs the YaRN original context it steps by.
    CHECK_THAT(load_error("mistral3", {"mistral3.rope.scaling.original_context_length", "mistral3.rope.scaling.type"}, {}, {}),
               Catch::Contains("temperature_scale needs rope.scaling.original_context_length"));
    // phi3: LongRoPE factors come in pairs: one alone is refused, not ignored.
    CHECK_THAT(load_error("phi3", {}, {}, [](GgufWriter& w) {
                   std::vector<uint8_t> ones(4 * sizeof(float));
                   for (size_t i = 0; i < 4; ++i) std::memcpy(ones.data() + 4 * i, &kOne, 4);
                   w.add_tensor("rope_factors_long.weight", DType::F32, {4}, std::move(ones));
               }),
               Catch::Contains("LongRoPE"));
    // olmo2: its post-norms are required; OLMo 3's sliding layers are refused.
    CHECK_THAT(load_error("olmo2", {}, {"blk.1.post_ffw_norm.weight"}, {}), Catch::Contains("blk.1.post_ffw_norm.weight"));
    CHECK_THAT(load_error("olmo2", {}, {}, [](GgufWriter& w) { w.set_u32("olmo2.attention.sliding_window", 4096); }),
               Catch::Contains("sliding-window layers (OLMo 3)"));
    // deepseek2: a file from before the split attn_kv_b (refused with the way out), a gating
    // function lockstep does not know, expert groups that do not divide the experts.
    CHECK_THAT(load_error("deepseek2", {"deepseek2.attention.key_length_mla"}, {}, {}), Catch::Contains("convert the model again"));
    CHECK_THAT(load_error("deepseek2", {"deepseek2.expert_gating_func"}, {}, [](GgufWriter& w) { w.set_u32("deepseek2.expert_gating_func", 3); }),
               Catch::Contains("deepseek2.expert_gating_func"));
    CHECK_THAT(load_error("deepseek3", {"deepseek2.expert_group_count"}, {}, [](GgufWriter& w) { w.set_u32("deepseek2.expert_group_count", 3); }),
               Catch::Contains("deepseek2.expert_group_count"));
    CHECK_THAT(load_error("deepseek2", {"deepseek2.attention.head_count_kv"}, {}, [](GgufWriter& w) { w.set_u32("deepseek2.attention.head_count_kv", 4); }),
               Catch::Contains("head_count_kv must be 1"));
    // glm4moe: the shared experts are required where expert_shared_count says so.
    CHECK_THAT(load_error("glm4moe", {}, {"blk.1.ffn_up_shexp.weight"}, {}), Catch::Contains("blk.1.ffn_up_shexp.weight"));
    // qwen3: the q/k norms are required.
    CHECK_THAT(load_error("qwen3", {}, {"blk.0.attn_k_norm.weight"}, {}), Catch::Contains("blk.0.attn_k_norm.weight"));
    // gemma2: a window longer than the context, a negative soft-cap.
    CHECK_THAT(load_error("gemma2", {"gemma2.attention.sliding_window"}, {}, [](GgufWriter& w) { w.set_u32("gemma2.attention.sliding_window", 1u << 20); }),
               Catch::Contains("larger than the model's context"));
    CHECK_THAT(load_error("gemma2", {"gemma2.attn_logit_softcapping"}, {}, [](GgufWriter& w) { w.set_f32("gemma2.attn_logit_softcapping", -5.f); }),
               Catch::Contains("soft-caps"));
    // M-RoPE (one reader for Qwen3-VL and Qwen3.5): sections that do not add up to the rotated
    // pairs, a hostile huge section that would wrap a sum, and Qwen3-VL without its sections.
    for (const std::string kind : {"qwen3vl", "qwen35"}) {
        INFO(kind);
        const std::string key = kind + ".rope.dimension_sections";
        CHECK_THAT(load_error(kind, {key}, {}, [&](GgufWriter& w) { w.set_i32_array(key, {3, 3, 3, 0}); }),
                   Catch::Contains(kind + ": rope.dimension_sections must hold the rope's"));
        CHECK_THAT(load_error(kind, {key}, {}, [&](GgufWriter& w) { w.set_i32_array(key, {4, 0x7fffffff, -0x7fffffff, 0}); }),
                   Catch::Contains("pairs (time, height, width)"));
        CHECK_THAT(load_error(kind, {key}, {}, [&](GgufWriter& w) { w.set_i32_array(key, {8}); }), Catch::Contains("must hold the rope's"));
    }
    CHECK_THAT(load_error("qwen3vl", {"qwen3vl.rope.dimension_sections"}, {}, {}), Catch::Contains("missing qwen3vl.rope.dimension_sections"));
    CHECK(load_error("qwen35", {"qwen35.rope.dimension_sections"}, {}, {}) == "(loaded)");  // Qwen3-Next has none: plain NeoX rope
}

// Multi-head latent attention keeps one row of kv_lora_rank + n_rot values per token and layer,
// V read from inside K: what DeepSeek's cache costs against a cache of full heads (the point of
// MLA). The rows survive a save and load of the sequence; a file from before the converter
// split attn_kv_b is refused with the way out.
TEST_CASE("deepseek2: the cache holds the latent and its rope part only, and saves and loads", "[families][kv]") {
    const std::string bk = GENERATE(from_range(all_backend_names()));
    INFO("backend " << bk);
    for (const std::string kind : {"deepseek2", "deepseek3"}) {
        INFO(kind);
        LoadedModel l = load_tiny(bk, kind);
        const Hparams& hp = l.model->hparams();
        const GgufFile& f = l.model->gguf();
        const int64_t rank = f.get_int("deepseek2.attention.kv_lora_rank"), rot = f.get_int("deepseek2.rope.dimension_count");
        const int64_t H = f.get_int("deepseek2.attention.head_count"), dk = f.get_int("deepseek2.attention.key_length_mla"),
                      dv = f.get_int("deepseek2.attention.value_length_mla");
        const int64_t n_ctx = 64;
        auto s = new_session(l, n_ctx, 8, DType::F16);
        for (int64_t il = 0; il < hp.n_layer; ++il) {
            CHECK(s->kv().v_in_k(int(il)));
            CHECK(s->kv().k(int(il))->ne[0] == rank + rot);
            CHECK(s->kv().v(int(il))->ne[0] == rank);
            CHECK(s->kv().v(int(il))->offset == s->kv().k(int(il))->offset);
        }
        // f16 bytes per token: the latent cache against full K and V heads
        const size_t per_token = size_t(hp.n_layer * (rank + rot) * 2), full = size_t(hp.n_layer * H * (dk + dv) * 2);
        CHECK(s->kv().bytes() <= per_token * size_t(n_ctx) + size_t(hp.n_layer) * 256);
        WARN(kind << ": the cache holds " << per_token << " bytes per token (f16) where full heads would take " << full);

        const std::vector<int32_t> prompt = random_tokens(20, 7, l.n_vocab()), more = random_tokens(5, 8, l.n_vocab());
        s->eval(prompt, 0);
        const std::vector<uint8_t> saved = s->save_seq(0);
        CHECK(saved.size() == s->seq_state_bytes(0));
        auto t = new_session(l, n_ctx, 8, DType::F16);
        t->load_seq(0, saved.data(), saved.size());
        REQUIRE_BIT_IDENTICAL(t->eval(more, 0), s->eval(more, 0), l.n_vocab());
    }
}
