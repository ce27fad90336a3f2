// Every op of the table in tests/ops/op_cases.cpp, on every backend, against the reference.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <tuple>

#include "core/ir/ops.h"
#include "core/rules/attention_rule.h"
#include "core/quant/quant.h"
#include "tests/ops/op_cases.h"
#include "tests/support/test_util.h"
#include "core/ref/ref_backend.h"

using namespace ls;

namespace {

struct Run {
    std::vector<std::vector<uint8_t>> outs;  // as the backend wrote them
    std::vector<DType> types;
    bool skipped = false;  // the backend has no kernel for some op of the case (a failure, in runs_all)
};

Run run_case(Backend& be, const test::OpCase& oc, uint32_t seed) {
    Graph g;
    test::Keep keep;
    std::mt19937 rng(seed);
    std::vector<Tensor*> outs = oc.build(g, be, keep, rng);
    for (Tensor* o : outs) g.mark_output(o);
    Run r;
    if (!test::runs_all(be, g)) {
        r.skipped = true;
        return r;
    }
    std::unique_ptr<Buffer> scratch;
    run_graph(be, g, scratch);
    be.synchronize();
    for (Tensor* o : outs) {
        r.outs.emplace_back(o->nbytes());
        r.types.push_back(o->type);
        read_tensor(be, *o, r.outs.back().data());
    }
    return r;
}

// "" when equal, else the first differing byte (and its float, for f32 outputs).
std::string first_byte_difference(const std::vector<uint8_t>& got, const std::vector<uint8_t>& want, DType type) {
    if (got.size() != want.size()) return "sizes differ: " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
    size_t i = 0, n_diff = 0;
    for (size_t j = 0; j < got.size(); ++j)
        if (got[j] != want[j] && n_diff++ == 0) i = j;
    if (n_diff == 0) return "";
    std::string s = std::to_string(n_diff) + " of " + std::to_string(got.size()) + " bytes differ, first at byte " + std::to_string(i);
    if (type == DType::F32) {
        float a, b;
        std::memcpy(&a, &got[i / 4 * 4], 4);
        std::memcpy(&b, &want[i / 4 * 4], 4);
        s += " (float " + std::to_string(i / 4) + ": " + std::to_string(a) + " vs reference " + std::to_string(b) + ")";
    }
    return s;
}

// Every value of an output that holds numbers (float or block types; not index outputs) is
// finite: byte equality alone would pass a NaN that the reference and a backend share.
void require_finite(const std::vector<uint8_t>& bytes, DType t) {
    if (t == DType::I32 || t == DType::I64 || t == DType::I16 || t == DType::I8) return;
    const DTypeTraits& tr = traits(t);
    const int64_t n = int64_t(bytes.size() / tr.block_bytes) * tr.block;
    std::vector<float> v(static_cast<size_t>(n));
    dequantize_row(t, bytes.data(), v.data(), n);
    for (int64_t i = 0; i < n; ++i) {
        INFO("value " << i << " of the reference's output is " << v[size_t(i)]);
        REQUIRE(std::isfinite(v[size_t(i)]));
    }
}

}  // namespace

TEST_CASE("every op matches the reference on every backend", "[ops]") {
    auto ref = make_reference_backend();
    const auto cases = test::op_cases();
    // LOCKSTEP_OP_KINDS=mul_mat,mul_mat_id: only those kinds (a re-run of the table with a
    // backend setting that changes only some kernels, e.g. LOCKSTEP_CUDA_NO_MMA). Seeds stay
    // those of the whole table.
    const char* kinds_env = std::getenv("LOCKSTEP_OP_KINDS");
    const std::string kinds = kinds_env ? "," + std::string(kinds_env) + "," : "";
    size_t ran = 0;
    for (auto& be : test::backends_under_test()) {
        for (size_t i = 0; i < cases.size(); ++i) {
            const auto& oc = cases[i];
            if (!kinds.empty() && kinds.find("," + oc.kind + ",") == std::string::npos) continue;
            // Fresh random inputs each seed. Under the sanitizers (test::kSanitized) the first
            // seed alone: the second runs the same kernels on the same shapes with other
            // values, which the Release run checks on the CPU and Vulkan, and real GPUs on CUDA;
            // the sanitizers look at where a kernel reads and writes, which the shape decides.
            for (uint32_t seed : {1u, 2u}) {
                if (test::kSanitized && seed != 1) continue;
                INFO(be->name() << ": " << oc.name << " (seed " << seed << ")");
                Run want = run_case(*ref, oc, seed * 1000 + uint32_t(i));
                Run got = run_case(*be, oc, seed * 1000 + uint32_t(i));
                if (got.skipped) break;  // failed in runs_all, naming the op
                ran += seed == 1;
                REQUIRE(got.outs.size() == want.outs.size());
                for (size_t o = 0; o < want.outs.size(); ++o) require_finite(want.outs[o], want.types[o]);
                // Bytes, not a tolerance: the README's claim is bit for bit, and a byte
                // comparison also fails on a NaN or a -0 where the reference has +0.
                for (size_t o = 0; o < got.outs.size(); ++o) {
                    INFO("output " << o << ": " << first_byte_difference(got.outs[o], want.outs[o], got.types[o]));
                    CHECK(got.outs[o] == want.outs[o]);
                }
            }
        }
    }
    REQUIRE(ran > 0);  // a misspelt LOCKSTEP_OP_KINDS must not pass silently
}

TEST_CASE("a backend without a kernel for a weight type refuses it by name, before computing", "[ops]") {
    // A backend names the weight, its type and where it runs instead of failing inside a
    // kernel. The GPU backends now have kernels for the grid i-quants too (the op table checks
    // them bit for bit), so the refusal is shown with Q8_K, the K-quants' activation type,
    // which no GPU backend takes as a weight. IQ2_XXS stays as the case of a weight type a
    // backend may or may not run: run, its values are finite; refused, by name. The host
    // backends accept every node and are not asked about Q8_K (their dot, not supports(),
    // rejects it).
    bool refused_any = false;
    for (auto& be : test::backends_under_test()) {
        for (DType t : {DType::IQ2_XXS, DType::Q8_K}) {
            INFO(be->name() << ": " << dtype_name(t));
            Graph g;
            test::Keep keep;
            std::mt19937 rng(3);
            Tensor* w = keep.persistent(*be, t, {256, 4}, test::quantized_random(rng, t, 256, 4));
            w->name = "blk.0.ffn_up.weight";
            const std::vector<float> x = test::randn(rng, 256);
            Tensor* out = ops::mul_mat(g, w, g.input(DType::F32, {256, 1}, x.data(), "x"));
            g.mark_output(out);
            std::unique_ptr<Buffer> scratch;
            if (be->supports(*out)) {
                if (!is_weight_type(t)) continue;
                run_graph(*be, g, scratch);
                be->synchronize();
                std::vector<float> y(4);
                read_tensor(*be, *out, y.data());
                for (float v : y) CHECK(std::isfinite(v));
            } else {
                refused_any = true;
                // The pointer to the CPU backend comes only with a type a GGUF file can hold.
                const std::string named = be->name() + " backend does not support mul_mat of blk.0.ffn_up.weight [256, 4, 1, 1] " + dtype_name(t);
                if (is_weight_type(t))
                    REQUIRE_THROWS_WITH(run_graph(*be, g, scratch), Catch::Contains(named) && Catch::Contains("--backend cpu"));
                else
                    REQUIRE_THROWS_WITH(run_graph(*be, g, scratch), Catch::Contains(named) && !Catch::Contains("--backend cpu"));
            }
        }
    }
    if (!refused_any) WARN("no backend under test refuses a weight: the refusal path was not exercised (only GPU backends refuse)");
}

TEST_CASE("set_rows rejects an out-of-range index before writing any row", "[ops]") {
    std::vector<std::unique_ptr<Backend>> all = test::backends_under_test();
    all.push_back(make_reference_backend());
    for (auto& be : all) {
        INFO(be->name());
        for (int64_t bad : {int64_t(10), int64_t(-1), int64_t(1) << 40}) {
            Graph g;
            test::Keep keep;
            std::mt19937 rng(7);
            std::vector<uint8_t> init = test::quantized_random(rng, DType::F16, 32, 10);
            Tensor* dst = keep.persistent(*be, DType::F16, {32, 10}, init);
            std::vector<int64_t> idx = {1, bad};
            std::vector<float> src = test::randn(rng, 64);
            Tensor* out = ops::set_rows(g, dst, g.input(DType::F32, {32, 2}, src.data(), "src"),
                                        g.input(DType::I64, {2}, idx.data(), "idx"));
            g.mark_output(out);
            std::unique_ptr<Buffer> scratch;
            REQUIRE_THROWS_WITH(run_graph(*be, g, scratch), Catch::Contains("set_rows: index " + std::to_string(bad)));
            std::vector<uint8_t> after(init.size());
            read_tensor(*be, *dst, after.data());
            CHECK(after == init);  // row 1 was not written either
        }
    }
}

TEST_CASE("mul_mat_id rejects an expert id out of range before writing", "[ops]") {
    // The host backends check every id first; GPU backends read ids on the device and give
    // NaN for a bad one (core/ir/ops.h), so this runs on the host backends.
    std::vector<std::unique_ptr<Backend>> host;
    host.push_back(make_reference_backend());
    host.push_back(test::make_backend("cpu"));
    for (auto& be : host) {
        INFO(be->name());
        for (int32_t bad : {5, -1}) {
            Graph g;
            test::Keep keep;
            std::mt19937 rng(3);
            Tensor* w = keep.persistent(*be, DType::Q8_0, {64, 8, 5}, test::quantized_random(rng, DType::Q8_0, 64, 40));
            std::vector<float> x = test::randn(rng, 64 * 2);
            std::vector<int32_t> ids = {0, 4, 2, bad};
            Tensor* out = ops::mul_mat_id(g, w, g.input(DType::F32, {64, 1, 2}, x.data(), "x"),
                                          g.input(DType::I32, {2, 2}, ids.data(), "ids"));
            g.mark_output(out);
            std::unique_ptr<Buffer> scratch;
            REQUIRE_THROWS_WITH(run_graph(*be, g, scratch), Catch::Contains("expert id " + std::to_string(bad)));
        }
    }
}

TEST_CASE("GPU mul_mat_id gives NaN for an expert id out of range and the reference's bits for the rest", "[ops]") {
    // GPU backends read the ids on the device (core/ir/ops.h): a bad id cannot stop the graph,
    // so its outputs are NaN. Few pairs (one warp per output; Vulkan's subgroup kernels) and many
    // (pairs grouped by expert into tiles, where a bad pair must join no tile).
    auto ref = make_reference_backend();
    for (auto& be : test::backends_under_test()) {
        if (be->name() == "cpu") continue;  // a host backend: refuses bad ids (test above)
        for (DType wt : {DType::Q8_0, DType::Q4_K})  // Vulkan's subgroup kernels: a lane a block, lanes a super-block
        for (int64_t T : {int64_t(3), int64_t(40)}) {
            INFO(be->name() << " " << dtype_name(wt) << " T=" << T);
            const int64_t K = wt == DType::Q4_K ? 256 : 64, N = 8, E = 5, k = 2;
            std::mt19937 rng(uint32_t(7 + T));
            const std::vector<uint8_t> wb = test::quantized_random(rng, wt, K, N * E);
            const std::vector<float> x = test::randn(rng, size_t(K * T));
            std::vector<int32_t> ids(size_t(k * T));
            for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(rng() % E);
            std::vector<int32_t> good = ids;
            const std::vector<size_t> bad = {1, size_t(k * T - 2)};
            ids[bad[0]] = int32_t(E);
            ids[bad[1]] = -1;
            for (size_t b : bad) good[b] = 0;
            auto run = [&](Backend& b, const std::vector<int32_t>& id) {
                Graph g;
                test::Keep keep;
                Tensor* w = keep.persistent(b, wt, {K, N, E}, wb);
                Tensor* out = ops::mul_mat_id(g, w, g.input(DType::F32, {K, 1, T}, x.data(), "x"),
                                              g.input(DType::I32, {k, T}, id.data(), "ids"));
                g.mark_output(out);
                std::unique_ptr<Buffer> scratch;
                run_graph(b, g, scratch);
                b.synchronize();
                std::vector<float> r(size_t(out->nelements()));
                read_tensor(b, *out, r.data());
                return r;
            };
            const std::vector<float> want = run(*ref, good), got = run(*be, ids);
            for (size_t p = 0; p < size_t(k * T); ++p) {
                const bool is_bad = p == bad[0] || p == bad[1];
                for (int64_t n = 0; n < N; ++n) {
                    const float v = got[p * size_t(N) + size_t(n)];
                    if (is_bad) CHECK(std::isnan(v));
                    else CHECK(std::memcmp(&v, &want[p * size_t(N) + size_t(n)], 4) == 0);
                }
            }
        }
    }
}

TEST_CASE("attention rejects a query its ring cannot answer", "[ops]") {
    std::vector<std::unique_ptr<Backend>> all = test::backends_under_test();
    all.push_back(make_reference_backend());
    for (auto& be : all) {
        INFO(be->name());
        Graph g;
        test::Keep keep;
        std::mt19937 rng(3);
        Tensor* kc = keep.persistent(*be, DType::F32, {32, 16}, test::quantized_random(rng, DType::F32, 32, 16));
        std::vector<float> q = test::randn(rng, 32);
        std::vector<int32_t> pos = {16}, seq = {0};  // a full layer of 16 rows cannot hold position 16
        Tensor* o = ops::attention(g, g.input(DType::F32, {32, 1, 1}, q.data(), "q"), kc, kc,
                                   g.input(DType::I32, {1}, pos.data(), "pos"), g.input(DType::I32, {1}, seq.data(), "seq"),
                                   AttentionParams{0, 16, 1, 1.f, 0.f});
        g.mark_output(o);
        std::unique_ptr<Buffer> scratch;
        REQUIRE_THROWS_WITH(run_graph(*be, g, scratch), Catch::Contains("context full"));
        // First keys given (kAttnFirstGiven): one after the query's last key, a negative one, and
        // a range wider than the ring are refused the same way.
        for (auto [first, last, msg] : {std::tuple{6, 5, "first key 6 outside [0, 5]"}, std::tuple{-1, 5, "first key -1"},
                                        std::tuple{0, 16, "context full"}}) {
            Graph g2;
            std::vector<int32_t> keys = {last, first};
            Tensor* o2 = ops::attention(g2, g2.input(DType::F32, {32, 1, 1}, q.data(), "q"), kc, kc,
                                        g2.input(DType::I32, {1, 2}, keys.data(), "pos"), g2.input(DType::I32, {1}, seq.data(), "seq"),
                                        AttentionParams{kAttnFirstGiven, 16, 1, 1.f, 0.f});
            g2.mark_output(o2);
            std::unique_ptr<Buffer> scratch2;
            REQUIRE_THROWS_WITH(run_graph(*be, g2, scratch2), Catch::Contains(msg));
        }
    }
}

TEST_CASE("clamp passes NaN through with its bits and takes infinite bounds, on every backend", "[ops]") {
    // What the op table cannot hold (its outputs must be finite): NaN inputs (quiet, negative,
    // with a payload) come out as they went in, and infinities pass an infinite bound.
    auto bits = [](uint32_t u) {
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    };
    const std::vector<float> x = {bits(0x7FC00000u), bits(0xFFC00000u), bits(0x7FC12345u), INFINITY, -INFINITY, 9.0f, -9.0f,
                                  -0.0f, 0.0f, 3.0f, -FLT_MAX, FLT_MAX};
    struct Bounds { float lo, hi; };
    const Bounds bounds[] = {{-INFINITY, 7.0f}, {-7.0f, 7.0f}, {-INFINITY, INFINITY}, {0.0f, INFINITY}};
    auto run = [&](Backend& b) {
        Graph g;
        Tensor* in = g.input(DType::F32, {int64_t(x.size())}, x.data(), "x");
        std::vector<Tensor*> outs;
        for (const Bounds& bd : bounds) {
            outs.push_back(ops::clamp(g, in, bd.lo, bd.hi));
            g.mark_output(outs.back());
        }
        std::unique_ptr<Buffer> scratch;
        run_graph(b, g, scratch);
        b.synchronize();
        std::vector<uint32_t> r(x.size() * outs.size());
        for (size_t o = 0; o < outs.size(); ++o) read_tensor(b, *outs[o], r.data() + o * x.size());
        return r;
    };
    auto ref = make_reference_backend();
    const std::vector<uint32_t> want = run(*ref);
    for (size_t o = 0; o < std::size(bounds); ++o)
        for (size_t i = 0; i < x.size(); ++i) {
            uint32_t xb;
            std::memcpy(&xb, &x[i], 4);
            const float lo = bounds[o].lo, hi = bounds[o].hi, v = x[i];
            const float e = std::isnan(v) ? v : v < lo ? lo : v > hi ? hi : v;
            uint32_t eb;
            std::memcpy(&eb, &e, 4);
            INFO("bounds " << o << ", input " << i);
            CHECK(want[o * x.size() + i] == (std::isnan(v) ? xb : eb));
        }
    for (auto& be : test::backends_under_test()) {
        INFO(be->name());
        CHECK(run(*be) == want);
    }
}
