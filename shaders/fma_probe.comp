// The native-math probes (Context::probe_native). mode 0, the fused-fma probe: out[i] = fma_rn(a, b, c) with NATIVE_FMA set,
// i.e. the device's own fma(), for triples where a fused and an unfused fma differ and edge
// cases (subnormal results, signed zeros, overflow, inf, NaN). The host compares each result
// with std::fma bit for bit and enables NATIVE_FMA only when all agree.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "shaders/common.glsl"
layout(local_size_x = 64) in;
layout(push_constant, std430) uniform Pc { uint64_t in_, out_; uint n, mode; } pc;
layout(buffer_reference, std430, buffer_reference_align = 8) buffer F64 { double v[]; };

// mode 1: the double -> float probe, out[i] = d2f(in[i]) with NATIVE_D2F set.
void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i >= pc.n) return;
    if (pc.mode == 1u) {
        F32(pc.out_).v[i] = d2f(F64(pc.in_).v[i]);
        return;
    }
    const float a = F32(pc.in_).v[3u * i], b = F32(pc.in_).v[3u * i + 1u], c = F32(pc.in_).v[3u * i + 2u];
    F32(pc.out_).v[i] = fma_rn(a, b, c);
}
