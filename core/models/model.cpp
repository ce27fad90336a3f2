#include "core/models/model.h"

#include <algorithm>
#include <fstream>

#include "core/ir/ops.h"

#include <stdexcept>

#include "core/quant/quant.h"

namespace ls {

namespace {
// MemAvailable from /proc/meminfo in bytes; 0 where unknown.
uint64_t mem_available() {
    std::ifstream f("/proc/meminfo");
    std::string key;
    uint64_t kb = 0;
    std::string unit;
    while (f >> key >> kb >> unit)
        if (key == "MemAvailable:") return kb * 1024;
    return 0;
}
}  // namespace

void Model::attach(std::unique_ptr<GgufFile> file, Backend& be, WeightMemory mem) {
    file_ = std::move(file);
    be_ = &be;
    // One buffer over the whole file: mapped in place, or copied (see WeightMemory).
    const size_t size = file_->size();
    if (mem == WeightMemory::Auto) mem = size <= mem_available() / 2 ? WeightMemory::Copy : WeightMemory::Map;
    if (mem == WeightMemory::Map) {
        weights_buffer_ = be.wrap_host(file_->base(), size);
    } else {
        // In slices, each released from the mapping once copied: the mapping and the copy
        // are never both resident, so the process peaks near one copy of the weights, not two.
        constexpr size_t kSlice = size_t(16) << 20;
        weights_buffer_ = be.alloc(size);
        for (size_t at = 0; at < size; at += kSlice) {
            const size_t n = std::min(kSlice, size - at);
            be.upload(*weights_buffer_, at, file_->base() + at, n);
            file_->release(at, n);
        }
    }
    load_arch();
}

std::vector<KvLayerSpec> Model::kv_layout() const {
    std::vector<KvLayerSpec> v;
    for (const LayerParams& L : hp_.layers)
        if (L.recurrent || L.kv_source >= 0) v.push_back({0, 0, 0});  // no KV rows (KvCache skips the layer)
        else v.push_back({int64_t(L.n_head_kv) * L.head_dim_k, int64_t(L.n_head_kv) * L.head_dim_v, L.window});
    return v;
}

Tensor* Model::weight(const std::string& name, std::initializer_list<int64_t> ne, bool required) {
    const GgufTensorInfo* info = file_->find_tensor(name);
    if (!info) {
        if (!required) return nullptr;
        throw std::runtime_error("model is missing tensor '" + name + "'");
    }
    Tensor& t = weights_.emplace_back();
    t.type = info->type;
    for (int i = 0; i < kMaxDims; ++i) t.ne[i] = info->ne[i];
    int i = 0;
    bool ok = true;
    for (int64_t n : ne) ok = ok && t.ne[i++] == n;
    for (; i < kMaxDims; ++i) ok = ok && t.ne[i] == 1;
    if (!ok) {
        std::string want = "[";
        for (int64_t n : ne) want += std::to_string(n) + " ";
        want.back() = ']';
        throw std::runtime_error("tensor '" + name + "' has shape " + shape_str(t) + ", " + hp_.arch + " expects " + want);
    }
    set_contiguous_strides(t);
    t.kind = TensorKind::Persistent;
    t.buffer = weights_buffer_.get();
    t.offset = static_cast<size_t>(info->data - file_->base());
    t.name = name;
    return &t;
}

Tensor* Model::norm_weight(const std::string& name, int64_t n) {
    Tensor* t = weight(name, {n});
    if (t->type != DType::F32)
        throw std::runtime_error("tensor '" + name + "' has type " + dtype_name(t->type) + "; norm weights must be f32");
    return t;
}

namespace {
// Weight types the matmul ops take, with whole blocks per row.
void check_matmul_type(const Tensor* t, const std::string& name, int64_t k) {
    if (!is_weight_type(t->type))
        throw std::runtime_error("tensor '" + name + "' has type " + dtype_name(t->type) + ", which lockstep cannot multiply with");
    if (k % block_size(t->type) != 0)
        throw std::runtime_error("tensor '" + name + "': row length " + std::to_string(k) + " is not a multiple of the " +
                                 dtype_name(t->type) + " block");
}
}  // namespace

Tensor* Model::matmul_weight(const std::string& name, int64_t k, int64_t n) {
    Tensor* t = weight(name, {k, n});
    check_matmul_type(t, name, k);
    return t;
}

Tensor* Model::expert_weight(const std::string& name, int64_t k, int64_t n, int64_t n_expert) {
    Tensor* t = weight(name, {k, n, n_expert});
    check_matmul_type(t, name, k);
    return t;
}

Tensor* CacheRows::operator()(int64_t R) {
    for (auto& [r, t] : by_ring_)
        if (r == R) return t;
    const size_t n = ub_.tokens.size();
    std::vector<int64_t> rows(n);
    for (size_t i = 0; i < n; ++i) rows[i] = int64_t(ub_.seq[i]) * R + ub_.pos[i] % R;
    Tensor* t = g_.input(DType::I64, {int64_t(n)}, rows.data(), "cache_rows");
    by_ring_.emplace_back(R, t);
    return t;
}

AttnWeights Model::attn_weights(const std::string& p, const LayerParams& L, Biases biases) {
    const int64_t E = hp_.n_embd, q = int64_t(L.n_head) * L.head_dim_k, k = int64_t(L.n_head_kv) * L.head_dim_k,
                  v = int64_t(L.n_head_kv) * L.head_dim_v, o = int64_t(L.n_head) * L.head_dim_v;
    AttnWeights a{matmul_weight(p + "attn_q.weight", E, q), matmul_weight(p + "attn_k.weight", E, k),
                  matmul_weight(p + "attn_v.weight", E, v), matmul_weight(p + "attn_output.weight", o, E)};
    auto bias = [&](const std::string& name, int64_t n) {
        return biases == Biases::Required || (biases == Biases::Optional && file_->find_tensor(p + name)) ? norm_weight(p + name, n)
                                                                                                             : nullptr;
    };
    a.bq = bias("attn_q.bias", q);
    a.bk = bias("attn_k.bias", k);
    a.bv = bias("attn_v.bias", v);
    a.bo = bias("attn_output.bias", E);
    return a;
}

void Model::bind_embeddings() {
    const GgufTensorInfo* te = file_->find_tensor("token_embd.weight");
    if (!te) throw std::runtime_error("model is missing tensor 'token_embd.weight'");
    hp_.n_vocab = te->ne[1];
    tok_embd_ = matmul_weight("token_embd.weight", hp_.n_embd, hp_.n_vocab);
    output_norm_ = norm_weight("output_norm.weight", hp_.n_embd);
    output_ = file_->find_tensor("output.weight") ? matmul_weight("output.weight", hp_.n_embd, hp_.n_vocab) : tok_embd_;
}

Tensor* Model::output_head(Graph& g, const Ubatch& ub, Tensor* x, float softcap, bool all_rows) const {
    const int64_t T = int64_t(ub.tokens.size()), n_out = int64_t(ub.out_idx.size());
    if (n_out == 0) return nullptr;
    if (n_out < T && !all_rows) x = ops::get_rows(g, x, g.input(DType::I32, {n_out}, ub.out_idx.data(), "out_idx"));
    x = ops::rms_norm(g, x, output_norm_, hp_.rms_eps);
    Tensor* logits = ops::mul_mat(g, output_, x);  // (n_vocab, n_out)
    if (softcap > 0) logits = ops::softcap(g, logits, softcap);
    g.mark_output(logits);
    return logits;
}

}  // namespace ls
