// mul_mat (core/ref/mul_mat.cpp), in two stages compiled from this one source:
//  STAGE_ACT (ATYPE = the weight's dot type): each activation row quantized exactly as
//    quantize_row does (core/quant_*.cpp), into a scratch row;
//  the dot (WTYPE = the weight type): per output, an exact integer sum per block, then the
//    reference's float chain over the blocks in order, sum = fma_rn(d_w * d_a, float(isum), sum)
//    (K-quants with mins: the second chain, subtracted at the end; float weights: exact
//    products summed in double). Each invocation owns whole outputs, so tiling never
//    changes the bits. One invocation computes weight row n against MT activation rows.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_GOOGLE_include_directive : require
#ifdef SUBGROUP_DOT
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#include "shaders/common.glsl"
layout(local_size_x = 64) in;

#ifdef STAGE_ACT
layout(push_constant, std430) uniform Pc { PcMulMatAct p; } pc;

void main() {
#if ATYPE == 8 || ATYPE == 9
    const uint bsz = 32u;
#elif ATYPE == 15
    const uint bsz = 256u;
#else
    const uint bsz = 1u;
#endif
    const uint nblk = pc.p.K / bsz;
    const uint g = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * 64u;
    if (g >= nblk * pc.p.rows) return;
    const uint r = g / nblk, b = g % nblk;
    const uint i1 = r % pc.p.ne1, i2 = (r / pc.p.ne1) % pc.p.ne2, i3 = r / (pc.p.ne1 * pc.p.ne2);
    const uint64_t x = pc.p.x + uint64_t(i1) * pc.p.nb1 + uint64_t(i2) * pc.p.nb2 + uint64_t(i3) * pc.p.nb3 + uint64_t(b) * bsz * 4u;
    const uint64_t arow = pc.p.act + uint64_t(r) * pc.p.act_nb1;
#if ATYPE == 0
    F32(arow).v[b] = F32(x).v[0];
#elif ATYPE == 1
    st16(arow, 2u * b, f2h(F32(x).v[0]));
#elif ATYPE == 8 || ATYPE == 9
    float amax = 0.0;
    for (uint j = 0u; j < 32u; ++j) amax = max(amax, abs(F32(x).v[j]));
    const float d = div_rn(amax, 127.0);
    const float id = amax != 0.0 ? div_rn(127.0, amax) : 0.0;
    const uint bs = ATYPE == 8 ? 34u : 36u, qo = ATYPE == 8 ? 2u : 4u;
    const uint64_t blk = arow + uint64_t(b) * bs;
    int sum = 0;
    for (uint j = 0u; j < 32u; ++j) {
        precise float v = F32(x).v[j] * id;
        const int q = int(roundEven(v));
        sum += q;
        st8(blk, qo + j, uint(q) & 0xFFu);
    }
    st16(blk, 0u, f2h(d));
#if ATYPE == 9
    precise float s = d * float(sum);
    st16(blk, 2u, f2h(s));
#endif
#else  // Q8_K
    float amax = 0.0;
    for (uint j = 0u; j < 256u; ++j) amax = max(amax, abs(F32(x).v[j]));
    const uint64_t blk = arow + uint64_t(b) * 292u;
    if (amax == 0.0) {
        for (uint j = 0u; j < 292u; ++j) st8(blk, j, 0u);
        return;
    }
    const float iscale = div_rn(127.0, amax);
    F32(blk).v[0] = div_rn(1.0, iscale);
    for (uint g16 = 0u; g16 < 16u; ++g16) {
        int s = 0;
        for (uint l = 0u; l < 16u; ++l) {
            precise float v = F32(x).v[16u * g16 + l] * iscale;
            const int q = int(roundEven(v));
            s += q;
            st8(blk, 4u + 16u * g16 + l, uint(q) & 0xFFu);
        }
        st16(blk, 260u + 2u * g16, uint(s) & 0xFFFFu);
    }
#endif
}

#else  // the dot
#ifdef MAT_ID
// mul_mat_id: activation "row" m is pair p = t * k + j; its weight matrix is expert ids[p]
// and its activation row t * X + (X == 1 ? 0 : j). One pair per invocation; an id outside
// [0, E) gives NaN (ids are computed on the device: the host cannot check them first).
layout(push_constant, std430) uniform Pc { PcMulMatId p; } pc;
const uint MT = 1u;
int expert_of(uint m) { return I32(pc.p.ids).v[m]; }
#define ACT_ROW(m) ((m) / pc.p.k * pc.p.X + (pc.p.X == 1u ? 0u : (m) % pc.p.k))
#define WROW(n, m) (pc.p.w + uint64_t(uint(expert_of(m))) * pc.p.w_nb2 + uint64_t(n) * pc.p.w_nb1)
#define ID_GUARD(n, m)                                                                          \
    if (expert_of(m) < 0 || uint(expert_of(m)) >= pc.p.E) {                                     \
        F32(pc.p.dst + (uint64_t(m) * pc.p.N + (n)) * 4u).v[0] = uintBitsToFloat(0x7FC00000u); \
        return;                                                                                 \
    }
#else
layout(push_constant, std430) uniform Pc { PcMulMat p; } pc;
const uint MT = 8u;  // activation rows per invocation (the host dispatches M / MT)
#define ACT_ROW(m) (m)
#define WROW(n, m) (pc.p.w + uint64_t(n) * pc.p.w_nb1)
#define ID_GUARD(n, m)
#endif

#if WTYPE == 0 || WTYPE == 1 || WTYPE == 30
// Float weights: exact products summed in double, in element order.
void main() {
    const uint n = gl_GlobalInvocationID.x, m0 = gl_GlobalInvocationID.y * MT;
    if (n >= pc.p.N || m0 >= pc.p.M) return;
    ID_GUARD(n, m0)
    const uint mc = min(MT, pc.p.M - m0);
    const uint64_t w = WROW(n, m0);
    double acc[MT];
    for (uint m = 0u; m < MT; ++m) acc[m] = 0.0;
    for (uint i = 0u; i < pc.p.K; ++i) {
#if WTYPE == 0
        const double wv = double(F32(w).v[i]);
#elif WTYPE == 1
        const double wv = double(h2f(ld16(w, 2u * i)));
#else
        const double wv = double(bf2f(ld16(w, 2u * i)));
#endif
        for (uint m = 0u; m < mc; ++m) {
            const uint64_t a = pc.p.act + uint64_t(ACT_ROW(m0 + m)) * pc.p.act_nb1;
#if WTYPE == 1
            precise double prod = wv * double(h2f(ld16(a, 2u * i)));
#else
            precise double prod = wv * double(F32(a).v[i]);
#endif
            acc[m] = acc[m] + prod;
        }
    }
    for (uint m = 0u; m < mc; ++m) F32(pc.p.dst + (uint64_t(m0 + m) * pc.p.N + n) * 4u).v[0] = d2f(acc[m]);
}

#elif WTYPE == 2 || WTYPE == 3 || WTYPE == 6 || WTYPE == 7 || WTYPE == 8
// 32-element blocks against Q8_0 (Q8_1 for the _1 types).
#if WTYPE == 2
const uint WB = 18u;
#elif WTYPE == 3
const uint WB = 20u;
#elif WTYPE == 6
const uint WB = 22u;
#elif WTYPE == 7
const uint WB = 24u;
#else
const uint WB = 34u;
#endif
#if WTYPE == 3 || WTYPE == 7
const uint AB = 36u, AQ = 4u;
#else
const uint AB = 34u, AQ = 2u;
#endif

// Integer levels of weight block wb.
void wlevels(uint64_t wb, out int q[32]) {
    // Weight levels from 32-bit loads (blocks are 2-aligned; ldw* handle both cases).
#if WTYPE == 8
    uint ww[8];
    ldw8(wb + 2u, ww);
    for (uint j = 0u; j < 32u; ++j) q[j] = sb(ww[j / 4u], j % 4u);
#else
#if WTYPE == 2 || WTYPE == 6
    const uint qs = WTYPE == 2 ? 2u : 6u;
#else
    const uint qs = WTYPE == 3 ? 4u : 8u;
#endif
    uint ww[4];
    ldw4(wb + qs, ww);
    for (uint j = 0u; j < 16u; ++j) {
        const uint byte = (ww[j / 4u] >> (8u * (j % 4u))) & 0xFFu;
        q[j] = int(byte & 15u);
        q[j + 16u] = int(byte >> 4);
    }
#if WTYPE == 6 || WTYPE == 7
    const uint qh = ldw1(wb + (WTYPE == 6 ? 2u : 4u));
    for (uint j = 0u; j < 32u; ++j) q[j] |= int((qh >> j) & 1u) << 4;
#endif
#if WTYPE == 2
    for (uint j = 0u; j < 32u; ++j) q[j] -= 8;
#elif WTYPE == 6
    for (uint j = 0u; j < 32u; ++j) q[j] -= 16;
#endif
#endif
}

#ifdef SUBGROUP_DOT
// Subgroup variant for a few activation rows (decode steps): one subgroup per weight row.
// Lane i computes the exact integer sums (and the scale products) of blocks i, i + S, ...
// (S = the subgroup's size), so the row is read by S lanes at once; then every lane walks the
// blocks in order, taking each block's values from the lane that computed them
// (subgroupShuffle), and runs the plain path's float chain: each output is the same bits.
// Used where the device supports subgroup shuffles in compute shaders (the host checks).
const uint MSG = 4u;  // activation rows at most (the host uses this variant for M <= 4)
void main() {
    const uint S = gl_SubgroupSize, lane = gl_SubgroupInvocationID;
    // Rows per workgroup: the host dispatches N / R workgroups with R from the subgroup size
    // the device reports; the loop covers R rows whatever the subgroups really are.
    const uint R = max(1u, 64u / SUBGROUP_SIZE);
    const uint mc = min(MSG, pc.p.M);
    const uint nb = pc.p.K / 32u;
    int q[32];
    for (uint r = gl_SubgroupID; r < R; r += gl_NumSubgroups) {
        const uint n = (gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x) * R + r;
        if (n >= pc.p.N) break;  // uniform over the subgroup
        const uint64_t w = pc.p.w + uint64_t(n) * pc.p.w_nb1;
        float sum[MSG];
        for (uint m = 0u; m < MSG; ++m) sum[m] = 0.0;
        for (uint b0 = 0u; b0 < nb; b0 += S) {
            const uint b = b0 + lane;
            int sumi[MSG];
            float dd[MSG], mw[MSG], ma[MSG];
            for (uint m = 0u; m < MSG; ++m) { sumi[m] = 0; dd[m] = 0.0; mw[m] = 0.0; ma[m] = 0.0; }
            if (b < nb) {
                const uint64_t wb = w + uint64_t(b) * WB;
                wlevels(wb, q);
                const float dw = h2f(ldh(wb));
                for (uint m = 0u; m < mc; ++m) {
                    const uint64_t ab = pc.p.act + uint64_t(m) * pc.p.act_nb1 + uint64_t(b) * AB;
                    uint aw[8];
                    ldw8(ab + AQ, aw);
                    int si = 0;  // exact: any order
                    for (uint j = 0u; j < 32u; ++j) si += q[j] * sb(aw[j / 4u], j % 4u);
                    sumi[m] = si;
                    precise float d = dw * h2f(ldh(ab));
                    dd[m] = d;
#if WTYPE == 3 || WTYPE == 7
                    mw[m] = h2f(ldh(wb + 2u));
                    ma[m] = h2f(ldh(ab + 2u));
#endif
                }
            }
            const uint cnt = min(S, nb - b0);
            for (uint j = 0u; j < cnt; ++j)
                for (uint m = 0u; m < mc; ++m) {
                    const int sj = subgroupShuffle(sumi[m], j);
                    const float dj = subgroupShuffle(dd[m], j);
                    sum[m] = fma_rn(dj, float(sj), sum[m]);
#if WTYPE == 3 || WTYPE == 7
                    sum[m] = fma_rn(subgroupShuffle(mw[m], j), subgroupShuffle(ma[m], j), sum[m]);
#endif
                }
        }
        if (lane == 0u)
            for (uint m = 0u; m < mc; ++m) F32(pc.p.dst + (uint64_t(m) * pc.p.N + n) * 4u).v[0] = sum[m];
    }
}

#elif defined(SHARED_ACT)
// Shared-memory variant: every invocation of a workgroup reads the same MT activation rows
// (it owns weight row n against rows m0..m0+MT), so the workgroup stages CB blocks of them
// in shared memory at a time (quant words, and the f16 scales already as floats: the same
// values), one barrier, then each invocation runs its own chain over the blocks in order,
// exactly as above.
const uint CB = 16u;
shared uint s_q[MT * CB * 8u];
shared float s_d[MT * CB];
#if WTYPE == 3 || WTYPE == 7
shared float s_s[MT * CB];
#endif
void main() {
    const uint lid = gl_LocalInvocationID.x;
    const uint n = gl_GlobalInvocationID.x, m0 = gl_WorkGroupID.y * MT;
    if (m0 >= pc.p.M) return;  // uniform over the workgroup
    const uint mc = min(MT, pc.p.M - m0);
    const bool live = n < pc.p.N;
    const uint64_t w = pc.p.w + uint64_t(n) * pc.p.w_nb1;
    float sum[MT];
    for (uint m = 0u; m < MT; ++m) sum[m] = 0.0;
    int q[32];
    const uint nb = pc.p.K / 32u;
    for (uint b0 = 0u; b0 < nb; b0 += CB) {
        const uint cb = min(CB, nb - b0);
        barrier();  // the previous round's reads are done
        for (uint i = lid; i < mc * cb * 8u; i += gl_WorkGroupSize.x) {
            const uint m = i / (cb * 8u), r = i % (cb * 8u), bb = r / 8u, k = r % 8u;
            const uint64_t ab = pc.p.act + uint64_t(m0 + m) * pc.p.act_nb1 + uint64_t(b0 + bb) * AB;
            s_q[(m * CB + bb) * 8u + k] = ldw1(ab + AQ + 4u * k);
        }
        for (uint i = lid; i < mc * cb; i += gl_WorkGroupSize.x) {
            const uint m = i / cb, bb = i % cb;
            const uint64_t ab = pc.p.act + uint64_t(m0 + m) * pc.p.act_nb1 + uint64_t(b0 + bb) * AB;
            s_d[m * CB + bb] = h2f(ldh(ab));
#if WTYPE == 3 || WTYPE == 7
            s_s[m * CB + bb] = h2f(ldh(ab + 2u));
#endif
        }
        barrier();
        if (live) {
            for (uint bb = 0u; bb < cb; ++bb) {
                const uint64_t wb = w + uint64_t(b0 + bb) * WB;
                wlevels(wb, q);
                const float dw = h2f(ldh(wb));
#if WTYPE == 3 || WTYPE == 7
                const float mw = h2f(ldh(wb + 2u));
#endif
                for (uint m = 0u; m < mc; ++m) {
                    const uint base = (m * CB + bb) * 8u;
                    uint aw[8];
                    for (uint k = 0u; k < 8u; ++k) aw[k] = s_q[base + k];
                    int sumi = 0;  // exact: any order
                    for (uint j = 0u; j < 32u; ++j) sumi += q[j] * sb(aw[j / 4u], j % 4u);
                    precise float dd = dw * s_d[m * CB + bb];
                    sum[m] = fma_rn(dd, float(sumi), sum[m]);
#if WTYPE == 3 || WTYPE == 7
                    sum[m] = fma_rn(mw, s_s[m * CB + bb], sum[m]);
#endif
                }
            }
        }
    }
    if (live)
        for (uint m = 0u; m < mc; ++m) F32(pc.p.dst + (uint64_t(m0 + m) * pc.p.N + n) * 4u).v[0] = sum[m];
}
#else
void main() {
    const uint n = gl_GlobalInvocationID.x, m0 = gl_GlobalInvocationID.y * MT;
    if (n >= pc.p.N || m0 >= pc.p.M) return;
    ID_GUARD(n, m0)
    const uint mc = min(MT, pc.p.M - m0);
    const uint64_t w = WROW(n, m0);
    float sum[MT];
    for (uint m = 0u; m < MT; ++m) sum[m] = 0.0;
    int q[32];
    for (uint b = 0u; b < pc.p.K / 32u; ++b) {
        const uint64_t wb = w + uint64_t(b) * WB;
        wlevels(wb, q);
        const float dw = h2f(ldh(wb));
        for (uint m = 0u; m < mc; ++m) {
            const uint64_t ab = pc.p.act + uint64_t(ACT_ROW(m0 + m)) * pc.p.act_nb1 + uint64_t(b) * AB;
            uint aw[8];
            ldw8(ab + AQ, aw);
            int sumi = 0;  // exact: any order
            for (uint j = 0u; j < 32u; ++j) sumi += q[j] * sb(aw[j / 4u], j % 4u);
            precise float dd = dw * h2f(ldh(ab));
            sum[m] = fma_rn(dd, float(sumi), sum[m]);
#if WTYPE == 3 || WTYPE == 7
            sum[m] = fma_rn(h2f(ldh(wb + 2u)), h2f(ldh(ab + 2u)), sum[m]);
#endif
        }
    }
    for (uint m = 0u; m < mc; ++m) F32(pc.p.dst + (uint64_t(m0 + m) * pc.p.N + n) * 4u).v[0] = sum[m];
}

#endif  // SHARED_ACT

#else
// K-quants against Q8_K (256-element super-blocks).
// WB block bytes, SUB sub-block size, D / DMIN byte offsets of the f16 scales.
#if WTYPE == 10
const uint WB = 84u, SUB = 16u, D = 80u, DMIN = 82u;
#elif WTYPE == 11
const uint WB = 110u, SUB = 16u, D = 108u, DMIN = 0u;
#elif WTYPE == 12
const uint WB = 144u, SUB = 32u, D = 0u, DMIN = 2u;
#elif WTYPE == 13
const uint WB = 176u, SUB = 32u, D = 0u, DMIN = 2u;
#else
const uint WB = 210u, SUB = 16u, D = 208u, DMIN = 0u;
#endif
const bool HAS_MIN = WTYPE == 10 || WTYPE == 12 || WTYPE == 13;

// Integer level of element e of a super-block (the reference's *_value helpers).
int wlevel(uint64_t wb, uint e) {
#if WTYPE == 10
    const uint n = e / 128u, j = (e % 128u) / 32u, l = e % 32u;
    return int((ld8(wb, 16u + 32u * n + l) >> (2u * j)) & 3u);
#elif WTYPE == 11
    const uint n = e / 128u, j = (e % 128u) / 32u, l = e % 32u;
    const int lo = int((ld8(wb, 32u + 32u * n + l) >> (2u * j)) & 3u);
    const int hi = int((ld8(wb, l) >> (4u * n + j)) & 1u);
    return lo - (hi != 0 ? 0 : 4);
#elif WTYPE == 12 || WTYPE == 13
    const uint c = e / 64u, h = (e % 64u) / 32u, l = e % 32u;
    int v = int((ld8(wb, (WTYPE == 12 ? 16u : 48u) + 32u * c + l) >> (4u * h)) & 15u);
#if WTYPE == 13
    v |= int((ld8(wb, 16u + (e % 32u)) >> (e / 32u)) & 1u) << 4;
#endif
    return v;
#else
    const uint n = e / 128u, k = (e % 128u) / 32u, l = e % 32u;
    const uint lo = (ld8(wb, 64u * n + 32u * (k % 2u) + l) >> (4u * (k / 2u))) & 15u;
    const uint hi = (ld8(wb, 128u + 32u * n + l) >> (2u * k)) & 3u;
    return int(lo | (hi << 4)) - 32;
#endif
}

// Scale (and min) of sub-block s.
void wscale(uint64_t wb, uint s, out int sc, out int mn) {
#if WTYPE == 10
    const uint v = ld8(wb, s);
    sc = int(v & 15u);
    mn = int(v >> 4);
#elif WTYPE == 11
    const int lo = int(s < 8u ? (ld8(wb, 96u + s) & 15u) : (ld8(wb, 96u + s - 8u) >> 4));
    const int hi = int((ld8(wb, 104u + (s & 3u)) >> (2u * (s >> 2u))) & 3u);
    sc = (lo | (hi << 4)) - 32;
    mn = 0;
#elif WTYPE == 12 || WTYPE == 13
    if (s < 4u) {
        sc = int(ld8(wb, 4u + s) & 63u);
        mn = int(ld8(wb, 8u + s) & 63u);
    } else {
        sc = int((ld8(wb, 8u + s) & 15u) | ((ld8(wb, s) >> 6) << 4));
        mn = int((ld8(wb, 8u + s) >> 4) | ((ld8(wb, 4u + s) >> 6) << 4));
    }
#else
    sc = lds8(wb, 192u + s);
    mn = 0;
#endif
}

#if WTYPE == 12 || WTYPE == 13 || WTYPE == 14
// Integer sums of one super-block from 32-bit loads (exact, so their order is free).
void block_isums(uint64_t wb, uint64_t abase, uint mc, inout int isum[MT], inout int msum[MT]) {
    int q[32];
#if WTYPE == 14
    uint scw[4];
    ldw4(wb + 192u, scw);
    for (uint hn = 0u; hn < 2u; ++hn) {
        uint qhw[8];
        ldw8(wb + 128u + 32u * hn, qhw);
        for (uint kk = 0u; kk < 2u; ++kk) {
            uint qlw[8];
            ldw8(wb + 64u * hn + 32u * kk, qlw);
            for (uint k2 = 0u; k2 < 2u; ++k2) {
                const uint k = kk + 2u * k2;
                for (uint l = 0u; l < 32u; ++l) {
                    const uint lo = (qlw[l / 4u] >> (8u * (l % 4u) + 4u * k2)) & 15u;
                    const uint hi = (qhw[l / 4u] >> (8u * (l % 4u) + 2u * k)) & 3u;
                    q[l] = int(lo | (hi << 4)) - 32;
                }
                const uint s0 = 8u * hn + 2u * k;
                const int sc0 = sb(scw[s0 / 4u], s0 % 4u), sc1 = sb(scw[(s0 + 1u) / 4u], (s0 + 1u) % 4u);
                for (uint m = 0u; m < mc; ++m) {
                    uint aw[8];
                    ldw8(abase + uint64_t(m) * pc.p.act_nb1 + 4u + 128u * hn + 32u * k, aw);
                    int si0 = 0, si1 = 0;
                    for (uint l = 0u; l < 16u; ++l) si0 += q[l] * sb(aw[l / 4u], l % 4u);
                    for (uint l = 16u; l < 32u; ++l) si1 += q[l] * sb(aw[l / 4u], l % 4u);
                    isum[m] += sc0 * si0 + sc1 * si1;
                }
            }
        }
    }
#else
    uint scw[3];
    for (uint i = 0u; i < 3u; ++i) scw[i] = ldw1(wb + 4u + 4u * i);
#if WTYPE == 13
    uint qhw[8];
    ldw8(wb + 16u, qhw);
#endif
    for (uint c = 0u; c < 4u; ++c) {
        uint qw[8];
        ldw8(wb + (WTYPE == 12 ? 16u : 48u) + 32u * c, qw);
        for (uint h = 0u; h < 2u; ++h) {
            const uint s = 2u * c + h;
            for (uint l = 0u; l < 32u; ++l) {
                q[l] = int((qw[l / 4u] >> (8u * (l % 4u) + 4u * h)) & 15u);
#if WTYPE == 13
                q[l] |= int((qhw[l / 4u] >> (8u * (l % 4u) + s)) & 1u) << 4;
#endif
            }
            // scales (core/quant/quant_k.cpp get_scale_min_k4), bytes of scw
#define SCB(k) ((scw[(k) / 4u] >> (8u * ((k) % 4u))) & 0xFFu)
            int sc, mn;
            if (s < 4u) {
                sc = int(SCB(s) & 63u);
                mn = int(SCB(s + 4u) & 63u);
            } else {
                sc = int((SCB(s + 4u) & 15u) | ((SCB(s - 4u) >> 6) << 4));
                mn = int((SCB(s + 4u) >> 4) | ((SCB(s) >> 6) << 4));
            }
#undef SCB
            for (uint m = 0u; m < mc; ++m) {
                const uint64_t ab = abase + uint64_t(m) * pc.p.act_nb1;
                uint aw[8];
                ldw8(ab + 4u + 32u * s, aw);
                int si = 0;
                for (uint l = 0u; l < 32u; ++l) si += q[l] * sb(aw[l / 4u], l % 4u);
                isum[m] += sc * si;
                const uint bw = ldw1(ab + 260u + 4u * s);
                msum[m] += mn * ((int(bw << 16) >> 16) + (int(bw) >> 16));
            }
        }
    }
#endif
}
#endif

void main() {
    const uint n = gl_GlobalInvocationID.x, m0 = gl_GlobalInvocationID.y * MT;
    if (n >= pc.p.N || m0 >= pc.p.M) return;
    ID_GUARD(n, m0)
    const uint mc = min(MT, pc.p.M - m0);
    const uint64_t w = WROW(n, m0);
    float sum[MT], msum_f[MT];
    for (uint m = 0u; m < MT; ++m) { sum[m] = 0.0; msum_f[m] = 0.0; }
    int q[32];
    for (uint b = 0u; b < pc.p.K / 256u; ++b) {
        const uint64_t wb = w + uint64_t(b) * WB;
        int isum[MT], msum[MT];
        for (uint m = 0u; m < MT; ++m) { isum[m] = 0; msum[m] = 0; }
#if WTYPE == 12 || WTYPE == 13 || WTYPE == 14
        block_isums(wb, pc.p.act + uint64_t(ACT_ROW(m0)) * pc.p.act_nb1 + uint64_t(b) * 292u, mc, isum, msum);
#else
        for (uint s = 0u; s < 256u / SUB; ++s) {
            for (uint t = 0u; t < SUB; ++t) q[t] = wlevel(wb, SUB * s + t);
            int sc, mn;
            wscale(wb, s, sc, mn);
            for (uint m = 0u; m < mc; ++m) {
                const uint64_t ab = pc.p.act + uint64_t(ACT_ROW(m0 + m)) * pc.p.act_nb1 + uint64_t(b) * 292u;
                int si = 0;
                for (uint t = 0u; t < SUB; ++t) si += q[t] * lds8(ab, 4u + SUB * s + t);
                isum[m] += sc * si;
                if (HAS_MIN) {
                    const int bs = SUB == 16u ? lds16(ab, 260u + 2u * s) : lds16(ab, 260u + 4u * s) + lds16(ab, 262u + 4u * s);
                    msum[m] += mn * bs;
                }
            }
        }
#endif
        const float dw = h2f(ld16(wb, D)), dmin = h2f(ld16(wb, DMIN));
        for (uint m = 0u; m < mc; ++m) {
            const uint64_t ab = pc.p.act + uint64_t(ACT_ROW(m0 + m)) * pc.p.act_nb1 + uint64_t(b) * 292u;
            const float da = F32(ab).v[0];
            precise float dd = da * dw;
            sum[m] = fma_rn(dd, float(isum[m]), sum[m]);
            if (HAS_MIN) {
                precise float dm = da * dmin;
                msum_f[m] = fma_rn(dm, float(msum[m]), msum_f[m]);
            }
        }
    }
    for (uint m = 0u; m < mc; ++m) {
        precise float r = HAS_MIN ? sum[m] - msum_f[m] : sum[m];
        F32(pc.p.dst + (uint64_t(m0 + m) * pc.p.N + n) * 4u).v[0] = r;
    }
}
#endif
#endif
