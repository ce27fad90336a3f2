// The canonical arithmetic of core/rules/canon.h in GLSL, operation for operation, with
// float32 and int32 only (no shader declares Float64 or Int64).
//
// Vulkan promises correctly rounded +, - and *, but allows division 2.5 ulp and takes sqrt
// from inversesqrt. canon_div and canon_sqrt therefore compute the correctly rounded result
// from the bits, in 32-bit integers: restoring long division and the digit-by-digit root,
// one guard bit and a sticky bit, round to nearest even, subnormal inputs and results,
// infinities, zeros and NaN as x86's divss / sqrtss give them. Every float expression whose
// rounding the contract fixes is `precise`, so no compiler contracts it into an fma.
// Included by shaders/common.glsl; it needs nothing but core GLSL.

// Quiet NaN x86 produces for invalid operations (0/0, inf/inf, sqrt(-1)).
#define kDefaultNaN uintBitsToFloat(0xFFC00000u)

// Mantissa with the implicit bit ([2^23, 2^24), subnormals normalized) and the unbiased
// exponent of a finite non-zero float's magnitude bits ax.
void canon_unpack(uint ax, out uint m, out int e) {
    const uint be = ax >> 23;
    if (be != 0u) {
        m = (ax & 0x7FFFFFu) | 0x800000u;
        e = int(be) - 127;
    } else {
        const int lz = 23 - findMSB(ax);
        m = ax << uint(lz);
        e = -126 - lz;
    }
}

// Rounds q * 2^(E - 24) (q in [2^24, 2^25): 24 bits and a guard bit below them; sticky: the
// exact value is a little above that) to the nearest even float, subnormal or overflowing
// results included; the magnitude's bits.
uint canon_round(uint q, bool sticky, int E) {
    // Bits dropped: the guard bit for a normal result, more below 2^-126.
    const int shift = E >= -126 ? 1 : -E - 125;
    if (shift > 25) return 0u;  // below half the smallest subnormal
    const uint r = q >> uint(shift), rem = q & ((1u << uint(shift)) - 1u), half_ = 1u << uint(shift - 1);
    const bool up = rem > half_ || (rem == half_ && (sticky || (r & 1u) != 0u));
    const uint rr = r + (up ? 1u : 0u);
    if (E < -126) return rr;  // subnormal (rr == 2^23 is the smallest normal, as it should be)
    // The implicit bit of rr adds the last exponent step; a carry to 2^24 moves up one binade.
    const uint bits = uint(E + 126) * 0x800000u + rr;
    return bits >= 0x7F800000u || E > 127 ? 0x7F800000u : bits;
}

// a / b, correctly rounded.
float canon_div(float a, float b) {
    const uint xa = floatBitsToUint(a), xb = floatBitsToUint(b);
    const uint sign = (xa ^ xb) & 0x80000000u;
    const uint aa = xa & 0x7FFFFFFFu, ab = xb & 0x7FFFFFFFu;
    if (aa > 0x7F800000u) return uintBitsToFloat(xa | 0x400000u);  // NaN a, quieted
    if (ab > 0x7F800000u) return uintBitsToFloat(xb | 0x400000u);
    if (aa == 0x7F800000u) return ab == 0x7F800000u ? kDefaultNaN : uintBitsToFloat(sign | 0x7F800000u);
    if (ab == 0x7F800000u) return uintBitsToFloat(sign);
    if (ab == 0u) return aa == 0u ? kDefaultNaN : uintBitsToFloat(sign | 0x7F800000u);
    if (aa == 0u) return uintBitsToFloat(sign);
    uint ma, mb;
    int ea, eb;
    canon_unpack(aa, ma, ea);
    canon_unpack(ab, mb, eb);
    int E = ea - eb;  // exponent of the quotient's leading bit
    if (ma < mb) {
        ma <<= 1u;
        E -= 1;
    }
    // ma in [mb, 2 mb): 25 quotient bits, the first one 1.
    uint r = ma, q = 0u;
    for (int i = 0; i < 25; ++i) {
        q <<= 1u;
        if (r >= mb) {
            r -= mb;
            q |= 1u;
        }
        r <<= 1u;
    }
    return uintBitsToFloat(sign | canon_round(q, r != 0u, E));
}

// sqrt(x), correctly rounded.
float canon_sqrt(float x) {
    const uint xx = floatBitsToUint(x);
    const uint ax = xx & 0x7FFFFFFFu;
    if (ax > 0x7F800000u) return uintBitsToFloat(xx | 0x400000u);  // NaN, quieted
    if (ax == 0u) return x;                                      // +-0
    if (xx >= 0x80000000u) return kDefaultNaN;                   // negative
    if (ax == 0x7F800000u) return x;                             // +inf
    uint m;
    int e;
    canon_unpack(ax, m, e);
    if ((e & 1) != 0) {  // an even exponent: m in [2^23, 2^25)
        m <<= 1u;
        e -= 1;
    }
    // The root of R = m * 2^25 (50 bits) two bits at a time from the top: 25 root bits,
    // the first one 1 (R >= 2^48), the last one the guard bit.
    uint rem = 0u, root = 0u;
    for (int i = 0; i < 25; ++i) {
        const int p = 49 - 2 * i - 25;  // bit of m at the pair's high bit
        const uint hi = p >= 0 ? (m >> uint(p)) & 1u : 0u;
        const uint lo = p >= 1 ? (m >> uint(p - 1)) & 1u : 0u;
        rem = (rem << 2u) | (hi << 1u) | lo;
        const uint trial = (root << 2u) | 1u;
        if (rem >= trial) {
            rem -= trial;
            root = (root << 1u) | 1u;
        } else {
            root <<= 1u;
        }
    }
    return uintBitsToFloat(canon_round(root, rem != 0u, e / 2));
}

// ---- rule 5: the canonical sum's fixed tree over 32 partials, s[l] += s[l + w] for
// w = 16, 8, 4, 2, 1 (kernels that hold the partials in one invocation; the workgroup form
// runs the same steps over shared memory). Every loop over the 32 partials has a constant
// trip count and constant indices once unrolled, so the partials stay in registers (a
// dynamically indexed array goes to memory, per lane, on lavapipe).
#define CANON_TREE_STEP(w) for (uint l = 0u; l < (w); ++l) { precise float t = s[l] + s[l + (w)]; s[l] = t; }
float canon_tree(inout float s[32]) {
    CANON_TREE_STEP(16u)
    CANON_TREE_STEP(8u)
    CANON_TREE_STEP(4u)
    CANON_TREE_STEP(2u)
    CANON_TREE_STEP(1u)
    return s[0];
}

// std::fmax: a NaN operand gives the other one (GLSL's max leaves NaN undefined).
float canon_fmax(float a, float b) {
    if (isnan(a)) return b;
    if (isnan(b)) return a;
    return max(a, b);
}

// ---- rule 4: elementary functions (core/rules/canon.h detc, the constants' bits)
#define kLog2e uintBitsToFloat(0x3fb8aa3bu)
#define kLn2Hi uintBitsToFloat(0x3f318000u)
#define kLn2Lo uintBitsToFloat(0xb95e8083u)
#define kMagic uintBitsToFloat(0x4b400000u)
#define kExpLo uintBitsToFloat(0xc2ae0000u)   // -87
#define kExpHi uintBitsToFloat(0x42b00000u)   // 88
#define kExpInf uintBitsToFloat(0x42b16666u)  // 88.7f
#define kGeluA uintBitsToFloat(0x3f4c422au)
#define kGeluB uintBitsToFloat(0x3d372713u)
#define kSqrt2 uintBitsToFloat(0x3fb504f3u)

float det_exp(float x) {
    if (isnan(x)) return x;
    const float xc = min(max(x, kExpLo), kExpHi);
    precise float t = xc * kLog2e + kMagic;
    precise float n = t - kMagic;
    precise float r = xc - n * kLn2Hi;
    r = r - n * kLn2Lo;
    // kP: 1/5040, 1/720, 1/120, 1/24, 1/6, 0.5, 1, 1 (Horner order)
    precise float p = uintBitsToFloat(0x39500d01u);
    p = p * r + uintBitsToFloat(0x3ab60b61u);
    p = p * r + uintBitsToFloat(0x3c088889u);
    p = p * r + uintBitsToFloat(0x3d2aaaabu);
    p = p * r + uintBitsToFloat(0x3e2aaaabu);
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    const int bits = (floatBitsToInt(t) - floatBitsToInt(kMagic) + 127) << 23;
    precise float y = p * intBitsToFloat(bits);
    if (x < kExpLo) y = 0.0;
    if (x > kExpInf) y = uintBitsToFloat(0x7F800000u);
    return y;
}

float det_gelu(float x) {
    precise float u = kGeluA * (x + kGeluB * (x * x * x));
    precise float den = 1.0 + det_exp(-2.0 * u);
    return canon_div(x, den);
}

// The exact (erf) GELU (core/rules/canon.h det_gelu_erf): erfc(|x| / sqrt 2) by Abramowitz &
// Stegun 7.1.26, a5 .. a1 in Horner order, then 2 - q or q.
float det_gelu_erf(float x) {
    precise float z = min(max(x, -x), 10.0) * uintBitsToFloat(0x3f3504f3u);
    precise float den = 1.0 + uintBitsToFloat(0x3ea7ba05u) * z;
    const float t = canon_div(1.0, den);
    precise float p = uintBitsToFloat(0x3f87dc22u);
    p = p * t + uintBitsToFloat(0xbfba00e3u);
    p = p * t + uintBitsToFloat(0x3fb5f0e3u);
    p = p * t + uintBitsToFloat(0xbe91a98eu);
    p = p * t + uintBitsToFloat(0x3e827906u);
    precise float q = (p * t) * det_exp(-(z * z));
    precise float phi2 = x >= 0.0 ? 2.0 - q : q;
    precise float h = 0.5 * x;
    return h * phi2;
}

float det_silu(float x) {
    precise float den = 1.0 + det_exp(-x);
    return canon_div(x, den);
}

// 1 / (1 + e^-x): gates of the hybrid models.
float det_sigmoid(float x) {
    precise float den = 1.0 + det_exp(-x);
    return canon_div(1.0, den);
}

float det_tanh(float y) {
    precise float den = 1.0 + det_exp(-2.0 * y);
    precise float r = canon_div(2.0, den) - 1.0;
    return r;
}

// log(1 + y) for y >= 0 (finite): canon.h's det_log1p.
float det_log1p(float y) {
    precise float u = 1.0 + y;
    precise float c = y - (u - 1.0);
    const int ub = floatBitsToInt(u);
    int e = (ub >> 23) - 127;
    precise float m = intBitsToFloat((ub & 0x7FFFFF) | 0x3F800000);  // [1, 2)
    if (m > kSqrt2) {
        m = m * 0.5;
        e = e + 1;
    }
    precise float f = m - 1.0;  // exact (Sterbenz)
    precise float den = 2.0 + f;
    const float s = canon_div(f, den);
    precise float s2 = s * s;
    // kL: 1/9, 1/7, 1/5, 1/3, 1 (Horner order)
    precise float p = uintBitsToFloat(0x3de38e39u);
    p = p * s2 + uintBitsToFloat(0x3e124925u);
    p = p * s2 + uintBitsToFloat(0x3e4ccccdu);
    p = p * s2 + uintBitsToFloat(0x3eaaaaabu);
    p = p * s2 + 1.0;
    precise float logm = (2.0 * s) * p;
    const float fe = float(e);
    const float cu = canon_div(c, u);
    precise float r = fe * kLn2Hi + (fe * kLn2Lo + (logm + cu));
    return r;
}

// log(1 + e^x), identity above 20.
float det_softplus(float x) {
    if (x > 20.0) return x;
    return det_log1p(det_exp(x));
}
