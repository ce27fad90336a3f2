#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/ir/op_params.h"
#include "core/rules/rope_rule.h"
#include "cpu/ops/cpu_ops.h"

namespace ls::cpu {
namespace {

// cos/sin of every (token, pair) angle, as in ref::rope (double, same formula). A graph
// ropes q and k of every layer with the same positions and one or two frequency settings
// (Gemma 3: local and global bases), so the last two tables are kept per thread and reused
// when positions and settings are equal (the cache is checked by content, never trusted).
struct RopeTable {
    std::vector<int32_t> pos;
    std::vector<float> ff;
    RopeParams p{};
    std::vector<float> cs, sn;  // [token][pair]
    bool matches(const int32_t* ps, int64_t T, const float* f, const RopeParams& rp) const {
        // The fields the angles depend on (mode only pairs them differently).
        return p.n_dims == rp.n_dims && p.freq_base == rp.freq_base && p.freq_scale == rp.freq_scale && p.ext_factor == rp.ext_factor &&
               p.attn_factor == rp.attn_factor && p.corr_lo == rp.corr_lo && p.corr_hi == rp.corr_hi && int64_t(pos.size()) == T &&
               std::equal(pos.begin(), pos.end(), ps) && (f ? ff.size() == size_t(p.n_dims / 2) && std::equal(ff.begin(), ff.end(), f) : ff.empty());
    }
};

const RopeTable& rope_table(const int32_t* pos, int64_t T, const float* ff, const RopeParams& p) {
    thread_local RopeTable tables[2];
    thread_local int last = 0;
    for (int k = 0; k < 2; ++k)
        if (tables[k].matches(pos, T, ff, p)) return last = k, tables[k];
    RopeTable& t = tables[last ^= 1];
    const int64_t half = p.n_dims / 2;
    t.pos.assign(pos, pos + T);
    t.ff = ff ? std::vector<float>(ff, ff + half) : std::vector<float>();
    t.p = p;
    t.cs.resize(size_t(T * half));
    t.sn.resize(size_t(T * half));
    // The angles of core/rules/rope_rule.h, positions spread over the threads.
    const std::vector<double> inv_freq = rope_inv_freq(p.freq_base, p.n_dims);
    tbb::parallel_for(int64_t(0), T, [&](int64_t tk) {
        for (int64_t i = 0; i < half; ++i)
            rope_cos_sin(pos[tk], p, inv_freq[size_t(i)], ff, i, t.cs[size_t(tk * half + i)], t.sn[size_t(tk * half + i)]);
    });
    return t;
}

}  // namespace

void rope(const Tensor& dst) {
    const Tensor& x = *dst.src[0];
    const int32_t* pos = dst.src[1]->data_as<const int32_t>();
    const float* ff = dst.src[2] ? dst.src[2]->data_as<const float>() : nullptr;
    const RopeParams p = dst.get_params<RopeParams>();
    const int64_t half = p.n_dims / 2;
    const RopeTable& tab = rope_table(pos, x.ne[2], ff, p);
    tbb::parallel_for(int64_t(0), x.ne[2], [&](int64_t t) {
        const float* cs = tab.cs.data() + t * half;
        const float* sn = tab.sn.data() + t * half;
        for (int64_t h = 0; h < x.ne[1]; ++h) {
            const float* px = reinterpret_cast<const float*>(x.row(h, t));
            float* py = reinterpret_cast<float*>(dst.row(h, t));
            for (int64_t i = p.n_dims; i < x.ne[0]; ++i) py[i] = px[i];
            for (int64_t i = 0; i < half; ++i) {
                const int64_t i0 = p.mode == ROPE_NEOX ? i : 2 * i;
                const int64_t i1 = p.mode == ROPE_NEOX ? i + half : 2 * i + 1;
                const float a = px[i0], b = px[i1];
                py[i0] = a * cs[i] - b * sn[i];
                py[i1] = a * sn[i] + b * cs[i];
            }
        }
    });
}

}  // namespace ls::cpu
