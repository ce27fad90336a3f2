// The instruction-set forms of the GEMM tiles this build compiles, from the compiler's
// target macros (-march). Every form computes the same exact integer block sums, so the
// results do not depend on which one runs.
#pragma once

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define LS_GEMM_AVX2 1
#include <immintrin.h>
#endif

// VNNI (AVX512-VNNI with VL, or AVX-VNNI): one dpbusd sums four unsigned x signed byte
// products into each 32-bit lane, exactly, with no int16 saturation; it replaces the
// maddubs + madd pairs of the legacy blocks (same exact integer block sums, half the uops).
#if defined(LS_GEMM_AVX2) && ((defined(__AVX512VNNI__) && defined(__AVX512VL__)) || defined(__AVXVNNI__))
#define LS_GEMM_VNNI 1
#else
#define LS_GEMM_VNNI 0
#endif

// AVX-512 with VNNI: the legacy types take 16 weight rows per tile in 512-bit vectors (lane r
// = row r), half the instructions per row and token of the 8-row form.
#if LS_GEMM_VNNI && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
#define LS_GEMM_V512 1
#else
#define LS_GEMM_V512 0
#endif

