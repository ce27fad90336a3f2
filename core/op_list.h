// The op registry: one row per op. It generates the OpId enum, the op names, and every
// backend's dispatch table (see core/ref/ref_ops.cpp, cpu/cpu_backend.cpp), so adding an op
// is a row here plus one kernel file per backend, and a backend missing a kernel fails to link.
//
//  X(ENUM, name)
#pragma once

#define LS_OP_LIST(X)       \
    X(GET_ROWS, get_rows)   \
    X(SET_ROWS, set_rows)   \
    X(MUL_MAT, mul_mat)     \
    X(ADD, add)             \
    X(MUL, mul)             \
    X(SCALE, scale)         \
    X(RMS_NORM, rms_norm)   \
    X(ROPE, rope)           \
    X(GELU, gelu)           \
    X(SILU, silu)           \
    X(SOFTMAX, softmax)     \
    X(ATTENTION, attention) \
    X(SIGMOID, sigmoid)     \
    X(SOFTPLUS, softplus)   \
    X(CONV1D_SCAN, conv1d_scan) \
    X(DELTA_SCAN, delta_scan)   \
    X(TOPK, topk)               \
    X(MUL_MAT_ID, mul_mat_id)   \
    X(SOFTCAP, softcap)
