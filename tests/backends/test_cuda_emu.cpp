// The CUDA attention kernels run on the host by backends/cuda/emu/cuda_emu.h, on the op table's attention
// cases (ring wrap, windows, several sequences, GQA, softcap, sinks, every cache type, long
// key ranges, Gemma 4's 512-wide heads), against the reference bit for bit. This is what a
// machine without a GPU can check of the kernels themselves: their indexing, their
// synchronization and the order of every float chain. On a GPU, cuda_suite runs the same
// cases through the real launcher. Built without the CUDA toolkit, and under ASan, which
// then checks each kernel's memory accesses.
#include "backends/cuda/emu/cuda_emu.h"  // first: the CUDA builtins for the kernel header

#include "backends/cuda/attention.cuh"
#include "backends/cuda/mul_mat.cuh"
#include "backends/cuda/quantize_act.cuh"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "core/ir/backend.h"
#include "core/ir/op_params.h"
#include "core/quant/quant.h"
#include "tests/ops/op_cases.h"
#include "tests/support/test_util.h"
#include "core/ref/ref_backend.h"

using namespace ls;

namespace {

cuda::Shape shape_of(const Tensor& t) {
    cuda::Shape s;
    for (int i = 0; i < 4; ++i) {
        s.ne[i] = t.ne[i];
        s.nb[i] = int64_t(t.nb[i]);
    }
    return s;
}

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

emu::Dim3 dim(int64_t x, int64_t y = 1, int64_t z = 1) { return {unsigned(x), unsigned(y), unsigned(z)}; }

struct Attn {
    const Tensor &q, &k, &v, &dst;
    AttentionParams p;
    const int32_t *pos, *seq;
    const float* sinks;
    int64_t H, T, Dv, R, group, nb_max = 1;
    explicit Attn(const Tensor& d)
        : q(*d.src[0]), k(*d.src[1]), v(*d.src[2]), dst(d), p(d.get_params<AttentionParams>()),
          pos(d.src[3]->data_as<const int32_t>()), seq(d.src[4]->data_as<const int32_t>()),
          sinks(d.src[5] ? d.src[5]->data_as<const float>() : nullptr), H(q.ne[1]), T(q.ne[2]),
          Dv(d.ne[0]), R(p.ring_rows), group(H / p.n_head_kv) {
        for (int64_t t = 0; t < T; ++t)
            nb_max = std::max<int64_t>(nb_max, attn_block_of(pos[t]) - attn_block_of(attn_first_of(pos, t, T, p.window)) + 1);
    }
};

// attention_kernel with `per` key blocks per split: per >= nb_max is one CUDA block per
// (head, query) folding in its registers; fewer is split-K, partials in a scratch buffer
// (NaN-filled, so that a partial never written shows) folded by attention_fold_kernel.
std::vector<uint8_t> emu_attention(const Attn& a, int64_t per) {
    const int64_t splits = (a.nb_max + per - 1) / per;
    std::vector<float> partials(splits > 1 ? size_t(a.T * a.H * a.nb_max * (a.Dv + 2)) : 0, std::numeric_limits<float>::quiet_NaN());
    std::vector<uint8_t> out(a.dst.nbytes(), 0xEE);
    const cuda::AttnArgs args{a.q.data_as<const float>(), shape_of(a.q), a.k.data_as<const uint8_t>(), int64_t(a.k.nb[1]),
                              a.v.data_as<const uint8_t>(), int64_t(a.v.nb[1]), a.pos, a.seq, 0, a.T, a.R, a.group,
                              a.Dv, out.data(), shape_of(a.dst), per, splits > 1 ? partials.data() : nullptr, a.nb_max, a.sinks,
                              a.k.type, a.v.type, a.p.window, a.p.scale, a.p.softcap};
    const bool known = cuda::with_attn_outputs(a.Dv, [&](auto ko) {
        constexpr int KOUT = decltype(ko)::value;
        emu::launch(dim(a.H, a.T, splits), dim(cuda::kAttnThreads), [&] { cuda::attention_kernel<KOUT>(args); });
        if (splits > 1) emu::launch(dim(a.H, a.T), dim(cuda::kAttnThreads), [&] { cuda::attention_fold_kernel<KOUT>(args); });
    });
    REQUIRE(known);
    return out;
}

// attention_tile_kernel over geometry g with `per` key blocks per split (per 0: unsplit, the
// tile folds in its registers); split, the partials (NaN-filled) are folded by
// attention_fold_chunks_kernel `chunk` key blocks a round.
std::vector<uint8_t> emu_attention_tiles(const Attn& a, const cuda::TileGeom& g, int64_t per, int chunk) {
    const int64_t nbu = cuda::tile_key_span(a.pos, a.T, g.tq, a.p.window);
    const bool split = per > 0;
    const int64_t splits = split ? (nbu + per - 1) / per : 1;
    std::vector<float> partials(split ? size_t(a.T * a.H * a.nb_max * (a.Dv + 2)) : 0, std::numeric_limits<float>::quiet_NaN());
    std::vector<uint8_t> out(a.dst.nbytes(), 0xEE);
    const cuda::AttnArgs args{a.q.data_as<const float>(), shape_of(a.q), a.k.data_as<const uint8_t>(), int64_t(a.k.nb[1]),
                              a.v.data_as<const uint8_t>(), int64_t(a.v.nb[1]), a.pos, a.seq, 0, a.T, a.R, a.group,
                              a.Dv, out.data(), shape_of(a.dst), split ? per : nbu, split ? partials.data() : nullptr, a.nb_max, a.sinks,
                              a.k.type, a.v.type, a.p.window, a.p.scale, a.p.softcap};
    const emu::Dim3 grid = dim(a.H / g.gq, (a.T + g.tq - 1) / g.tq, splits);
    cuda::with_pow2(g.pairs, [&](auto pc) {
        constexpr int P = decltype(pc)::value;
        if (g.f16) emu::launch(grid, dim(cuda::kTileThreads), [&] { cuda::attention_tile_kernel<P, true>(args, g, a.T); });
        else emu::launch(grid, dim(cuda::kTileThreads), [&] { cuda::attention_tile_kernel<P, false>(args, g, a.T); });
    });
    if (split)
        cuda::with_pow2((a.Dv + cuda::kTileThreads - 1) / cuda::kTileThreads, [&](auto ko) {
            constexpr int KOUT = decltype(ko)::value;
            emu::launch(dim(a.H, a.T), dim(cuda::kTileThreads), [&] { cuda::attention_fold_chunks_kernel<KOUT>(args, chunk); });
        });
    return out;
}

// One op-table case computed by the reference backend: its graph, weights and first output.
struct RefRun {
    Graph g;
    test::Keep keep;
    std::unique_ptr<Buffer> scratch;
    const Tensor* node = nullptr;
};
std::unique_ptr<RefRun> run_reference(const test::OpCase& oc, Backend& ref, uint32_t seed) {
    auto r = std::make_unique<RefRun>();
    std::mt19937 rng(seed);
    std::vector<Tensor*> outs = oc.build(r->g, ref, r->keep, rng);
    for (Tensor* o : outs) r->g.mark_output(o);
    run_graph(ref, r->g, r->scratch);
    r->node = outs[0];
    return r;
}

}  // namespace

TEST_CASE("CUDA attention kernels, emulated on the host, equal the reference bit for bit", "[cuda_emu]") {
    auto ref = make_reference_backend();
    const auto cases = test::op_cases();
    int n_cases = 0, n_split = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto& oc = cases[i];
        if (oc.kind != "attention") continue;
        const auto run = run_reference(oc, *ref, uint32_t(1000 + i));
        const Tensor& node = *run->node;
        REQUIRE(node.op == OpId::ATTENTION);
        const Attn a(node);
        const auto* want = node.data_as<const uint8_t>();
        INFO(oc.name);
        // Every split of the keys gives the same bits: one CUDA block, each key block its
        // own, and two key blocks per split (a last split with one). Under the sanitizers
        // (test::kSanitized) one split a case, in turn: the table lists each geometry in five
        // cache types in a row, so each geometry and each cache type still meets every split
        // (and the emulated op table runs the split the launcher picks, test.sh).
        const int64_t splits[] = {a.nb_max, 1, 2};
        for (int k = 0; k < 3; ++k) {
            if (test::kSanitized && k != n_cases % 3) continue;
            const int64_t per = splits[k];
            INFO("key blocks per split " << per << " of " << a.nb_max);
            const std::vector<uint8_t> got = emu_attention(a, per);
            CHECK(std::memcmp(got.data(), want, got.size()) == 0);
        }
        ++n_cases;
        n_split += a.nb_max > 2;
    }
    // The table's attention cases: 90 causal (with and without sinks); 3 non-causal geometries
    // (one a vision encoder's: 150 queries sharing their keys, heads of 40), 2 with first keys
    // given and 2 of MLA's shape (V inside K), each in 5 cache types; the long key ranges span
    // more than two key blocks.
    CHECK(n_cases == 125);
    CHECK(n_split > 0);
}

TEST_CASE("CUDA attention tile kernels, emulated on the host, equal the reference bit for bit", "[cuda_emu]") {
    auto ref = make_reference_backend();
    const auto cases = test::op_cases();
    int n_tiled = 0, n_several = 0, n_groups = 0, n_rounds = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto& oc = cases[i];
        if (oc.kind != "attention") continue;
        const auto run = run_reference(oc, *ref, uint32_t(1000 + i));
        const Tensor& node = *run->node;
        const Attn a(node);
        const auto* want = node.data_as<const uint8_t>();
        INFO(oc.name);
        const bool one_seq = std::all_of(a.seq, a.seq + a.T, [&](int32_t x) { return x == a.seq[0]; });
        // Several queries a tile where the case has one sequence, and one query a tile (what
        // a batch of several sequences takes): each unsplit, each key block its own split,
        // and two key blocks a split, folded one round and in rounds of two key blocks.
        for (bool several : {true, false}) {
            if (several && !one_seq) continue;
            const cuda::TileGeom g = cuda::plan_tiles(a.q.ne[0], a.Dv, a.group, a.k.type, int64_t(a.k.nb[1]), a.v.type, int64_t(a.v.nb[1]), several);
            if (!g.ok) continue;
            INFO("tile: " << g.gq << " heads x " << g.tq << " queries, " << g.pairs << " pairs a thread");
            // Under the sanitizers one of the four a tiling, in turn (five cache types a
            // geometry: each geometry and each cache type still meets all four).
            const std::pair<int64_t, int> forms[] = {{0, 0}, {1, cuda::kFoldChunk}, {2, cuda::kFoldChunk}, {1, 2}};
            for (int k = 0; k < 4; ++k) {
                if (test::kSanitized && k != n_tiled % 4) continue;
                const auto [per, chunk] = forms[k];
                INFO("key blocks per split " << per << " (0: unsplit), fold rounds of " << chunk);
                const std::vector<uint8_t> got = emu_attention_tiles(a, g, per, chunk);
                CHECK(std::memcmp(got.data(), want, got.size()) == 0);
                n_rounds += chunk == 2 && a.nb_max > 2;
            }
            n_tiled += 1;
            n_several += g.tq > 1 && a.T > 1;
            n_groups += g.gq > 1;
        }
    }
    // Which of the table's 90 attention cases the tiles take: every one but the heads that
    // split a cache block or whose key block does not fit (checked by count, so that a
    // planner refusing more shows).
    CHECK(n_tiled >= 85);
    CHECK(n_several > 0);
    CHECK(n_groups > 0);
    CHECK(n_rounds > 0);
}

TEST_CASE("CUDA activation quantizers, emulated on the host, equal quantize_row byte for byte", "[cuda_emu]") {
    std::mt19937 rng(5);
    for (DType t : {DType::Q8_0, DType::Q8_1, DType::Q8_K, DType::F32, DType::F16, DType::BF16, DType::Q4_0}) {
        for (int64_t K : {int64_t(256), int64_t(1024)}) {
            INFO(dtype_name(t) << " K=" << K);
            // Three rows, 8 floats of padding between them (the kernel finds rows by stride):
            // outliers, an |x| tie between a value and its negation, a NaN, a zero block of 32 and
            // (K 1024) a zero Q8_K block, values on .5 quantization steps.
            const int64_t stride = K + 8, rows = 3;
            std::vector<float> x = test::randn(rng, size_t(stride * rows), 1.0f);
            for (int64_t i = 0; i < stride * rows; i += 97) x[size_t(i)] *= 40.0f;
            x[3] = 2.5f, x[4] = -2.5f;
            x[32] = std::numeric_limits<float>::quiet_NaN();  // a NaN first in its 32-block: the absmax skips it
            for (int64_t i = 32; i < 64; ++i) x[size_t(stride + i)] = 0.0f;
            if (K == 1024)
                for (int64_t i = 512; i < 768; ++i) x[size_t(2 * stride + i)] = 0.0f;
            x[size_t(2 * stride + 7)] = 127.5f / 40.0f;
            const int64_t arb = int64_t(row_bytes(t, K));
            std::vector<uint8_t> want(size_t(arb * rows)), got(size_t(arb * rows), 0xAB);
            for (int64_t m = 0; m < rows; ++m) quantize_row(t, x.data() + m * stride, want.data() + m * arb, K);
            cuda::Shape sx;
            sx.ne[0] = K, sx.ne[1] = rows, sx.ne[2] = sx.ne[3] = 1;
            sx.nb[0] = 4, sx.nb[1] = stride * 4, sx.nb[2] = sx.nb[3] = stride * 4 * rows;
            const int be = cudaq::quant_block_elems(t);
            const int64_t nb = K / be, warps = nb * rows;
            const auto* px = reinterpret_cast<const uint8_t*>(x.data());
            // The 8-bit dot types take the warp kernel (launch_quantize_act), the rest a thread per block.
            if (t == DType::Q8_0 || t == DType::Q8_1 || t == DType::Q8_K)
                emu::launch(dim((warps + cuda::kQuantWarps - 1) / cuda::kQuantWarps), dim(32 * cuda::kQuantWarps),
                            [&] { cuda::quantize_act_warp_kernel(t, px, sx, got.data(), arb, nb, rows); });
            else
                emu::launch(dim(rows), dim(128), [&] { cuda::quantize_act_kernel(t, be, px, sx, got.data(), arb, nb); });
            CHECK(got == want);
        }
    }
}

namespace {

// mul_mat's three quantized-weight kernels on one op-table case: the activation rows are
// quantized on the host (quantize_row, which the kernels' quantizer equals byte for byte:
// tests/backends/test_cuda_host.cpp), then each kernel writes its own output.
template <DType W> void emu_mul_mat(const Tensor& w, const std::vector<uint8_t>& act, int64_t arb, int64_t n_mrows, const Tensor& dst,
                                    std::vector<std::vector<uint8_t>>& outs, int only = -1, int split_pick = -1) {
    const int64_t N = w.ne[1], nb = w.ne[0] / block_size(W);
    const auto* wp = w.data_as<const uint8_t>();
    const cuda::Shape sd = shape_of(dst);
    // only >= 0: that kernel alone (0 warp per row, 1 dp4a tiles, 2 tensor-core tiles), the
    // others' outputs left empty.
    auto fresh = [&] { return std::vector<uint8_t>(dst.nbytes(), 0xEE); };
    // The decode kernels take the weight rows as `parts` matrices one after another (a
    // grouped launch of q, k and v: cuda::DecodeMats), here the same matrix cut in row ranges
    // of different sizes, each writing its own columns of dst: the same outputs as one.
    auto mats = [&](uint8_t* out, int parts) {
        cuda::DecodeMats m{};
        m.count = parts;
        int64_t start = 0;
        for (int i = 0; i < parts; ++i) {
            const int64_t end = i + 1 == parts ? N : std::min(N, start + N / (2 * parts) + i + 1);
            m.w[i] = wp + start * int64_t(w.nb[1]), m.w_nb1[i] = int64_t(w.nb[1]);
            m.dst[i] = out + start * 4, m.sd[i] = sd;
            m.n_end[i] = end;
            start = end;
        }
        return m;
    };
    outs.push_back(fresh());
    if (only < 0 || only == 0) emu::launch(dim((N + cuda::kWarps - 1) / cuda::kWarps, (n_mrows + cuda::kMRows - 1) / cuda::kMRows), dim(32, cuda::kWarps), [&] {
        cuda::dot_q_kernel<W>(mats(outs.back().data(), 3), act.data(), arb, n_mrows, nb);
    });
    const cuda::PlainRows p{wp, int64_t(w.nb[1]), N, act.data(), arb, n_mrows, nullptr, sd};
    outs.push_back(fresh());
    if (only < 0 || only == 1) emu::launch(dim((N + cuda::kDpN - 1) / cuda::kDpN, (n_mrows + cuda::kDpM - 1) / cuda::kDpM), dim(cuda::kDpThreads), [&] {
        cuda::PlainRows q = p;
        q.dst = outs.back().data();
        cuda::dot_q_tiled_kernel<W>(q, nb);
    });
    outs.push_back(fresh());
    if (only < 0 || only == 2) emu::launch(dim((N + cuda::kMmaN - 1) / cuda::kMmaN, (n_mrows + cuda::kMmaM - 1) / cuda::kMmaM), dim(32 * cuda::kMmaWarps), [&] {
        cuda::PlainRows q = p;
        q.dst = outs.back().data();
        cuda::dot_q_mma_kernel<W>(q, nb);
    });
    // The split decode kernel with 2 and 4 warps per weight row (kernels 3 and 4) on decode
    // shapes, whatever split_ways would pick for this row: a part may find no group of its
    // own. Left empty where the type or the row's length does not take it; under the
    // sanitizers one of the two, in turn (split_pick).
    for (int ways : {2, 4}) {
        outs.push_back({});
        if constexpr (cuda::kStepIsOneAdd<W>)
            if (nb <= cuda::kSplitMaxBlocks<W> && n_mrows < cuda::kTiledMinRows && (split_pick < 0 || split_pick == ways)) {
                outs.back() = fresh();
                emu::launch(dim((N * ways + cuda::kWarps - 1) / cuda::kWarps, (n_mrows + cuda::kMRows - 1) / cuda::kMRows),
                            dim(32, cuda::kWarps), [&] {
                                cuda::dot_q_split_kernel<W>(mats(outs.back().data(), ways == 2 ? 2 : 1), act.data(), arb, n_mrows, nb, ways);
                            });
            }
    }
}

}  // namespace

TEST_CASE("CUDA mul_mat kernels (warp per row, dp4a tiles, tensor-core tiles), emulated, equal the reference bit for bit",
          "[cuda_emu]") {
    auto ref = make_reference_backend();
    const auto cases = test::op_cases();
    int n_cases = 0, n_types = 0, in_type = 0, n_split = 0;
    DType last = DType::F32;
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto& oc = cases[i];
        if (oc.kind != "mul_mat" || oc.view) continue;  // the emulated tiles read contiguous rows
        const auto run = run_reference(oc, *ref, uint32_t(2000 + i));
        const Tensor& node = *run->node;
        REQUIRE(node.op == OpId::MUL_MAT);
        const Tensor &w = *node.src[0], &x = *node.src[1];
        if (traits(w.type).block == 1) continue;  // float weights: dot_f_kernel, no tiles
        const int64_t K = w.ne[0], n_mrows = x.ne[1] * x.ne[2] * x.ne[3];
        REQUIRE(x.nb[1] == size_t(K) * 4);
        const DType at = vec_dot_type(w.type);
        const int64_t arb = int64_t(row_bytes(at, K));
        std::vector<uint8_t> act(size_t(arb * n_mrows));
        for (int64_t m = 0; m < n_mrows; ++m) quantize_row(at, x.data_as<const float>() + m * K, act.data() + m * arb, K);
        // Under the sanitizers one kernel a case, in turn within each weight type's cases
        // (M = 1, 5, 70) and shifted by one from type to type: each type still meets every
        // kernel, and each kernel every M. (The emulated op table runs the kernel the launcher
        // picks, and its dp4a pass the tiles, on every type: test.sh.)
        if (w.type != last) last = w.type, ++n_types, in_type = 0;
        const int only = test::kSanitized ? (in_type + n_types) % 3 : -1, split = test::kSanitized ? 2 + 2 * (n_cases % 2) : -1;
        ++in_type;
        std::vector<std::vector<uint8_t>> got;
        const bool known =
            cudaq::with_quant_weight(w.type, [&](auto wt) { emu_mul_mat<decltype(wt)::value>(w, act, arb, n_mrows, node, got, only, split); });
        REQUIRE(known);
        INFO(oc.name);
        const char* kernel[] = {"dot_q_kernel", "dot_q_tiled_kernel", "dot_q_mma_kernel", "dot_q_split_kernel (2 ways)",
                                "dot_q_split_kernel (4 ways)"};
        for (size_t k = 0; k < got.size(); ++k) {
            if ((only >= 0 && k < 3 && int(k) != only) || got[k].empty()) continue;
            n_split += k >= 3;
            INFO(kernel[k]);
            CHECK(std::memcmp(got[k].data(), node.data_as<const uint8_t>(), got[k].size()) == 0);
        }
        ++n_cases;
    }
    // 22 quantized weight types x (M = 1, 5, 70), K=1056 for the 7 types of 32-element blocks,
    // 6 types' long rows x (M = 1, 5), and 6 super-block types x 2 widths at M = 3.
    CHECK(n_cases == 97);
    // The split kernel ran on the decode shapes of every type it takes (twice each without
    // the sanitizers).
    CHECK(n_split >= (test::kSanitized ? 40 : 80));
    WARN("dot_q_split_kernel checked on " << n_split << " cases");
}

TEST_CASE("the CUDA emulator's warp shuffles and barriers follow CUDA", "[cuda_emu]") {
    // A block of 64 threads (2 warps): the canonical sum and a max per warp, and a thread
    // that leaves early without holding up the barrier. The terms are chosen so that the
    // order of the sum shows: warp_canon_sum must give canon_sum's bits exactly.
    std::vector<float> terms(100);
    for (size_t i = 0; i < terms.size(); ++i) terms[i] = (i % 3 == 0 ? 1e8f : 1.0f) * (i % 2 ? -1.0f : 1.0f) + float(i) * 0.37f;
    std::vector<float> sums(2, 0), maxes(64, 0);
    emu::launch(dim(1), dim(64), [&] {
        const int lane = int(threadIdx.x % 32), warp = int(threadIdx.x / 32);
        const float s = cuda::warp_canon_sum(int64_t(terms.size()) - warp, lane, [&](int64_t i) { return terms[size_t(i)]; });
        if (lane == 0) sums[size_t(warp)] = s;
        maxes[threadIdx.x] = cuda::warp_max(float(threadIdx.x % 7) - float(warp));
    });
    CHECK(bits(sums[0]) == bits(canon_sum(terms.data(), int64_t(terms.size()))));
    CHECK(bits(sums[1]) == bits(canon_sum(terms.data(), int64_t(terms.size()) - 1)));
    for (int i = 0; i < 64; ++i) CHECK(maxes[size_t(i)] == (i < 32 ? 6.0f : 5.0f));
    std::vector<int> after(8, 0);
    emu::launch(dim(2), dim(8), [&] {
        if (threadIdx.x == 3) return;
        __syncthreads();
        after[threadIdx.x] += 1;
    });
    CHECK(after == std::vector<int>{2, 2, 2, 0, 2, 2, 2, 2});
}
