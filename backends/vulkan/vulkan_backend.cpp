// The Vulkan backend: buffers suballocated from device memory, weights copied once at load
// (Backend::wrap_host's default), and one command buffer per graph: a dispatch per op stage
// with a barrier only where a dispatch touches memory an earlier unfenced one wrote (or
// writes memory one read). Host-side work per graph: index and ring checks (before anything
// is recorded, so an error leaves every buffer untouched) and rope's cos/sin tables.
#include "backends/vulkan/vulkan_backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <map>
#include <stdexcept>
#include <tuple>

#include "backends/vulkan/vk_context.h"
#include "core/rules/attention_rule.h"
#include "core/quant/quant.h"
#include "core/rules/scan_runs.h"
#include "core/ref/ref_ops.h"
#include "shaders/push.h"

namespace ls {
namespace {
using namespace vk;

struct VkBuf final : Buffer {
    std::shared_ptr<Context> ctx;
    Chunk* chunk = nullptr;
    size_t off = 0;
    ~VkBuf() override { ctx->release(chunk, off, size); }
};

struct Range {
    uint64_t lo, hi;
};

bool overlaps(const std::vector<Range>& v, const Range& r) {
    for (const Range& x : v)
        if (x.lo < r.hi && r.lo < x.hi) return true;
    return false;
}

bool dequant_type(DType t) {
    switch (t) {
        case DType::F32: case DType::F16: case DType::BF16: case DType::Q4_0: case DType::Q4_1: case DType::Q5_0:
        case DType::Q5_1: case DType::Q8_0: case DType::Q2_K: case DType::Q3_K: case DType::Q4_K: case DType::Q5_K:
        case DType::Q6_K: case DType::Q8_K:
            return true;
        default:
            return false;
    }
}
bool weight_type(DType t) { return dequant_type(t) && t != DType::Q8_K; }
bool cache_type(DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::Q8_0 || t == DType::Q4_0;
}
// Tensors whose values the host needs (indices, positions): graph inputs or persistent.
bool host_readable(const Tensor* t) {
    return t && ((t->kind == TensorKind::Input && !t->view_src) || t->kind == TensorKind::Persistent) && t->is_contiguous();
}

class VulkanBackend final : public Backend {
public:
    explicit VulkanBackend(int device) : ctx_(std::make_shared<Context>(device)) {}
    ~VulkanBackend() override {
        aux_.reset();
        if (profile_) {
            std::fprintf(stderr, "vulkan backend: time per shader variant (LOCKSTEP_PROFILE)\n");
            std::vector<std::pair<double, std::string>> v;
            for (auto& [k, t] : prof_) v.push_back({t, k});
            std::sort(v.rbegin(), v.rend());
            for (auto& [t, k] : v) std::fprintf(stderr, "  %-22s %9.3f s\n", k.c_str(), t);
        }
    }

    std::string name() const override { return "vulkan"; }

    std::unique_ptr<Buffer> alloc(size_t bytes) override {
        auto b = std::make_unique<VkBuf>();
        b->ctx = ctx_;
        b->backend = this;
        b->size = bytes;
        b->chunk = ctx_->allocate(bytes, b->off);
        return b;
    }
    void upload(Buffer& dst, size_t off, const void* src, size_t n) override {
        VkBuf& b = own(dst);
        bounds(b, off, n);
        ctx_->write(b.chunk, b.off + off, src, n);
    }
    void download(const Buffer& src, size_t off, void* dst, size_t n) override {
        VkBuf& b = own(src);
        bounds(b, off, n);
        ctx_->read(b.chunk, b.off + off, dst, n);
    }
    void fill(Buffer& dst, size_t off, size_t n, uint8_t v) override {
        VkBuf& b = own(dst);
        bounds(b, off, n);
        ctx_->fill(b.chunk, b.off + off, n, v);
    }

    bool supports(const Tensor& n) const override {
        if (n.nelements() >= (int64_t(1) << 32)) return false;
        for (const Tensor* s : n.src)
            if (s && s->nelements() >= (int64_t(1) << 32)) return false;
        const Tensor* s0 = n.src[0];
        switch (n.op) {
            case OpId::GET_ROWS: return dequant_type(s0->type) && host_readable(n.src[1]);
            case OpId::SET_ROWS: return cache_type(n.src[2]->type) && host_readable(n.src[1]) && s0->nb[0] == 4;
            case OpId::MUL_MAT: return weight_type(s0->type) && n.src[1]->nb[0] == 4 && s0->ne[1] <= 65535 * 64;
            case OpId::ADD: case OpId::MUL: return s0->nb[0] == 4 && n.src[1]->nb[0] == 4;
            case OpId::SCALE: case OpId::GELU: case OpId::SILU: case OpId::SIGMOID: case OpId::SOFTPLUS: case OpId::SOFTCAP: case OpId::SOFTMAX:
                return s0->is_contiguous();
            case OpId::TOPK: return s0->type == DType::F32 && s0->nb[0] == 4 && n.is_contiguous();
            case OpId::MUL_MAT_ID:
                return weight_type(s0->type) && n.src[1]->nb[0] == 4 && n.src[2]->type == DType::I32 && n.src[2]->is_contiguous() &&
                       n.is_contiguous() && s0->ne[1] <= 65535 * 64 && s0->nb[2] <= 0xFFFFFFFFu && n.src[2]->nelements() <= 65535;
            case OpId::CONV1D_SCAN:  // x rows, w, state, runs, order: f32 / i32 with unit element stride
                return s0->type == DType::F32 && s0->nb[0] == 4 && n.src[1]->is_contiguous() && n.src[2]->type == DType::F32 &&
                       n.src[2]->nb[0] == 4 && host_readable(n.src[3]) && host_readable(n.src[4]) && n.nb[0] == 4 &&
                       n.get_params<Conv1dScanParams>().d_conv >= 1 && n.get_params<Conv1dScanParams>().d_conv <= 16;
            case OpId::DELTA_SCAN:
                return s0->type == DType::F32 && s0->nb[0] == 4 && n.src[1]->is_contiguous() && n.src[2]->is_contiguous() &&
                       n.src[3]->type == DType::F32 && n.src[3]->nb[0] == 4 && host_readable(n.src[4]) &&
                       host_readable(n.src[5]) && n.is_contiguous();
            case OpId::RMS_NORM: return s0->nb[0] == 4 && (!n.src[1] || n.src[1]->is_contiguous());
            case OpId::ROPE: return s0->nb[0] == 4 && host_readable(n.src[1]) && (!n.src[2] || host_readable(n.src[2]));
            case OpId::ATTENTION:
                return cache_type(n.src[1]->type) && cache_type(n.src[2]->type) && host_readable(n.src[3]) &&
                       host_readable(n.src[4]) && s0->nb[0] == 4 && n.src[2]->ne[1] == n.src[1]->ne[1];
            default: return false;
        }
    }

    void compute(const Graph& g) override;

private:
    VkBuf& own(const Buffer& b) const {
        if (b.backend != this) throw std::logic_error("vulkan: a tensor lives in another backend's buffer");
        return const_cast<VkBuf&>(static_cast<const VkBuf&>(b));
    }
    static void bounds(const VkBuf& b, size_t off, size_t n) {
        if (off + n > b.size) throw std::out_of_range("vulkan: copy outside the buffer");
    }
    uint64_t addr(const Tensor* t) const {
        if (!t->buffer) throw std::logic_error("vulkan: tensor '" + t->name + "' has no buffer");
        const VkBuf& b = own(*t->buffer);
        return b.chunk->addr + b.off + t->offset;
    }
    Range range(const Tensor* t) const { return {addr(t), addr(t) + std::max<size_t>(t->nbytes(), 1)}; }
    std::vector<uint8_t> host_bytes(const Graph& g, const Tensor* t) {
        for (size_t i = 0; i < g.inputs().size(); ++i)
            if (g.inputs()[i] == t) return g.input_data(i);
        std::vector<uint8_t> v(t->nbytes());
        download(*t->buffer, t->offset, v.data(), v.size());
        return v;
    }
    // One dispatch, with a barrier first when it depends on unfenced work.
    template <class P>
    void dispatch(const std::string& variant, const P& pc, uint32_t gx, uint32_t gy, std::initializer_list<Range> reads,
                  std::initializer_list<Range> writes) {
        static_assert(sizeof(P) <= 128);
        bool dep = false;
        for (const Range& r : reads) dep |= overlaps(pending_w_, r);
        for (const Range& w : writes) dep |= overlaps(pending_w_, w) || overlaps(pending_r_, w);
        if (dep) {
            VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
            mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT;
            mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
            ctx_->vkCmdPipelineBarrier(ctx_->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                                       &mb, 0, nullptr, 0, nullptr);
            pending_w_.clear();
            pending_r_.clear();
            ++barriers_;
        }
        pending_r_.insert(pending_r_.end(), reads.begin(), reads.end());
        pending_w_.insert(pending_w_.end(), writes.begin(), writes.end());
        ctx_->vkCmdBindPipeline(ctx_->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, ctx_->pipeline(variant));
        ctx_->vkCmdPushConstants(ctx_->cmd, ctx_->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(P), &pc);
        ctx_->vkCmdDispatch(ctx_->cmd, gx, gy, 1);
        if (profile_) {  // LOCKSTEP_PROFILE: each dispatch submitted and timed on its own
            if (ctx_->vkEndCommandBuffer(ctx_->cmd) != VK_SUCCESS) throw std::runtime_error("vulkan: vkEndCommandBuffer failed");
            const auto t0 = std::chrono::steady_clock::now();
            ctx_->submit_and_wait();
            prof_[variant] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
            bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
            if (ctx_->vkBeginCommandBuffer(ctx_->cmd, &bi) != VK_SUCCESS) throw std::runtime_error("vulkan: vkBeginCommandBuffer failed");
            pending_w_.clear();
            pending_r_.clear();
        }
    }
    // Groups for `total` invocations of 64 (shaders fold y into the linear index).
    static std::pair<uint32_t, uint32_t> groups(uint64_t total) {
        const uint64_t g = std::max<uint64_t>((total + 63) / 64, 1);
        const uint64_t gx = std::min<uint64_t>(g, 65535);
        return {uint32_t(gx), uint32_t((g + gx - 1) / gx)};
    }
    template <class P>
    void dispatch1d(const std::string& v, const P& pc, uint64_t total, std::initializer_list<Range> r, std::initializer_list<Range> w) {
        auto [gx, gy] = groups(total);
        dispatch(v, pc, gx, gy, r, w);
    }

    std::shared_ptr<Context> ctx_;
    std::unique_ptr<Buffer> aux_;  // activation rows, attention scores, rope tables
    std::vector<Range> pending_r_, pending_w_;
    size_t barriers_ = 0;
    bool profile_ = std::getenv("LOCKSTEP_PROFILE") != nullptr;
    std::map<std::string, double> prof_;
};

std::string lower_name(DType t) {
    std::string s = dtype_name(t);
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

void VulkanBackend::compute(const Graph& g) {
    // Pass 1 (host): checks that must fail before any write, and the aux buffer's layout.
    size_t act_bytes = 0, score_bytes = 0;
    std::vector<float> rope_tables;
    std::map<const Tensor*, size_t> rope_off;  // node -> float offset of its table
    std::map<std::tuple<const Tensor*, const Tensor*, int32_t, int32_t, float, float>, size_t> rope_dedup;
    std::map<const Tensor*, uint32_t> attn_keys;
    for (const Tensor* n : g.nodes()) {
        if (!supports(*n))
            throw std::runtime_error("vulkan backend does not support " + std::string(op_name(n->op)) + " on " + shape_str(*n));
        switch (n->op) {
            case OpId::GET_ROWS: case OpId::SET_ROWS: {
                std::vector<uint8_t> idx = host_bytes(g, n->src[1]);
                Buffer hb;
                hb.host = idx.data();
                Tensor tmp = *n->src[1];
                tmp.buffer = &hb;
                tmp.offset = 0;
                const bool set = n->op == OpId::SET_ROWS;
                ref::check_row_indices(tmp, set ? n->src[2]->ne[1] : n->src[0]->ne[1], set ? "set_rows" : "get_rows");
                break;
            }
            case OpId::MUL_MAT: case OpId::MUL_MAT_ID: {
                const Tensor* x = n->src[1];
                act_bytes = std::max(act_bytes, size_t(x->nrows()) * row_bytes(vec_dot_type(n->src[0]->type), x->ne[0]));
                break;
            }
            case OpId::ATTENTION: {
                const AttentionParams p = n->get_params<AttentionParams>();
                const std::vector<uint8_t> pb = host_bytes(g, n->src[3]), sb = host_bytes(g, n->src[4]);
                const auto* pos = reinterpret_cast<const int32_t*>(pb.data());
                const auto* seq = reinterpret_cast<const int32_t*>(sb.data());
                const int64_t T = n->src[0]->ne[2], H = n->src[0]->ne[1], n_seq = n->src[1]->ne[1] / p.ring_rows;
                int64_t keys = 1;
                for (int64_t t = 0; t < T; ++t) {
                    check_attention_query(seq[t], pos[t], p.window, p.ring_rows, n_seq);
                    keys = std::max(keys, pos[t] - attn_first_key(pos[t], p.window) + 1);
                }
                attn_keys[n] = uint32_t(keys);
                score_bytes = std::max(score_bytes, size_t(T * H * keys) * 4);
                break;
            }
            case OpId::ROPE: {
                const RopeParams p = n->get_params<RopeParams>();
                auto key = std::make_tuple(n->src[1], n->src[2], p.n_dims, p.mode, p.freq_base, p.freq_scale);
                if (auto it = rope_dedup.find(key); it != rope_dedup.end()) {
                    rope_off[n] = it->second;
                    break;
                }
                const std::vector<uint8_t> pb = host_bytes(g, n->src[1]);
                std::vector<uint8_t> fb;
                if (n->src[2]) fb = host_bytes(g, n->src[2]);
                const auto* pos = reinterpret_cast<const int32_t*>(pb.data());
                const auto* ff = n->src[2] ? reinterpret_cast<const float*>(fb.data()) : nullptr;
                const int64_t half = p.n_dims / 2, T = n->src[0]->ne[2];
                const size_t off = rope_tables.size();
                // The reference's angle, exactly (core/ref/rope.cpp).
                for (int64_t t = 0; t < T; ++t)
                    for (int64_t i = 0; i < half; ++i) {
                        double theta = double(pos[t]) * p.freq_scale * std::pow(double(p.freq_base), -2.0 * i / p.n_dims);
                        if (ff) theta /= ff[i];
                        rope_tables.push_back(float(std::cos(theta)));
                        rope_tables.push_back(float(std::sin(theta)));
                    }
                rope_dedup[key] = off;
                rope_off[n] = off;
                break;
            }
            case OpId::CONV1D_SCAN: case OpId::DELTA_SCAN: {
                // The run table, before any state is written (SEMANTICS.md section 2).
                const bool conv = n->op == OpId::CONV1D_SCAN;
                const Tensor* runs = n->src[conv ? 3 : 4];
                const Tensor* order = n->src[conv ? 4 : 5];
                const Tensor* state = n->src[conv ? 2 : 3];
                const std::vector<uint8_t> rb = host_bytes(g, runs), ob = host_bytes(g, order);
                read_scan_runs(reinterpret_cast<const int32_t*>(rb.data()), runs->ne[1], reinterpret_cast<const int32_t*>(ob.data()),
                               conv ? n->src[0]->ne[1] : n->src[0]->nrows(), state->ne[1], conv ? "conv1d_scan" : "delta_scan");
                break;
            }
            default: break;
        }
    }
    auto al = [](size_t n) { return (n + 255) / 256 * 256; };
    const size_t act_off = 0, score_off = al(act_bytes), rope_base = score_off + al(score_bytes);
    const size_t aux_need = rope_base + rope_tables.size() * 4 + 256;
    if (!aux_ || aux_->size < aux_need) {
        aux_.reset();
        aux_ = alloc(aux_need + aux_need / 4);
    }
    if (!rope_tables.empty()) upload(*aux_, rope_base, rope_tables.data(), rope_tables.size() * 4);
    const uint64_t aux = own(*aux_).chunk->addr + own(*aux_).off;
    const Range act_r{aux + act_off, aux + act_off + std::max<size_t>(act_bytes, 1)};
    const Range score_r{aux + score_off, aux + score_off + std::max<size_t>(score_bytes, 1)};

    // Pass 2: record one command buffer.
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    if (ctx_->vkBeginCommandBuffer(ctx_->cmd, &bi) != VK_SUCCESS) throw std::runtime_error("vulkan: vkBeginCommandBuffer failed");
    pending_r_.clear();
    pending_w_.clear();
    const Tensor* act_x = nullptr;  // the activation rows in `act` are this tensor, quantized to act_t
    DType act_t = DType::F32;
    try {
        for (const Tensor* n : g.nodes()) {
            const Tensor* a = n->src[0];
            const Tensor* b = n->src[1];
            switch (n->op) {
                case OpId::GET_ROWS: {
                    PcRows pc{addr(a), addr(b), addr(n), uint32_t(a->type), uint32_t(a->ne[0]), uint32_t(b->ne[0]),
                              uint32_t(b->type == DType::I64), uint32_t(a->nb[1]), uint32_t(n->nb[1])};
                    dispatch1d("get_rows", pc, uint64_t(a->ne[0]) * b->ne[0], {range(a), range(b)}, {range(n)});
                    break;
                }
                case OpId::SET_ROWS: {
                    const Tensor* d = n->src[2];
                    PcRows pc{addr(a), addr(b), addr(d), uint32_t(d->type), uint32_t(d->ne[0]), uint32_t(b->ne[0]),
                              uint32_t(b->type == DType::I64), uint32_t(a->nb[1]), uint32_t(d->nb[1])};
                    const uint64_t per_row = block_size(d->type) == 32 ? d->ne[0] / 32 : d->ne[0];
                    dispatch1d("set_rows", pc, per_row * b->ne[0], {range(a), range(b)}, {range(d)});
                    break;
                }
                case OpId::MUL_MAT: {
                    const DType at = vec_dot_type(a->type);
                    const uint32_t K = uint32_t(a->ne[0]), rows = uint32_t(b->nrows());
                    const uint32_t act_nb1 = uint32_t(row_bytes(at, K));
                    if (act_x != b || act_t != at) {
                        PcMulMatAct pa{addr(b), act_r.lo, K, rows, uint32_t(b->ne[1]), uint32_t(b->ne[2]), uint32_t(b->nb[1]),
                                       uint32_t(b->nb[2]), uint32_t(b->nb[3]), act_nb1};
                        dispatch1d("mul_mat_act_" + lower_name(at), pa, uint64_t(K / block_size(at)) * rows, {range(b)},
                                   {Range{act_r.lo, act_r.lo + uint64_t(act_nb1) * rows}});
                        act_x = b;
                        act_t = at;
                    }
                    const uint32_t N = uint32_t(a->ne[1]);
                    PcMulMat pm{addr(a), act_r.lo, addr(n), K, N, rows, uint32_t(a->nb[1]), act_nb1, 0};
                    // The shared-memory variant where a workgroup has a full tile of 8 activation
                    // rows to share (on lavapipe it pays off in prompt batches and loses at 1 row).
                    const bool sh = ctx_->use_shared && block_size(a->type) == 32 && rows >= 8;
                    // The subgroup variant for decode steps: one subgroup per weight row, R rows
                    // per workgroup as the shader computes it from the reported subgroup size.
                    const DType wt = a->type;
                    const bool sg = ctx_->use_subgroup_dot && rows <= 4 &&
                                    (wt == DType::Q4_0 || wt == DType::Q4_1 || wt == DType::Q5_0 || wt == DType::Q5_1 || wt == DType::Q8_0);
                    if (sg) {
                        const uint64_t R = std::max(1u, 64u / ctx_->subgroup_size), groups = (uint64_t(N) + R - 1) / R;
                        const uint32_t gx = uint32_t(std::min<uint64_t>(groups, 65535)), gy = uint32_t((groups + gx - 1) / gx);
                        dispatch("mul_mat_sg_" + lower_name(wt), pm, gx, gy,
                                 {range(a), Range{act_r.lo, act_r.lo + uint64_t(act_nb1) * rows}}, {range(n)});
                        break;
                    }
                    dispatch((sh ? "mul_mat_sh_" : "mul_mat_") + lower_name(a->type), pm, (N + 63) / 64, (rows + 7) / 8,
                             {range(a), Range{act_r.lo, act_r.lo + uint64_t(act_nb1) * rows}}, {range(n)});
                    break;
                }
                case OpId::ADD: case OpId::MUL: {
                    PcBinary pc{addr(a), addr(b), addr(n),
                                uint32_t(a->ne[0]), uint32_t(a->ne[1]), uint32_t(a->ne[2]), uint32_t(a->ne[3]),
                                uint32_t(b->ne[0]), uint32_t(b->ne[1]), uint32_t(b->ne[2]), uint32_t(b->ne[3]),
                                uint32_t(a->nb[1]), uint32_t(a->nb[2]), uint32_t(a->nb[3]),
                                uint32_t(b->nb[1]), uint32_t(b->nb[2]), uint32_t(b->nb[3])};
                    dispatch1d(n->op == OpId::ADD ? "add" : "mul", pc, uint64_t(n->nelements()), {range(a), range(b)}, {range(n)});
                    break;
                }
                case OpId::TOPK: {
                    PcTopk pc{addr(a), addr(n), uint32_t(a->nb[1]), uint32_t(a->ne[0]), uint32_t(a->ne[1]), 0,
                              n->get_params<TopkParams>(), 0};
                    dispatch1d("topk", pc, uint64_t(a->ne[1]), {range(a)}, {range(n)});
                    break;
                }
                case OpId::MUL_MAT_ID: {
                    // Stage 1 as mul_mat's (x [K, X, T]: X * T rows), then one pair per invocation row.
                    const Tensor* ids = n->src[2];
                    const DType at = vec_dot_type(a->type);
                    const uint32_t K = uint32_t(a->ne[0]), rows = uint32_t(b->nrows());
                    const uint32_t act_nb1 = uint32_t(row_bytes(at, K));
                    PcMulMatAct pa{addr(b), act_r.lo, K, rows, uint32_t(b->ne[1]), uint32_t(b->ne[2]), uint32_t(b->nb[1]),
                                   uint32_t(b->nb[2]), uint32_t(b->nb[3]), act_nb1};
                    dispatch1d("mul_mat_act_" + lower_name(at), pa, uint64_t(K / block_size(at)) * rows, {range(b)},
                               {Range{act_r.lo, act_r.lo + uint64_t(act_nb1) * rows}});
                    act_x = nullptr;  // the activation rows are this node's now
                    const uint32_t N = uint32_t(a->ne[1]), pairs = uint32_t(ids->nelements());
                    PcMulMatId pm{addr(a), act_r.lo, addr(n), K, N, pairs, uint32_t(a->nb[1]), act_nb1, 0, addr(ids),
                                  uint32_t(a->nb[2]), uint32_t(a->ne[2]), uint32_t(ids->ne[0]), uint32_t(b->ne[1])};
                    dispatch("mul_mat_id_" + lower_name(a->type), pm, (N + 63) / 64, std::max(pairs, 1u),
                             {range(a), range(ids), Range{act_r.lo, act_r.lo + uint64_t(act_nb1) * rows}}, {range(n)});
                    break;
                }
                case OpId::CONV1D_SCAN: {
                    const Tensor* st = n->src[2];
                    const Tensor* runs = n->src[3];
                    const Tensor* order = n->src[4];
                    PcConv1dScan pc{addr(a), addr(b), addr(st), addr(runs), addr(order), addr(n), uint32_t(a->nb[1]),
                                    uint32_t(st->nb[1]), uint32_t(n->nb[1]), uint32_t(a->ne[0]),
                                    uint32_t(n->get_params<Conv1dScanParams>().d_conv), uint32_t(runs->ne[1])};
                    dispatch1d("conv1d_scan", pc, uint64_t(runs->ne[1]) * uint64_t(a->ne[0]),
                               {range(a), range(b), range(st), range(runs), range(order)}, {range(n), range(st)});
                    break;
                }
                case OpId::DELTA_SCAN: {
                    const Tensor* beta = n->src[2];
                    const Tensor* st = n->src[3];
                    const Tensor* runs = n->src[4];
                    const Tensor* order = n->src[5];
                    const DeltaScanParams dp = n->get_params<DeltaScanParams>();
                    PcDeltaScan pc{addr(a), addr(b), addr(beta), addr(st), addr(runs), addr(order), addr(n),
                                   uint32_t(a->nb[1]), uint32_t(st->nb[1]), uint32_t(runs->ne[1]), 0, dp, 0};
                    // One workgroup per (run, value head).
                    const uint64_t groups = std::max<uint64_t>(uint64_t(runs->ne[1]) * uint64_t(dp.n_v_heads), 1);
                    const uint32_t gx = uint32_t(std::min<uint64_t>(groups, 65535)), gy = uint32_t((groups + gx - 1) / gx);
                    dispatch("delta_scan", pc, gx, gy, {range(a), range(b), range(beta), range(st), range(runs), range(order)},
                             {range(n), range(st)});
                    break;
                }
                case OpId::SCALE: case OpId::GELU: case OpId::SILU: case OpId::SIGMOID: case OpId::SOFTPLUS: case OpId::SOFTCAP: {
                    const float s = n->op == OpId::SCALE     ? n->get_params<ScaleParams>().s
                                    : n->op == OpId::SOFTCAP ? n->get_params<SoftcapParams>().cap
                                                             : 0.f;
                    PcUnary pc{addr(a), addr(n), uint32_t(n->nelements()), s};
                    dispatch1d(op_name(n->op), pc, uint64_t(n->nelements()), {range(a)}, {range(n)});
                    break;
                }
                case OpId::RMS_NORM: {
                    PcRmsNorm pc{addr(a), b ? addr(b) : 0, addr(n), uint32_t(a->ne[0]), uint32_t(a->nrows()), uint32_t(a->ne[1]),
                                 uint32_t(a->ne[2]), uint32_t(a->nb[1]), uint32_t(a->nb[2]), uint32_t(a->nb[3]), uint32_t(b != nullptr),
                                 n->get_params<RmsNormParams>(), 0};
                    // One workgroup per row.
                    const uint64_t rows = std::max<uint64_t>(uint64_t(a->nrows()), 1);
                    const uint32_t gx = uint32_t(std::min<uint64_t>(rows, 65535)), gy = uint32_t((rows + gx - 1) / gx);
                    if (b) dispatch("rms_norm", pc, gx, gy, {range(a), range(b)}, {range(n)});
                    else dispatch("rms_norm", pc, gx, gy, {range(a)}, {range(n)});
                    break;
                }
                case OpId::ROPE: {
                    const RopeParams p = n->get_params<RopeParams>();
                    const uint64_t cs = aux + rope_base + rope_off.at(n) * 4;
                    const uint32_t D = uint32_t(a->ne[0]), H = uint32_t(a->ne[1]), T = uint32_t(a->ne[2]);
                    PcRope pc{addr(a), cs, addr(n), D, H, T, uint32_t(a->nb[1]), uint32_t(a->nb[2]), 0, p};
                    const uint64_t per_head = uint64_t(p.n_dims / 2) + (D - uint32_t(p.n_dims));
                    dispatch1d("rope", pc, per_head * H * T, {range(a)}, {range(n)});
                    break;
                }
                case OpId::SOFTMAX: {
                    PcSoftmax pc{addr(a), addr(n), uint32_t(a->ne[0]), uint32_t(a->nrows()), n->get_params<SoftmaxParams>(), 0};
                    dispatch1d("softmax", pc, uint64_t(a->nrows()), {range(a)}, {range(n)});
                    break;
                }
                case OpId::ATTENTION: {
                    const Tensor *k = n->src[1], *v = n->src[2];
                    const uint32_t H = uint32_t(a->ne[1]), T = uint32_t(a->ne[2]);
                    PcAttention pc{addr(a), addr(k), addr(v), addr(n->src[3]), addr(n->src[4]), addr(n), score_r.lo,
                                   uint32_t(a->ne[0]), uint32_t(n->ne[0]), H, T, uint32_t(k->type), uint32_t(v->type),
                                   uint32_t(k->nb[1]), uint32_t(v->nb[1]), uint32_t(a->nb[1]), uint32_t(a->nb[2]), attn_keys.at(n),
                                   n->get_params<AttentionParams>()};
                    dispatch("attention", pc, H, T, {range(a), range(k), range(v), range(n->src[3]), range(n->src[4])},
                             {range(n), score_r});
                    break;
                }
                default: throw std::logic_error("vulkan: no kernel for op " + std::string(op_name(n->op)));
            }
        }
    } catch (...) {
        ctx_->vkEndCommandBuffer(ctx_->cmd);
        ctx_->vkResetCommandBuffer(ctx_->cmd, 0);
        throw;
    }
    if (ctx_->vkEndCommandBuffer(ctx_->cmd) != VK_SUCCESS) throw std::runtime_error("vulkan: vkEndCommandBuffer failed");
    ctx_->submit_and_wait();
}

}  // namespace

std::vector<VulkanDeviceDesc> vulkan_devices() noexcept {
    std::vector<VulkanDeviceDesc> out;
    try {
        Loader& L = loader();
        for (VkPhysicalDevice pd : L.usable) {
            VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
            VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
            props.pNext = &sub;
            L.vkGetPhysicalDeviceProperties2(pd, &props);
            VkPhysicalDeviceMemoryProperties mp;
            L.vkGetPhysicalDeviceMemoryProperties(pd, &mp);
            VulkanDeviceDesc d;
            d.name = props.properties.deviceName;
            for (uint32_t i = 0; i < mp.memoryHeapCount; ++i)
                if (mp.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) d.memory_total = std::max<size_t>(d.memory_total, mp.memoryHeaps[i].size);
            const uint32_t v = props.properties.apiVersion;
            d.features = "Vulkan " + std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) +
                         ", subgroup " + std::to_string(sub.subgroupSize) +
                         ((sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) && (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT)
                              ? " (arithmetic)" : (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) && (sub.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) ? " (basic)" : " (no ops)") +
                         ", int64 fp64 int8/16-bit storage, " +
                         std::to_string(props.properties.limits.maxComputeSharedMemorySize / 1024) + " KiB shared";
            out.push_back(d);
        }
    } catch (...) {
    }
    return out;
}

std::unique_ptr<Backend> make_vulkan_backend(int device) { return std::make_unique<VulkanBackend>(device); }

}  // namespace ls
