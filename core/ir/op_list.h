// The op registry: one row per op, naming it and its parameter struct (core/ir/op_params.h;
// NoParams for none). The rows generate the OpId enum, the op names, the OpParams<OpId>
// trait, and every backend's dispatch and `supports` tables (core/ref/ref_backend.cpp,
// cpu/cpu_backend.cpp, backends/vulkan/op_table.cpp, backends/cuda/cuda_backend.cpp), so
// adding an op is a row here plus one kernel file per backend (README, "Adding an op"), and
// a backend missing an op's kernel fails to build (an undefined symbol at link time).
//
//  X(ENUM, name, ParamStruct)
#pragma once

#define LS_OP_LIST(X)                             \
    X(GET_ROWS, get_rows, NoParams)               \
    X(SET_ROWS, set_rows, NoParams)               \
    X(MUL_MAT, mul_mat, NoParams)                 \
    X(ADD, add, NoParams)                         \
    X(MUL, mul, NoParams)                         \
    X(SCALE, scale, ScaleParams)                  \
    X(RMS_NORM, rms_norm, RmsNormParams)          \
    X(ROPE, rope, RopeParams)                     \
    X(GELU, gelu, NoParams)                       \
    X(SILU, silu, NoParams)                       \
    X(SOFTMAX, softmax, SoftmaxParams)            \
    X(ATTENTION, attention, AttentionParams)      \
    X(SIGMOID, sigmoid, NoParams)                 \
    X(SOFTPLUS, softplus, NoParams)               \
    X(CONV1D_SCAN, conv1d_scan, Conv1dScanParams) \
    X(DELTA_SCAN, delta_scan, DeltaScanParams)    \
    X(TOPK, topk, TopkParams)                     \
    X(MUL_MAT_ID, mul_mat_id, NoParams)           \
    X(SOFTCAP, softcap, SoftcapParams)            \
    X(CLAMP, clamp, ClampParams)                 \
    X(CONCAT, concat, NoParams)                  \
    X(SSM_SCAN, ssm_scan, SsmScanParams)          \
    X(LAYER_NORM, layer_norm, LayerNormParams)  \
    X(GELU_ERF, gelu_erf, NoParams)
