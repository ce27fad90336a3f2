#include "core/models/mamba2_block.h"

#include <stdexcept>

#include "core/ir/ops.h"
#include "core/models/scan_inputs.h"

namespace ls {

Mamba2Sizes read_mamba2_sizes(const ArchKeys& keys) {
    Mamba2Sizes s;
    s.d_conv = keys.get_int(ArchKey::SsmConvKernel);
    s.d_inner = keys.get_int(ArchKey::SsmInnerSize);
    s.d_state = keys.get_int(ArchKey::SsmStateSize);
    s.n_head = keys.get_int(ArchKey::SsmTimeStepRank);
    s.n_group = keys.get_int(ArchKey::SsmGroupCount, 1);
    constexpr int64_t kMax = int64_t(1) << 24;
    for (int64_t v : {s.d_conv, s.d_inner, s.d_state, s.n_head, s.n_group})
        if (v <= 0 || v > kMax) throw std::runtime_error(keys.arch() + ": an ssm.* size of " + std::to_string(v) + " is out of range (broken metadata)");
    if (s.d_conv < 2 || s.d_conv > 16 || s.d_inner % s.n_head || s.n_head % s.n_group || s.d_inner % s.n_group)
        throw std::runtime_error(keys.arch() + ": inconsistent ssm.inner_size / time_step_rank / group_count / conv_kernel in the GGUF metadata");
    return s;
}

Tensor* mamba2_mixer(Graph& g, const Mamba2Weights& w, const Mamba2Sizes& s, Tensor* h, RecurrentMemory& rs, int il, Tensor* runs,
                     Tensor* order, Tensor*& conv_rows, float eps) {
    using namespace ops;
    const int64_t T = h->ne[1], Di = s.d_inner, C = s.channels(), H = s.n_head, P = Di / H, G = s.n_group;
    Tensor* zxd = mul_mat(g, w.ssm_in, h);  // (Di + C + H, T): z, xBC, dt per token
    const size_t rb = size_t(Di + C + H) * 4;
    Tensor* z = cont(g, view_2d(g, zxd, Di, T, rb, 0));
    Tensor* xbc = cont(g, view_2d(g, zxd, C, T, rb, size_t(Di) * 4));
    Tensor* dt = softplus(g, add(g, view_2d(g, zxd, H, T, rb, size_t(Di + C) * 4), w.dt_b));  // (H, T)
    Tensor* conv = conv1d_scan(g, xbc, conv_kernel_f32(g, w.conv, conv_rows), rs.conv(il), runs, order);
    if (w.conv_b) conv = add(g, conv, w.conv_b);
    conv = silu(g, conv);  // (C, T): x, B, C
    const SsmScanParams sp{int32_t(H), int32_t(P), int32_t(s.d_state), int32_t(G)};
    Tensor* y = ssm_scan(g, conv, dt, w.A, rs.state(il), runs, order, sp);  // (P, H, T)
    Tensor* xs = reshape(g, cont(g, view_2d(g, conv, Di, T, size_t(C) * 4, 0)), {P, H, T});
    y = add(g, y, mul(g, xs, reshape(g, w.D, {1, H, 1})));  // + D x
    y = mul(g, reshape(g, y, {Di, T}), silu(g, z));          // gated by silu(z)
    y = mul(g, rms_norm(g, reshape(g, y, {Di / G, G, T}), nullptr, eps), reshape(g, w.norm, {Di / G, G, 1}));
    return mul_mat(g, w.out, reshape(g, y, {Di, T}));
}

}  // namespace ls
