#include <algorithm>
#include <chrono>
#include <memory>
#include <cmath>
#include <cstdio>
#include <random>

#include "backends/registry.h"
#include "core/ir/ops.h"
#include "core/runtime/generate.h"
#include "core/sched/transport.h"
#include "tools/cli/app.h"

namespace ls::cli {
namespace {

struct Result {
    double mean = 0, sd = 0;
};

// The speculation prompts: a text the reply largely copies, and a request for prose.
constexpr const char* kCopyText =
    "The lighthouse stood on a rock at the mouth of the harbour, and for ninety years a keeper had climbed its "
    "hundred and twelve steps every evening to light the lamp. The last keeper, a woman named Ada Penhallow, "
    "kept a logbook in which she wrote the weather, the ships that passed, and the birds that struck the glass "
    "on stormy nights. When the light was automated in 1981 she took the logbook home, and it sat in a drawer "
    "for forty years until her grandson found it while clearing the house. He read it in one sitting and then "
    "walked down to the harbour, where the light still turned above the water, without anyone to climb the "
    "stairs.";
constexpr const char* kProsePrompt = "Write a short story about a girl who builds a boat and sails to an island nobody has visited.";

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
Result stats(const std::vector<double>& v) {
    Result r;
    for (double x : v) r.mean += x;
    r.mean /= double(v.size());
    for (double x : v) r.sd += (x - r.mean) * (x - r.mean);
    r.sd = v.size() > 1 ? std::sqrt(r.sd / double(v.size() - 1)) : 0;
    return r;
}

}  // namespace

// Like llama-bench: ppN evaluates an N-token prompt on an empty cache; tgN generates N
// tokens one at a time from an empty cache. With -d D the cache first holds D tokens (a
// prompt evaluated before the clock starts, each run) and the row reads "tgN @ dD".
// Random tokens; one warm-up run each.
int cmd_bench(const Options& o) {
    // Under mpirun the ranks follow one session at a time: the tests that hold several, or time
    // single ops, are for one process.
    if (process_transport() && (!o.bench_tg_seqs.empty() || o.bench_spec_vs_plain > 0 || o.bench_scan_vs_single > 0))
        throw UsageError("under mpirun bench times -p, -n, -d and --prefill-vs-single; --tg-seqs, --spec-vs-plain and "
                         "--scan-vs-single are for one process");
    App app = open_app(o);
    SessionParams sp = app.session_params(o);
    int64_t need = 1, depth_max = 0;
    for (int64_t d : o.bench_depth) depth_max = std::max(depth_max, d);
    for (int64_t n : o.bench_pp) need = std::max(need, depth_max + n);
    for (int64_t n : o.bench_tg) need = std::max(need, depth_max + n);
    for (int64_t n : o.bench_prefill_vs_single) need = std::max(need, n);
    if (o.bench_spec_vs_plain > 0) need = std::max(need, 512 + o.bench_spec_vs_plain);
    sp.n_ctx = std::max(sp.n_ctx, need);
    Session s(*app.model, *app.backend, sp);
    std::mt19937 rng(42);
    std::uniform_int_distribution<int32_t> dist(0, int32_t(s.n_vocab() - 1));
    auto tokens = [&](int64_t n) {
        std::vector<int32_t> t(static_cast<size_t>(n));
        for (auto& x : t) x = dist(rng);
        return t;
    };
    const double gib = double(app.model->weight_bytes()) / (1024.0 * 1024 * 1024);
    std::printf("| model | size | backend | threads | test | t/s |\n| --- | ---: | --- | ---: | ---: | ---: |\n");
    auto row = [&](const std::string& test, const Result& r) {
        std::printf("| %s | %.2f GiB | %s | %d | %s | %.2f ± %.2f |\n", app.model->gguf().get_string("general.name", app.model->hparams().arch).c_str(),
                    gib, app.device_label().c_str(), o.threads > 0 ? o.threads : -1, test.c_str(), r.mean, r.sd);
        std::fflush(stdout);
    };
    // One warm-up run, then o.reps timed runs of `run` on n fresh random tokens, each after
    // `depth` untimed random tokens on an empty cache. The depth is evaluated once: later runs
    // go back to it with seq_rm (its checkpoint, for recurrent layers), which leaves the cache
    // as a fresh fill would (SEMANTICS: reuse equals fresh), and fill again only where seq_rm
    // cannot (as llama-bench restores a saved state). A 16k-token fill of an 8B model on a GPU
    // took longer than the runs it preceded.
    int64_t filled = 0;  // the depth the cache holds a fill of, 0 for none
    auto measure = [&](const std::string& test, int64_t n, int64_t depth, auto run) {
        if (n == 0) return;
        std::vector<double> tps;
        for (int r = -1; r < o.reps; ++r) {
            if (depth == 0 || filled != depth || !s.seq_rm(0, depth)) {
                s.reset();
                filled = 0;
                if (depth > 0) {
                    s.eval(tokens(depth));
                    s.checkpoint(0);
                    filled = depth;
                }
            }
            auto t = tokens(n);
            auto t0 = std::chrono::steady_clock::now();
            run(t);
            double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (r >= 0) tps.push_back(double(n) / sec);
        }
        row(test + std::to_string(n) + (depth > 0 ? " @ d" + std::to_string(depth) : ""), stats(tps));
    };
    for (int64_t d : o.bench_depth) {
        for (int64_t n : o.bench_pp) measure("pp", n, d, [&](const std::vector<int32_t>& t) { s.eval(t); });
        for (int64_t n : o.bench_tg)
            measure("tg", n, d, [&](const std::vector<int32_t>& t) {
                for (int32_t id : t) s.eval({id});
            });
    }
    // Chunked prefill against token-at-a-time on the same prompt, in one run: the ratio is
    // the figure (machines are noisy; both halves see the same noise). Neither computes
    // logits before the last token.
    for (int64_t n : o.bench_prefill_vs_single) {
        const std::vector<int32_t> t = tokens(n);
        auto time_it = [&](auto run) {
            s.reset();
            auto t0 = std::chrono::steady_clock::now();
            run();
            return double(n) / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        };
        const double chunked = time_it([&] { s.eval(t); });
        row("pp" + std::to_string(n) + " ubatch " + std::to_string(s.params().n_ubatch), Result{chunked, 0});
        const double single = time_it([&] {
            for (int64_t i = 0; i < n; ++i) {
                Batch b;
                b.add(t[size_t(i)], 0, int32_t(i), i + 1 == n);
                s.decode(b);
            }
        });
        row("pp" + std::to_string(n) + " 1 token/step", Result{single, 0});
        std::printf("\nchunked prefill of %lld tokens: %.2fx the speed of token-at-a-time\n", (long long)n, chunked / single);
    }
    // The batched delta-rule scan on one sequence against its single-sequence-only twin, one
    // decode token with Qwen3.5's linear-attention sizes (16 key heads, 32 value heads of 128),
    // alternating rounds so that both see the same machine noise: the ratio is the figure.
    if (o.bench_scan_vs_single > 0) {
        // Two CPU backends through the registry: the batched kernel and its single-sequence
        // twin. Both compute the same graph over host memory allocated by the first.
        BackendOptions bo;
        bo.threads = o.threads;
        auto cpu = create_backend(bo);
        bo.cpu_single_sequence_scan = true;
        auto cpu_single = create_backend(bo);
        const DeltaScanParams dp{16, 128, 32, 128, HEADS_TILED, 1.0f / std::sqrt(128.0f), 1e-6f};
        const int64_t C = 2 * 16 * 128 + 32 * 128, row = 32 * 128 * 128;
        Tensor st;
        st.ne[0] = row;
        st.ne[1] = 4;
        set_contiguous_strides(st);
        st.kind = TensorKind::Persistent;
        auto st_buf = cpu->alloc(st.nbytes());
        st.buffer = st_buf.get();
        cpu->fill(*st_buf, 0, st.nbytes(), 0);
        Graph g;
        std::normal_distribution<float> nd(0.f, 1.f);
        std::vector<float> x(static_cast<size_t>(C)), gv(32, -0.5f), bv(32, 0.5f);
        for (float& v : x) v = nd(rng);
        const std::vector<int32_t> runs = {2, 0, 1, 0}, order = {0};
        Tensor* y = ops::delta_scan(g, g.input(DType::F32, {C, 1}, x.data(), "qkv"), g.input(DType::F32, {32, 1}, gv.data(), "g"),
                                    g.input(DType::F32, {32, 1}, bv.data(), "beta"), &st,
                                    g.input(DType::I32, {4, 1}, runs.data(), "runs"), g.input(DType::I32, {1}, order.data(), "order"), dp);
        g.mark_output(y);
        std::unique_ptr<Buffer> scratch;
        run_graph(*cpu, g, scratch);
        double t_batched = 0, t_single = 0;
        constexpr int kCalls = 20;
        for (int64_t round = 0; round < o.bench_scan_vs_single; ++round)
            for (int which = 0; which < 2; ++which) {
                auto t0 = std::chrono::steady_clock::now();
                for (int i = 0; i < kCalls; ++i) (which == 0 ? *cpu : *cpu_single).compute(g);
                const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                (which == 0 ? t_batched : t_single) += sec;
            }
        const double calls = double(o.bench_scan_vs_single) * kCalls;
        std::printf("\ndelta_scan, 1 sequence, 1 token (Hk 16, Hv 32, 128x128): batched op %.1f us, single-sequence-only %.1f us,"
                    " speed ratio %.3f\n", 1e6 * t_batched / calls, 1e6 * t_single / calls, t_single / t_batched);
    }
    // Several sequences decoding together, one token of each per batch (np-way decode): the
    // aggregate throughput and its ratio to the first count given (usually 1). Hybrid models
    // run their recurrent scan over all sequences of a ubatch in one op. The counts take turns
    // within each repetition, and the ratio is the median of the per-repetition ratios, so
    // that both sides of a ratio see the same machine noise.
    if (!o.bench_tg_seqs.empty()) {
        struct SeqRun {
            int64_t n_seq;
            std::unique_ptr<Session> s;
            std::vector<double> tps;
        };
        std::vector<SeqRun> runs;
        for (int64_t n_seq : o.bench_tg_seqs) {
            SessionParams p = sp;
            p.n_seq = int32_t(n_seq);
            runs.push_back({n_seq, std::make_unique<Session>(*app.model, *app.backend, p), {}});
        }
        constexpr int kPrompt = 16, kSteps = 64;
        for (int r = -1; r < o.reps; ++r)
            for (SeqRun& run : runs) {
                Session& ms = *run.s;
                ms.reset();
                Batch b;
                for (int64_t q = 0; q < run.n_seq; ++q)
                    for (int i = 0; i < kPrompt; ++i) b.add(dist(rng), int32_t(q), i, i + 1 == kPrompt);
                ms.decode(b);
                auto t0 = std::chrono::steady_clock::now();
                for (int st = 0; st < kSteps; ++st) {
                    b.clear();
                    for (int64_t q = 0; q < run.n_seq; ++q) b.add(dist(rng), int32_t(q), kPrompt + st, true);
                    ms.decode(b);
                }
                const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                if (r >= 0) run.tps.push_back(double(kSteps * run.n_seq) / sec);
            }
        for (const SeqRun& run : runs) row("tg" + std::to_string(kSteps) + " x " + std::to_string(run.n_seq) + " seqs", stats(run.tps));
        for (size_t k = 1; k < runs.size(); ++k) {
            std::vector<double> ratio;
            for (size_t r = 0; r < runs[k].tps.size(); ++r) ratio.push_back(runs[k].tps[r] / runs[0].tps[r]);
            std::sort(ratio.begin(), ratio.end());
            const size_t n = ratio.size();
            const double med = n % 2 ? ratio[n / 2] : 0.5 * (ratio[n / 2 - 1] + ratio[n / 2]);
            std::printf("\n%lld sequences together: %.2fx the throughput of %lld (median of %zu alternating repetitions, %.2f-%.2f)\n",
                        (long long)runs[k].n_seq, med, (long long)runs[0].n_seq, n, ratio.front(), ratio.back());
        }
    }
    // Generation with and without speculation (--spec, -md, --draft-max, --draft-min) on the
    // same prompt, alternating within each repetition so that both see the same
    // machine noise: tokens/s of each (prompt evaluation not timed), the median of the
    // per-repetition ratios, and the share of guesses accepted. The outputs are compared too:
    // speculation must not change a token.
    if (o.bench_spec_vs_plain > 0) {
        // What a verification step costs: one sequence's k + 1 tokens with logits for every
        // one, against a one-token decode step, after a 256-token context.
        {
            std::printf("\nverification step cost (k + 1 tokens, every logit row) in decode steps:");
            const std::vector<int32_t> ctx = tokens(256);
            auto time_step = [&](int64_t n) {
                double best = 1e30;
                for (int r = 0; r < 3; ++r) {
                    s.reset();
                    s.eval(ctx);
                    Batch b;
                    for (int64_t i = 0; i < n; ++i) b.add(dist(rng), 0, int32_t(256 + i), true);
                    auto t0 = std::chrono::steady_clock::now();
                    s.decode(b);
                    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
                }
                return best;
            };
            const double one = time_step(1);
            for (int64_t k : {1, 2, 4, 8, 16}) std::printf(" k=%lld %.2f", (long long)k, time_step(k + 1) / one);
            std::printf(" (one step %.1f ms)\n\n", 1e3 * one);
        }
        Options so = o;
        if (so.spec == "off") so.spec = "lookup";
        const Tokenizer& tok = *app.tokenizer;
        const ChatTemplate& tmpl = chat_template_for(app.model->hparams().arch, [&](std::string_view t) { return tok.find_token(t) >= 0; });
        // Greedy on both prompts, and the prose sampled (temperature 0.8, seed 5): there fewer
        // guesses are kept, and the adaptive count must keep speculation from costing speed.
        SamplerParams greedy = app.sampler_params(o);
        greedy.temp = 0;
        SamplerParams seeded = greedy;
        seeded.temp = 0.8f;
        seeded.seed = 5;
        const struct {
            const char* label;
            std::string text;
            SamplerParams sp;
        } prompts[] = {
            {"copy", std::string(kCopyText) + "\n\nRepeat the text above exactly.", greedy},
            {"prose", kProsePrompt, greedy},
            {"seeded prose", kProsePrompt, seeded},
        };
        for (const auto& [label, text, sp] : prompts) {
            const std::vector<int32_t> ids = tok.encode(format_chat({{"user", text}}, true, tmpl), tok.add_bos_default(), true);
            std::unique_ptr<Speculator> spec = app.speculator(so, s);
            std::vector<double> plain_tps, spec_tps, ratio;
            std::vector<int32_t> plain_tokens;
            bool same = true;
            size_t n_tokens = 0;
            for (int r = -1; r < o.reps; ++r) {
                double tps[2];
                for (int with = 0; with < 2; ++with) {
                    s.reset();
                    Sampler smp(sp);
                    const GenerateResult g = generate(s, tok, smp, ids, o.bench_spec_vs_plain, 0, [](const std::string&) {}, nullptr,
                                                      with ? spec.get() : nullptr);
                    tps[with] = double(g.tokens.size()) / std::max(g.gen_s, 1e-9);
                    if (!with) plain_tokens = g.tokens;
                    else same = same && g.tokens == plain_tokens;
                    n_tokens = g.tokens.size();
                }
                if (r < 0) {
                    spec->reset_stats();
                    continue;
                }
                plain_tps.push_back(tps[0]);
                spec_tps.push_back(tps[1]);
                ratio.push_back(tps[1] / tps[0]);
            }
            row(std::string("tg") + std::to_string(n_tokens) + " " + label + " plain", stats(plain_tps));
            row(std::string("tg") + std::to_string(n_tokens) + " " + label + " spec " + so.spec, stats(spec_tps));
            const SpecStats& st = spec->stats();
            std::printf("\n%s prompt, --spec %s: %.2fx the speed of plain decoding (median of %zu alternating repetitions, "
                        "%.2f-%.2f); %lld of %lld guesses accepted (%.1f%%), %.2f tokens per step with guesses; output %s\n\n",
                        label, so.spec.c_str(), median(ratio), ratio.size(), *std::min_element(ratio.begin(), ratio.end()),
                        *std::max_element(ratio.begin(), ratio.end()), (long long)st.n_accepted, (long long)st.n_guessed,
                        100.0 * st.acceptance(), st.n_steps ? 1.0 + double(st.n_accepted) / double(st.n_steps) : 0.0,
                        same ? "identical" : "DIFFERENT (a bug)");
            std::fflush(stdout);
            if (!same) throw std::runtime_error("speculative decoding changed the output");
        }
    }
    return 0;
}

}  // namespace ls::cli
