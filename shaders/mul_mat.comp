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
layout(push_constant, std430) uniform Pc { PcMulMat p; } pc;
const uint MT = 4u;

#if WTYPE == 0 || WTYPE == 1 || WTYPE == 30
// Float weights: exact products summed in double, in element order.
void main() {
    const uint n = gl_GlobalInvocationID.x, m0 = gl_GlobalInvocationID.y * MT;
    if (n >= pc.p.N || m0 >= pc.p.M) return;
    const uint mc = min(MT, pc.p.M - m0);
    const uint64_t w = pc.p.w + uint64_t(n) * pc.p.w_nb1;
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
            const uint64_t a = pc.p.act + uint64_t(m0 + m) * pc.p.act_nb1;
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

void main() {
    const uint n = gl_GlobalInvocationID.x, m0 = gl_GlobalInvocationID.y * MT;
    if (n >= pc.p.N || m0 >= pc.p.M) return;
    const uint mc = min(MT, pc.p.M - m0);
    const uint64_t w = pc.p.w + uint64_t(n) * pc.p.w_nb1;
    float sum[MT];
    for (uint m = 0u; m < MT; ++m) sum[m] = 0.0;
    int q[32];
    for (uint b = 0u; b < pc.p.K / 32u; ++b) {
        const uint64_t wb = w + uint64_t(b) * WB;
#if WTYPE == 8
        for (uint j = 0u; j < 32u; ++j) q[j] = lds8(wb, 2u + j);
#else
#if WTYPE == 2 || WTYPE == 6
        const uint qs = WTYPE == 2 ? 2u : 6u;
#else
        const uint qs = WTYPE == 3 ? 4u : 8u;
#endif
        for (uint j = 0u; j < 16u; ++j) {
            const uint byte = ld8(wb, qs + j);
            q[j] = int(byte & 15u);
            q[j + 16u] = int(byte >> 4);
        }
#if WTYPE == 6 || WTYPE == 7
        const uint qh = ld32(wb, WTYPE == 6 ? 2u : 4u);
        for (uint j = 0u; j < 32u; ++j) q[j] |= int((qh >> j) & 1u) << 4;
#endif
#if WTYPE == 2
        for (uint j = 0u; j < 32u; ++j) q[j] -= 8;
#elif WTYPE == 6
        for (uint j = 0u; j < 32u; ++j) q[j] -= 16;
#endif
#endif
        const float dw = h2f(ld16(wb, 0u));
        for (uint m = 0u; m < mc; ++m) {
            const uint64_t ab = pc.p.act + uint64_t(m0 + m) * pc.p.act_nb1 + uint64_t(b) * AB;
            int sumi = 0;
            for (uint j = 0u; j < 32u; ++j) sumi += q[j] * lds8(ab, AQ + j);
            precise float dd = dw * h2f(ld16(ab, 0u));
            sum[m] = fma_rn(dd, float(sumi), sum[m]);
#if WTYPE == 3 || WTYPE == 7
            sum[m] = fma_rn(h2f(ld16(wb, 2u)), h2f(ld16(ab, 2u)), sum[m]);
#endif
        }
    }
    for (uint m = 0u; m < mc; ++m) F32(pc.p.dst + (uint64_t(m0 + m) * pc.p.N + n) * 4u).v[0] = sum[m];
}

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

void main() {
    const uint n = gl_GlobalInvocationID.x, m0 = gl_GlobalInvocationID.y * MT;
    if (n >= pc.p.N || m0 >= pc.p.M) return;
    const uint mc = min(MT, pc.p.M - m0);
    const uint64_t w = pc.p.w + uint64_t(n) * pc.p.w_nb1;
    float sum[MT], msum_f[MT];
    for (uint m = 0u; m < MT; ++m) { sum[m] = 0.0; msum_f[m] = 0.0; }
    int q[32];
    for (uint b = 0u; b < pc.p.K / 256u; ++b) {
        const uint64_t wb = w + uint64_t(b) * WB;
        int isum[MT], msum[MT];
        for (uint m = 0u; m < MT; ++m) { isum[m] = 0; msum[m] = 0; }
        for (uint s = 0u; s < 256u / SUB; ++s) {
            for (uint t = 0u; t < SUB; ++t) q[t] = wlevel(wb, SUB * s + t);
            int sc, mn;
            wscale(wb, s, sc, mn);
            for (uint m = 0u; m < mc; ++m) {
                const uint64_t ab = pc.p.act + uint64_t(m0 + m) * pc.p.act_nb1 + uint64_t(b) * 292u;
                int si = 0;
                for (uint t = 0u; t < SUB; ++t) si += q[t] * lds8(ab, 4u + SUB * s + t);
                isum[m] += sc * si;
                if (HAS_MIN) {
                    const int bs = SUB == 16u ? lds16(ab, 260u + 2u * s) : lds16(ab, 260u + 4u * s) + lds16(ab, 262u + 4u * s);
                    msum[m] += mn * bs;
                }
            }
        }
        const float dw = h2f(ld16(wb, D)), dmin = h2f(ld16(wb, DMIN));
        for (uint m = 0u; m < mc; ++m) {
            const uint64_t ab = pc.p.act + uint64_t(m0 + m) * pc.p.act_nb1 + uint64_t(b) * 292u;
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
