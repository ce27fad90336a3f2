// mul_mat batching invariance (SEMANTICS.md section 4): on the CPU backend the value of a
// (weight row, token) pair must not depend on how many tokens share the batch, so a prompt
// evaluated at once gives bit-identical logits to one evaluated token by token.
#include <catch2/catch.hpp>

#include <cstring>

#include "core/ir/ops.h"
#include "core/quant/quant.h"
#include "tests/ops/op_cases.h"
#include "tests/support/test_util.h"

using namespace ls;

namespace {

std::vector<float> run_mul_mat(Backend& be, DType t, int64_t K, int64_t N, const std::vector<uint8_t>& wq,
                               const float* x, int64_t M) {
    Graph g;
    test::Keep keep;
    Tensor* w = keep.persistent(be, t, {K, N}, wq);
    Tensor* out = ops::mul_mat(g, w, g.input(DType::F32, {K, M}, x, "x"));
    g.mark_output(out);
    std::unique_ptr<Buffer> scratch;
    run_graph(be, g, scratch);
    be.synchronize();
    std::vector<float> r(size_t(N * M));
    read_tensor(be, *out, r.data());
    return r;
}

uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

}  // namespace

TEST_CASE("cpu mul_mat: one token alone equals the same token in a batch, bit for bit", "[ops][mul_mat]") {
    // The tiled kernels compute each (row, token) as one float lane with the same operations
    // whatever the token group (32, 16, 8, 4, 2 or 1 tokens per call) and whichever integer
    // strategy that group size uses; the other types compute each (row, token) with the same
    // per-row dot product. Batches of 37 (32+4+1) and 63 (32+16+8+4+2+1) tokens: the tokens
    // checked fall in every group size. N = 37 leaves a partial row group (rows repeated in
    // unused lanes must not disturb the others).
    const DType types[] = {DType::Q4_0, DType::Q5_0, DType::Q8_0, DType::Q4_K, DType::Q6_K, DType::Q4_1,
                           DType::Q5_1, DType::Q5_K, DType::Q3_K, DType::Q2_K, DType::F16, DType::F32,
                           DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4, DType::TQ1_0, DType::TQ2_0, DType::IQ2_XXS,
                           DType::IQ2_XS, DType::IQ2_S, DType::IQ3_XXS, DType::IQ3_S, DType::IQ1_S, DType::IQ1_M};
    for (auto& be : test::backends_under_test()) {
        if (be->name() != "cpu") continue;  // the guarantee is per backend; this tests the CPU one
        for (DType t : types) {
            for (int64_t N : {int64_t(37), int64_t(256)}) {
                for (int64_t M : {int64_t(37), int64_t(63)}) {
                    const int64_t K = traits(t).block == 256 ? 1024 : 640;
                    std::mt19937 rng(uint32_t(N * 1000 + M * 100) + uint32_t(t));
                    const auto wq = test::quantized_random(rng, t, K, N);
                    const auto x = test::randn(rng, size_t(K * M));
                    const auto all = run_mul_mat(*be, t, K, N, wq, x.data(), M);
                    for (int64_t m : {0, 20, 31, 33, 36, 40, 50, 57, 61, 62}) {
                        if (m >= M) continue;
                        const auto one = run_mul_mat(*be, t, K, N, wq, x.data() + m * K, 1);
                        INFO(dtype_name(t) << " N " << N << " M " << M << " token " << m);
                        int mismatches = 0;
                        for (int64_t n = 0; n < N; ++n) mismatches += bits_of(one[size_t(n)]) != bits_of(all[size_t(m * N + n)]);
                        REQUIRE(mismatches == 0);
                    }
                }
            }
        }
    }
}

TEST_CASE("cpu mul_mat: float weights over many tokens equal one token alone, bit for bit, at every K and group edge",
          "[ops][mul_mat]") {
    // The float kernel packs T tokens per group, a block of rows per task, and runs K in chunks
    // with each (row, token)'s 32 lane partials kept between them; none of that may change a
    // value. K: a tail past the last 32-block (whole registers and scalars), several chunks, a
    // K under one block, whole blocks only (the tree of a whole tile at once). M = 263 crosses token groups and tasks; N = 37 leaves partial row
    // pairs and blocks.
    for (auto& be : test::backends_under_test()) {
        if (be->name() != "cpu") continue;
        for (DType t : {DType::F16, DType::BF16, DType::F32}) {
            for (int64_t K : {int64_t(4096 + 37), int64_t(1056 + 21), int64_t(29), int64_t(2048)}) {
                const int64_t N = 37, M = 263;
                std::mt19937 rng(uint32_t(K) + uint32_t(t));
                const auto wq = test::quantized_random(rng, t, K, N);
                const auto x = test::randn(rng, size_t(K * M));
                const auto all = run_mul_mat(*be, t, K, N, wq, x.data(), M);
                for (int64_t m : {0, 7, 8, 100, 255, 256, 262}) {
                    const auto one = run_mul_mat(*be, t, K, N, wq, x.data() + m * K, 1);
                    INFO(dtype_name(t) << " K " << K << " token " << m);
                    int mismatches = 0;
                    for (int64_t n = 0; n < N; ++n) mismatches += bits_of(one[size_t(n)]) != bits_of(all[size_t(m * N + n)]);
                    REQUIRE(mismatches == 0);
                }
            }
        }
    }
}
