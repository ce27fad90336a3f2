/* The 16 int8 levels of the lookup-table types, four 32-bit words each (byte i % 4 of word
   i / 4 is level i): the one definition that C++ (core/quant/block_access.h joins them into its
   64-bit constants), CUDA and the GLSL shaders (shaders/common.glsl, which has no 64-bit
   integers) all read. Plain #defines, like dtype_ids.h. */
#ifndef LS_CORE_QUANT_QUANT_LEVELS_H
#define LS_CORE_QUANT_QUANT_LEVELS_H
/* IQ4_NL / IQ4_XS: -127 -104 -83 -65 -49 -35 -22 -10 1 13 25 38 53 69 89 113 */
#define LS_IQ4NL_LEVEL_WORDS 0xBFAD9881u, 0xF6EADDCFu, 0x26190D01u, 0x71594535u
/* MXFP4 (E2M1 doubled): 0 1 2 3 4 6 8 12 -0 -1 -2 -3 -4 -6 -8 -12 */
#define LS_MXFP4_LEVEL_WORDS 0x03020100u, 0x0C080604u, 0xFDFEFF00u, 0xF4F8FAFCu
#endif /* LS_CORE_QUANT_QUANT_LEVELS_H */
