// The CUDA backend's host side, checked without a GPU: the block arithmetic its kernels run
// (backends/cuda/quant_device.cuh, compiled here by the host compiler) against the reference bit for
// bit, what supports() accepts and refuses, index checks, error messages, and the registry's
// answers. The kernels themselves run in the cuda_suite CTest entry (the op table, the KV
// contract tests and the model tests with LOCKSTEP_TEST_BACKENDS=cuda), skipped with its
// reason where the machine has no CUDA device.
#if LOCKSTEP_HAVE_CUDA
#include <catch2/catch.hpp>

#include <cstring>
#include <iterator>
#include <random>
#include <stdexcept>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/launch_context.h"
#include "backends/cuda/launch_record.h"
#include "backends/cuda/quant_device.cuh"
#include "backends/registry.h"
#include "core/models/model.h"
#include "core/ir/ops.h"
#include "core/quant/iq_access.h"
#include "core/quant/quant.h"
#include "tests/ops/op_cases.h"
#include "tests/support/graph_nodes.h"
#include "tests/support/test_util.h"
#include "core/models/registry.h"
#include "core/ref/ref_backend.h"

using namespace ls;

namespace {

const DType kQuantWeights[] = {DType::Q4_0,    DType::Q4_1,   DType::Q5_0,  DType::Q5_1,    DType::Q8_0,  DType::Q2_K,
                               DType::Q3_K,    DType::Q4_K,   DType::Q5_K,  DType::Q6_K,    DType::IQ4_NL, DType::IQ4_XS,
                               DType::MXFP4,   DType::TQ1_0,  DType::TQ2_0, DType::IQ2_XXS, DType::IQ2_XS, DType::IQ2_S,
                               DType::IQ3_XXS, DType::IQ3_S,  DType::IQ1_S, DType::IQ1_M};

float row_dot_hd(DType w, const uint8_t* wr, const uint8_t* ar, int64_t nb) {
    switch (w) {
        case DType::Q4_0: return cudaq::row_dot<DType::Q4_0>(wr, ar, nb);
        case DType::Q4_1: return cudaq::row_dot<DType::Q4_1>(wr, ar, nb);
        case DType::Q5_0: return cudaq::row_dot<DType::Q5_0>(wr, ar, nb);
        case DType::Q5_1: return cudaq::row_dot<DType::Q5_1>(wr, ar, nb);
        case DType::Q8_0: return cudaq::row_dot<DType::Q8_0>(wr, ar, nb);
        case DType::Q2_K: return cudaq::row_dot<DType::Q2_K>(wr, ar, nb);
        case DType::Q3_K: return cudaq::row_dot<DType::Q3_K>(wr, ar, nb);
        case DType::Q4_K: return cudaq::row_dot<DType::Q4_K>(wr, ar, nb);
        case DType::Q5_K: return cudaq::row_dot<DType::Q5_K>(wr, ar, nb);
        case DType::Q6_K: return cudaq::row_dot<DType::Q6_K>(wr, ar, nb);
        case DType::IQ4_NL: return cudaq::row_dot<DType::IQ4_NL>(wr, ar, nb);
        case DType::IQ4_XS: return cudaq::row_dot<DType::IQ4_XS>(wr, ar, nb);
        case DType::MXFP4: return cudaq::row_dot<DType::MXFP4>(wr, ar, nb);
        case DType::TQ1_0: return cudaq::row_dot<DType::TQ1_0>(wr, ar, nb);
        case DType::TQ2_0: return cudaq::row_dot<DType::TQ2_0>(wr, ar, nb);
        case DType::IQ2_XXS: return cudaq::row_dot<DType::IQ2_XXS>(wr, ar, nb);
        case DType::IQ2_XS: return cudaq::row_dot<DType::IQ2_XS>(wr, ar, nb);
        case DType::IQ2_S: return cudaq::row_dot<DType::IQ2_S>(wr, ar, nb);
        case DType::IQ3_XXS: return cudaq::row_dot<DType::IQ3_XXS>(wr, ar, nb);
        case DType::IQ3_S: return cudaq::row_dot<DType::IQ3_S>(wr, ar, nb);
        case DType::IQ1_S: return cudaq::row_dot<DType::IQ1_S>(wr, ar, nb);
        case DType::IQ1_M: return cudaq::row_dot<DType::IQ1_M>(wr, ar, nb);
        default: throw std::logic_error("not a quantized weight type");
    }
}

// quantize_row through the kernels' per-block quantizer.
std::vector<uint8_t> quant_row_hd(DType t, const std::vector<float>& x) {
    const int64_t n = int64_t(x.size());
    std::vector<uint8_t> out(row_bytes(t, n), 0xAB);
    const int be = cudaq::quant_block_elems(t);
    for (int64_t b = 0; b < n / be; ++b) cudaq::quant_block(t, x.data() + b * be, out.data(), b);
    return out;
}

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// Activations with the features that make rounding matter: outliers, exact ties between a
// value and its negation, a zero block, values on .5 quantization steps.
std::vector<float> activations(std::mt19937& rng, int64_t n) {
    std::vector<float> x = test::randn(rng, size_t(n), 1.0f);
    for (int64_t i = 0; i < n; i += 97) x[size_t(i)] *= 40.0f;
    if (n >= 64) {
        x[3] = 2.5f;
        x[4] = -2.5f;  // |x| ties: the reference keeps the first
    }
    if (n >= 512)
        for (int64_t i = 256; i < 288; ++i) x[size_t(i)] = 0.0f;  // a zero block of 32 (and part of a 256 one)
    return x;
}

}  // namespace

TEST_CASE("cuda: activation quantizers equal quantize_row byte for byte", "[cuda]") {
    std::mt19937 rng(11);
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q8_1, DType::Q8_K, DType::Q4_0}) {
        for (int64_t n : {int64_t(256), int64_t(512), int64_t(1024)}) {
            INFO(dtype_name(t) << " n=" << n);
            std::vector<float> x = activations(rng, n);
            if (t == DType::Q8_K && n == 512)
                for (int64_t i = 256; i < 512; ++i) x[size_t(i)] = 0.0f;  // an all-zero Q8_K block
            std::vector<uint8_t> want(row_bytes(t, n));
            quantize_row(t, x.data(), want.data(), n);
            CHECK(quant_row_hd(t, x) == want);
        }
    }
}

TEST_CASE("cuda: per-block dot products and float chains equal vec_dot_ref bit for bit", "[cuda]") {
    std::mt19937 rng(12);
    for (DType w : kQuantWeights) {
        const DType at = vec_dot_type(w);
        for (int64_t K : {int64_t(256), int64_t(1024), int64_t(2560)}) {  // 2560: 80 legacy blocks, more than a warp
            INFO(dtype_name(w) << " K=" << K);
            const std::vector<uint8_t> wrows = test::quantized_random(rng, w, K, 4);
            for (int r = 0; r < 4; ++r) {
                const std::vector<float> x = activations(rng, K);
                std::vector<uint8_t> a(row_bytes(at, K));
                quantize_row(at, x.data(), a.data(), K);
                const uint8_t* wr = wrows.data() + r * row_bytes(w, K);
                const float want = vec_dot_ref(w, wr, a.data(), K);
                const float got = row_dot_hd(w, wr, a.data(), K / block_size(w));
                CHECK(bits(got) == bits(want));
            }
        }
    }
    // MXFP4 blocks of random bytes: every exponent in turn, then only the smallest (the
    // subnormal scales 2^-128 and 2^-127, e = 0 and 1, whose terms would vanish beside the others).
    const int64_t K = 256 * 32;
    for (int e_mod : {256, 4}) {
        INFO("mxfp4 exponents mod " << e_mod);
        std::vector<uint8_t> wr(size_t(row_bytes(DType::MXFP4, K)));
        for (auto& v : wr) v = uint8_t(rng());
        for (int b = 0; b < 256; ++b) wr[size_t(b) * sizeof(qb::BlockMXFP4)] = uint8_t(b % e_mod);
        const std::vector<float> x = activations(rng, K);
        std::vector<uint8_t> a(row_bytes(DType::Q8_0, K));
        quantize_row(DType::Q8_0, x.data(), a.data(), K);
        CHECK(bits(cudaq::row_dot<DType::MXFP4>(wr.data(), a.data(), 256)) == bits(vec_dot_ref(DType::MXFP4, wr.data(), a.data(), K)));
    }
}

// The decode kernel's wide Q4_K lanes (one 16-byte load each) against the block's isum, on
// blocks of random bytes (every scale, min and nibble pattern) and random activations: the
// eight lanes' integers must add up to the same block sums.
TEST_CASE("cuda: Q4_K's wide decode lanes add up to the block's integer sums", "[cuda]") {
    std::mt19937 rng(31);
    for (int rep = 0; rep < 256; ++rep) {
        alignas(16) qb::BlockQ4_K x;
        auto* p = reinterpret_cast<uint8_t*>(&x);
        for (size_t i = 0; i < sizeof(x); ++i) p[i] = uint8_t(rng());
        const std::vector<float> a = activations(rng, qb::QK_K);
        alignas(4) qb::BlockQ8_K y;
        quantize_row(DType::Q8_K, a.data(), reinterpret_cast<uint8_t*>(&y), qb::QK_K);
        cudaq::Isum lanes;
        for (int j = 0; j < 8; ++j) {
            const cudaq::Isum l = cudaq::q4k_lane_isum(x, y, j);
            lanes.i += l.i;
            lanes.m += l.m;
        }
        const cudaq::Isum want = cudaq::isum<DType::Q4_K>(x, y);
        CHECK(lanes.i == want.i);
        CHECK(lanes.m == want.m);
    }
}

// A fused pair writes the second node's output while it still reads the first node's input:
// the allocator may have put that output over part of the input (dead once the first node
// ran), as it did in the tiny Gemma 4 graph (a residual add's output 64 bytes before the
// norm's input), where the fused kernel then read elements another thread had written.
// An empty argument (the functor of an elementwise kernel) is one byte of whatever was on the
// stack. Recorded as such, it made every decode step set every gelu-mul node of the kept graph
// again (6 of the 13 nodes a step set on the tiny Gemma 3, and a different count under ASan,
// where the stack differs).
TEST_CASE("cuda: a recorded launch's empty arguments do not differ from step to step", "[cuda]") {
    struct Functor {};
    auto record = [](unsigned char stack_garbage) {
        Functor f;
        std::memset(static_cast<void*>(&f), stack_garbage, sizeof f);
        cuda::LaunchRecord r;
        r.begin(nullptr, dim3(1), dim3(32));
        r.put(int64_t(7));
        r.put(f);
        r.put(int32_t(3));
        return r;
    };
    const cuda::LaunchRecord a = record(0xAB), b = record(0x11);
    CHECK(a.same_launch(b));
    CHECK(a.args.size() == b.args.size());
    cuda::LaunchRecord c = record(0xAB);
    c.args[c.offsets[2]] ^= 1;  // a real argument that differs still does
    CHECK_FALSE(a.same_launch(c));
}

TEST_CASE("cuda: a fused pair's output may not lie over part of the first node's input", "[cuda]") {
    std::vector<uint8_t> mem(4096);
    Buffer buf;
    buf.impl = mem.data();
    auto row = [&](size_t offset, int64_t n, int64_t rows) {
        Tensor t;
        t.buffer = &buf;
        t.offset = offset;
        t.ne[0] = n;
        t.ne[1] = rows;
        t.nb[0] = 4;
        t.nb[1] = t.nb[2] = t.nb[3] = size_t(4 * n);
        return t;
    };
    const Tensor in = row(1280, 64, 2);                                 // bytes [1280, 1792)
    CHECK(cuda::fused_output_safe(row(256, 64, 4), in));                // [256, 1280): apart
    CHECK(cuda::fused_output_safe(row(1792, 64, 1), in));               // just after
    CHECK(cuda::fused_output_safe(row(1280, 64, 2), in));               // the same view
    CHECK_FALSE(cuda::fused_output_safe(row(1216, 64, 2), in));         // 64 bytes before it
    CHECK_FALSE(cuda::fused_output_safe(row(1536, 64, 2), in));         // its second row
    CHECK_FALSE(cuda::fused_output_safe(row(1280, 128, 1), in));        // the same bytes as one row
}

// value4 packs four weights with bit tricks (no borrows between bytes); each byte must be the
// element the per-element helpers (those dequantization uses) read, on blocks of random bytes,
// so every bit pattern of the packed fields occurs.
template <DType W> void check_value4(std::mt19937& rng, int (*elem)(const typename cudaq::WDot<W>::WB&, int)) {
    using D = cudaq::WDot<W>;
    constexpr int E = cudaq::kBlockElems<W>;
    for (int rep = 0; rep < 64; ++rep) {
        typename D::WB x;
        auto* p = reinterpret_cast<uint8_t*>(&x);
        for (size_t i = 0; i < sizeof(x); ++i) p[i] = uint8_t(rng());
        for (int e = 0; e < E; e += 4) {
            const uint32_t v = D::value4(x, e);
            for (int i = 0; i < 4; ++i) {
                INFO(dtype_name(W) << " element " << e + i);
                CHECK(int(int8_t(uint8_t(v >> (8 * i)))) == elem(x, e + i));
            }
        }
    }
}

TEST_CASE("cuda: weights packed four to a word equal the per-element values", "[cuda]") {
    std::mt19937 rng(21);
    using namespace cudaq;
    check_value4<DType::Q4_0>(rng, [](const BlockQ4_0& x, int e) { return nibble(x.qs, e) - 8; });
    check_value4<DType::Q4_1>(rng, [](const BlockQ4_1& x, int e) { return nibble(x.qs, e); });
    check_value4<DType::Q5_0>(rng, [](const BlockQ5_0& x, int e) { return (nibble(x.qs, e) | int((ld32(x.qh) >> e) & 1) << 4) - 16; });
    check_value4<DType::Q5_1>(rng, [](const BlockQ5_1& x, int e) { return nibble(x.qs, e) | int((ld32(x.qh) >> e) & 1) << 4; });
    check_value4<DType::Q8_0>(rng, [](const BlockQ8_0& x, int e) { return int(x.qs[e]); });
    check_value4<DType::Q2_K>(rng, [](const BlockQ2_K& x, int e) { return q2k_value(x, e); });
    check_value4<DType::Q3_K>(rng, [](const BlockQ3_K& x, int e) { return q3k_value(x, e); });
    check_value4<DType::Q4_K>(rng, [](const BlockQ4_K& x, int e) { return q4k_value(x.qs, e); });
    check_value4<DType::Q5_K>(rng, [](const BlockQ5_K& x, int e) { return q5k_value(x, e); });
    check_value4<DType::Q6_K>(rng, [](const BlockQ6_K& x, int e) { return q6k_value(x, e); });
    check_value4<DType::IQ4_NL>(rng, [](const BlockIQ4_NL& x, int e) { return iq4nl_level(nibble(x.qs, e)); });
    check_value4<DType::IQ4_XS>(rng, [](const BlockIQ4_XS& x, int e) { return iq4xs_value(x, e); });
    check_value4<DType::MXFP4>(rng, [](const BlockMXFP4& x, int e) { return mxfp4_level(nibble(x.qs, e)); });
    check_value4<DType::TQ1_0>(rng, [](const BlockTQ1_0& x, int e) { return tq1_value(x, e); });
    check_value4<DType::TQ2_0>(rng, [](const BlockTQ2_0& x, int e) { return tq2_value(x, e); });
    check_value4<DType::IQ2_XXS>(rng, [](const BlockIQ2_XXS& x, int e) { return iq_value(x, e); });
    check_value4<DType::IQ2_XS>(rng, [](const BlockIQ2_XS& x, int e) { return iq_value(x, e); });
    check_value4<DType::IQ2_S>(rng, [](const BlockIQ2_S& x, int e) { return iq_value(x, e); });
    check_value4<DType::IQ3_XXS>(rng, [](const BlockIQ3_XXS& x, int e) { return iq_value(x, e); });
    check_value4<DType::IQ3_S>(rng, [](const BlockIQ3_S& x, int e) { return iq_value(x, e); });
    check_value4<DType::IQ1_S>(rng, [](const BlockIQ1_S& x, int e) { return iq_value(x, e); });
    check_value4<DType::IQ1_M>(rng, [](const BlockIQ1_M& x, int e) { return iq_value(x, e); });
}

// The grid i-quants' sub-block scales and block scale as the device reads them, against
// iq_access.h, on blocks of random bytes (every scale bit pattern).
template <DType W> void check_iq_scales(std::mt19937& rng) {
    using D = cudaq::WDot<W>;
    static_assert(D::kSub == qb::kIqSub<typename D::WB> && D::kDen == qb::kIqDen<typename D::WB>);
    for (int rep = 0; rep < 256; ++rep) {
        typename D::WB x;
        auto* p = reinterpret_cast<uint8_t*>(&x);
        for (size_t i = 0; i < sizeof(x); ++i) p[i] = uint8_t(rng());
        INFO(dtype_name(W));
        for (int s = 0; s < qb::QK_K / D::kSub; ++s) CHECK(D::sub_scale(x, s) == qb::iq_scale(x, s));
        if constexpr (W == DType::IQ1_M) CHECK(bits(cudaq::iq_d(x)) == bits(fp16_to_fp32(qb::iq1m_d(x))));
        else CHECK(bits(cudaq::iq_d(x)) == bits(fp16_to_fp32(x.d)));
    }
}

TEST_CASE("cuda: the grid i-quants' codebooks, signs and scales as the device reads them", "[cuda]") {
    using namespace cudaq;
    // The device's tables are the words of iq_grid_words.h, the host's (iq_grids.h) the same
    // words joined: entry i, word h is the host entry's bytes 4h..4h+3. The IQ2/IQ3 values are
    // all >= 1 (sign4 negates without carries only then), the IQ1 values -1, 0 or 1 (iq1_value4).
    const auto check = [](const auto& host, uint32_t (*dev)(int), int words, int lo, int hi) {
        int bad = 0;
        for (size_t i = 0; i < std::size(host); ++i)
            for (int h = 0; h < words; ++h) {
                const uint32_t w = dev(int(words * i) + h);
                bad += w != uint32_t(uint64_t(host[i]) >> (32 * h));
                for (int j = 0; j < 4; ++j) bad += int8_t(w >> (8 * j)) < lo || int8_t(w >> (8 * j)) > hi;
            }
        return bad;
    };
    CHECK(check(qb::kIQ2XXSGrid, iq2xxs_grid, 2, 1, 127) == 0);
    CHECK(check(qb::kIQ2XSGrid, iq2xs_grid, 2, 1, 127) == 0);
    CHECK(check(qb::kIQ2SGrid, iq2s_grid, 2, 1, 127) == 0);
    CHECK(check(qb::kIQ3XXSGrid, iq3xxs_grid, 1, 1, 127) == 0);
    CHECK(check(qb::kIQ3SGrid, iq3s_grid, 1, 1, 127) == 0);
    CHECK(check(qb::kIQ1SGrid, iq1s_grid, 2, -1, 1) == 0);
    int bad = 0;
    for (int i = 0; i < 128; ++i) bad += iq_signs(i) != qb::kIQSigns[size_t(i)];
    CHECK(bad == 0);
    std::mt19937 rng(22);
    check_iq_scales<DType::IQ2_XXS>(rng);
    check_iq_scales<DType::IQ2_XS>(rng);
    check_iq_scales<DType::IQ2_S>(rng);
    check_iq_scales<DType::IQ3_XXS>(rng);
    check_iq_scales<DType::IQ3_S>(rng);
    check_iq_scales<DType::IQ1_S>(rng);
    check_iq_scales<DType::IQ1_M>(rng);
}

TEST_CASE("cuda: float-weight products in canon_sum equal vec_dot_ref", "[cuda]") {
    std::mt19937 rng(13);
    for (DType w : {DType::F32, DType::F16, DType::BF16}) {
        const int64_t K = 640;
        const DType at = vec_dot_type(w);
        const std::vector<uint8_t> wr = test::quantized_random(rng, w, K, 1);
        const std::vector<float> x = activations(rng, K);
        std::vector<uint8_t> a(row_bytes(at, K));
        quantize_row(at, x.data(), a.data(), K);
        const float s = canon_sum_of(K, [&](int64_t e) { return cudaq::prod_f(w, wr.data(), a.data(), e); });
        INFO(dtype_name(w));
        CHECK(bits(s) == bits(vec_dot_ref(w, wr.data(), a.data(), K)));
    }
}

TEST_CASE("cuda: element dequantization equals dequantize_row for every type", "[cuda]") {
    std::mt19937 rng(14);
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                    DType::Q8_1, DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::Q8_K,
                    DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4, DType::TQ1_0, DType::TQ2_0, DType::IQ2_XXS, DType::IQ2_XS,
                    DType::IQ2_S, DType::IQ3_XXS, DType::IQ3_S, DType::IQ1_S, DType::IQ1_M}) {
        INFO(dtype_name(t));
        REQUIRE(cudaq::deq_supported(t));
        const int64_t K = 512;
        const std::vector<uint8_t> row = test::quantized_random(rng, t, K, 1, 3.0f);
        std::vector<float> want(size_t(K), 0.f);
        dequantize_row(t, row.data(), want.data(), K);
        int mismatches = 0;
        for (int64_t e = 0; e < K; ++e) mismatches += bits(cudaq::deq_elem(t, row.data(), e)) != bits(want[size_t(e)]);
        CHECK(mismatches == 0);
    }
    // MXFP4 blocks of random bytes: every exponent, the subnormal scales 2^-128 and 2^-127
    // (e = 0, 1) among them, at the odd addresses of a row of 17-byte blocks.
    std::vector<uint8_t> mx(size_t(256) * sizeof(qb::BlockMXFP4));
    for (auto& v : mx) v = uint8_t(rng());
    for (int b = 0; b < 256; ++b) mx[size_t(b) * sizeof(qb::BlockMXFP4)] = uint8_t(b);
    std::vector<float> want(size_t(256) * qb::QK);
    dequantize_row(DType::MXFP4, mx.data(), want.data(), int64_t(want.size()));
    int mismatches = 0;
    for (int64_t e = 0; e < int64_t(want.size()); ++e) mismatches += bits(cudaq::deq_elem(DType::MXFP4, mx.data(), e)) != bits(want[size_t(e)]);
    CHECK(mismatches == 0);
    CHECK_FALSE(cudaq::deq_supported(DType::I32));
}

TEST_CASE("cuda: supports() accepts every node of the op table and refuses what the kernels cannot run", "[cuda]") {
    // Every node the op-test table builds must be accepted, or the GPU run would refuse it.
    test::for_each_op_case_node([](const std::string& where, const Tensor& n) {
        INFO(where << ": " << op_name(n.op) << " " << shape_str(n));
        CHECK(cuda::supports_node(n));
    });
    Graph g;
    Tensor* x = g.new_tensor(DType::F32, {256, 4});
    Tensor* idx = g.new_tensor(DType::I32, {4});
    idx->kind = TensorKind::Input;  // index data is a graph input (core/ir/index_inputs.h)
    Tensor* w8k = g.new_tensor(DType::Q8_K, {256, 8});  // an activation type, not a weight type
    CHECK_FALSE(cuda::supports_node(*ops::mul_mat(g, w8k, x)));
    Tensor* wi = g.new_tensor(DType::I32, {256, 8});
    CHECK_FALSE(cuda::supports_node(*ops::get_rows(g, wi, idx)));
    Tensor* wq = g.new_tensor(DType::Q4_K, {256, 8});
    CHECK(cuda::supports_node(*ops::mul_mat(g, wq, x)));
    CHECK(cuda::supports_node(*ops::get_rows(g, wq, idx)));
    // Rows computed on a device: the launcher cannot read them on the host, so it refuses.
    CHECK_FALSE(cuda::supports_node(*ops::get_rows(g, wq, g.new_tensor(DType::I32, {4}))));
    // A set_rows into a K-quant cache (the builder refuses it too; the backend must not rely on that).
    Tensor* bad_set = g.new_tensor(DType::Q4_K, {256, 8});
    bad_set->op = OpId::SET_ROWS;
    bad_set->src[0] = x;
    bad_set->src[1] = idx;
    CHECK_FALSE(cuda::supports_node(*bad_set));
    // Attention over a Q4_1 cache.
    Tensor* q = g.new_tensor(DType::F32, {32, 2, 1});
    Tensor* kc = g.new_tensor(DType::Q4_1, {32, 16});
    Tensor* pos = g.new_tensor(DType::I32, {1});
    pos->kind = TensorKind::Input;
    Tensor* att = g.new_tensor(DType::F32, {32, 2, 1});
    att->op = OpId::ATTENTION;
    att->src[0] = q;
    att->src[1] = kc;
    att->src[2] = kc;
    att->src[3] = pos;
    att->src[4] = pos;
    CHECK_FALSE(cuda::supports_node(*att));
    kc->type = DType::Q8_0;
    CHECK(cuda::supports_node(*att));
    // Unary ops need contiguous memory; a leaf is no op.
    Tensor* strided = g.new_tensor(DType::F32, {8, 4});
    strided->nb[1] = 64;
    strided->nb[2] = strided->nb[3] = 256;
    Tensor* s = g.new_tensor(DType::F32, {8, 4});
    s->op = OpId::SILU;
    s->src[0] = strided;
    CHECK_FALSE(cuda::supports_node(*s));
    CHECK_FALSE(cuda::supports_node(*x));
}

TEST_CASE("cuda: error messages name the call, the error and the memory", "[cuda]") {
    REQUIRE_NOTHROW(cuda::check(cudaSuccess, "cudaFree(p)", "x.cu", 1));
    try {
        cuda::check(cudaErrorMemoryAllocation, "cudaMalloc(&p, n)", "buf.cu", 42);
        FAIL("no exception");
    } catch (const std::runtime_error& e) {
        const std::string m = e.what();
        CHECK_THAT(m, Catch::Contains("cudaMalloc(&p, n)") && Catch::Contains("buf.cu:42") &&
                          Catch::Contains("cudaErrorMemoryAllocation") && Catch::Contains(cudaGetErrorString(cudaErrorMemoryAllocation)));
    }
    const std::string oom = cuda::oom_message(1, "NVIDIA H100", size_t(3) << 30, size_t(512) << 20, size_t(80) << 30, "a buffer");
    CHECK(oom == "CUDA device 1 (NVIDIA H100): out of memory allocating 3072.0 MiB for a buffer (512.0 MiB free of 81920.0 MiB)");
}

TEST_CASE("cuda: the registry reports the backend built and its devices", "[cuda]") {
    CHECK(backend_built("cuda"));
    const int n = backend_device_count("cuda");
    CHECK(n == cuda_device_count());
    int listed = 0;
    for (const DeviceInfo& d : list_devices()) listed += d.backend == "cuda";
    CHECK(listed == n);
    BackendOptions o;
    o.name = "cuda";
    if (n == 0) {
        WARN("no CUDA device here: the kernels are compiled but not run (see the cuda_suite CTest entry)");
        REQUIRE_THROWS_WITH(create_backend(o), Catch::Contains("no usable NVIDIA GPU") && Catch::Contains("--backend cpu"));
    } else {
        o.device = n;
        REQUIRE_THROWS_WITH(create_backend(o), Catch::Contains("CUDA device " + std::to_string(n) + " does not exist"));
        o.device = 0;
        auto be = create_backend(o);
        CHECK(be->name() == "cuda");
    }
    o.device = -1;
    REQUIRE_THROWS_WITH(create_backend(o), Catch::Contains("--device must be >= 0"));
}

TEST_CASE("cuda: supports() accepts every node of every model graph", "[cuda]") {
    // No GPU here to run them: every node the tiny models' graphs build (every family, f16 and
    // q8_0 caches, a mixed ubatch) must be one the CUDA kernels accept.
    size_t nodes = 0;
    test::for_each_model_graph_node([&](const std::string& where, const Tensor& n) {
        INFO(where << ": " << op_name(n.op) << " " << shape_str(n));
        CHECK(cuda::supports_node(n));
        ++nodes;
    });
    CHECK(nodes > 1000);
}

#endif
