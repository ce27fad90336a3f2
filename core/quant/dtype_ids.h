/* Element type ids, numbered as in GGUF (a file's type id is the value). The one definition
   of the numbers: C++ (core/quant/dtype.h's DType), CUDA, the GLSL shaders (#if WTYPE ==
   LS_TYPE_Q4_0; shaders/common.glsl includes this file; a shader's "// variant:" lines pass
   WTYPE=LS_TYPE_Q4_0 by name) and CMake (which reads the names here to check that every op has
   its shader, backends/vulkan/CMakeLists.txt) all take them from here. Plain #defines, so every one of them can. */
#ifndef LS_CORE_QUANT_DTYPE_IDS_H
#define LS_CORE_QUANT_DTYPE_IDS_H

#define LS_TYPE_F32 0
#define LS_TYPE_F16 1
#define LS_TYPE_Q4_0 2
#define LS_TYPE_Q4_1 3
#define LS_TYPE_Q5_0 6
#define LS_TYPE_Q5_1 7
#define LS_TYPE_Q8_0 8
#define LS_TYPE_Q8_1 9
#define LS_TYPE_Q2_K 10
#define LS_TYPE_Q3_K 11
#define LS_TYPE_Q4_K 12
#define LS_TYPE_Q5_K 13
#define LS_TYPE_Q6_K 14
#define LS_TYPE_Q8_K 15
#define LS_TYPE_I8 24
#define LS_TYPE_I16 25
#define LS_TYPE_I32 26
#define LS_TYPE_I64 27
#define LS_TYPE_F64 28
#define LS_TYPE_IQ1_M 29
#define LS_TYPE_IQ2_XXS 16
#define LS_TYPE_IQ2_XS 17
#define LS_TYPE_IQ3_XXS 18
#define LS_TYPE_IQ1_S 19
#define LS_TYPE_IQ4_NL 20
#define LS_TYPE_IQ3_S 21
#define LS_TYPE_IQ2_S 22
#define LS_TYPE_IQ4_XS 23
#define LS_TYPE_BF16 30
#define LS_TYPE_TQ1_0 34
#define LS_TYPE_TQ2_0 35
#define LS_TYPE_MXFP4 39

#endif  /* LS_CORE_QUANT_DTYPE_IDS_H */
