// Mamba-2's mixer, the recurrent layer of nemotron_h and granitehybrid, written once: ssm_in
// gives z (d_inner), xBC (d_inner + 2 G N) and dt (H) per token; xBC goes through the causal
// depthwise convolution (conv1d_scan, its bias, SiLU), then the selective scan (ssm_scan: x
// in H heads of d_inner / H channels, B and C in G groups of N) with dt = softplus(dt +
// dt_bias) and A = ssm_a; D x is added, the result gated by silu(z), RMS-normed per group of
// d_inner / G channels (ssm_norm) and projected by ssm_out. Both states (the convolution's
// last K - 1 inputs, the scan's H P N floats) are per sequence slot in RecurrentMemory.
#pragma once
#include <string>

#include "core/ir/graph.h"
#include "core/memory/recurrent_memory.h"
#include "core/models/arch_keys.h"

namespace ls {

struct Mamba2Sizes {
    int64_t d_conv = 0, d_inner = 0, d_state = 0, n_group = 0, n_head = 0;
    int64_t channels() const { return d_inner + 2 * n_group * d_state; }  // the convolution's: x, B, C
    // Per slot: the convolution's and the scan's state.
    RecurrentLayerSpec state() const { return {(d_conv - 1) * channels(), d_inner * d_state}; }
};
// ssm.conv_kernel, inner_size, state_size, time_step_rank (the head count), group_count,
// checked for consistency; what is broken throws naming the architecture.
Mamba2Sizes read_mamba2_sizes(const ArchKeys& keys);

struct Mamba2Weights {
    Tensor* ssm_in;    // (n_embd, 2 d_inner + 2 G N + H)
    Tensor* conv;      // (K, channels), any type conv_kernel_f32 takes
    Tensor* conv_b;    // (channels), or null
    Tensor *dt_b, *A, *D;  // (H), (1, H), (1, H), F32
    Tensor* norm;      // (d_inner / G, G), F32
    Tensor* out;       // (d_inner, n_embd)
};

// Layer il's mixer on h F32 [n_embd, T] -> [n_embd, T]. runs / order: scan_inputs;
// conv_rows: conv_kernel_f32's row input, kept between layers.
Tensor* mamba2_mixer(Graph& g, const Mamba2Weights& w, const Mamba2Sizes& s, Tensor* h, RecurrentMemory& rs, int il, Tensor* runs,
                     Tensor* order, Tensor*& conv_rows, float eps);

}  // namespace ls
