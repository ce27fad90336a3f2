#include "core/models/model.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "core/models/arch_keys.h"
#include "core/ir/ops.h"

#include <stdexcept>

#include "core/quant/quant.h"
#include "core/rules/attention_rule.h"
#include "core/rules/canon.h"

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

ModelDevice single_device(Backend& be) {
    ModelDevice d;
    d.backend = &be;
    d.desc.name = be.name();
    d.desc.host = be.name() == "cpu" || be.name() == "reference";
    d.maps_file = d.desc.host;
    return d;
}

void Model::attach(std::unique_ptr<GgufFile> file, Backend& be, WeightMemory mem) {
    LoadOptions o;
    o.mem = mem;
    attach(std::move(file), {single_device(be)}, o);
}

void Model::attach(std::unique_ptr<GgufFile> file, const std::vector<ModelDevice>& devices, const LoadOptions& o) {
    if (devices.empty()) throw std::invalid_argument("model: no device to load onto");
    for (const ModelDevice& d : devices)
        if (!d.backend) throw std::invalid_argument("model: device '" + d.desc.name + "' has no backend");
    file_ = std::move(file);
    devices_ = devices;
    // 1. Bind every weight (shapes and types checked; no bytes read yet: weight() records
    //    the file offset and leaves the buffer empty).
    load_arch();
    load_rank_head();

    // 2. The plan: each tensor's device, refused here if it does not fit.
    PlacementInput in;
    for (const Tensor& t : weights_) in.tensors.emplace_back(t.name, t.nbytes());
    in.n_layer = hp_.n_layer;
    in.matrix_rows = matrix_rows_;
    if (o.state.n_ctx > 0) {
        KvCacheConfig kc = o.state;
        if (hp_.n_ctx_train > 0) kc.n_ctx = std::min(kc.n_ctx, hp_.n_ctx_train);  // as Session clamps it
        kc.n_ubatch = std::min(std::max<int64_t>(kc.n_ubatch, 1), kc.n_ctx);
        const auto kv = kv_layout();
        const auto rl = recurrent_layout();
        in.layer_state_bytes.assign(size_t(hp_.n_layer), 0);
        for (size_t il = 0; il < kv.size() && il < in.layer_state_bytes.size(); ++il) in.layer_state_bytes[il] += kv_layer_bytes(kv[il], kc);
        for (size_t il = 0; il < rl.size() && il < in.layer_state_bytes.size(); ++il)
            in.layer_state_bytes[il] += RecurrentMemory::layer_bytes(rl[il], kc.n_seq);
        // A compute buffer: a ubatch's widest activations, a few times over; and on the output
        // head's device the logits of every row of a ubatch (perplexity asks for all of them).
        in.compute_bytes = size_t(kc.n_ubatch) * 4 * size_t(8 * std::max(hp_.n_embd, hp_.n_ff)) + (size_t(32) << 20);
        in.logits_bytes = size_t(kc.n_ubatch) * size_t(hp_.n_vocab) * 4;
    }
    std::vector<PlacementDevice> descs;
    for (const ModelDevice& d : devices) descs.push_back(d.desc);
    plan_ = plan_placement(descs, o.placement, in);

    // Tied embeddings on two devices: the output head gets its own copy of token_embd.
    std::vector<int> dev;  // per entry of weights_; -1: split by rows, placed as its slices
    for (const Tensor& t : weights_) dev.push_back(plan_.row_slices.count(t.name) ? -1 : plan_.device_of(t.name));
    // --split-mode row: a tensor per slice (its rows are contiguous in the file), on its device.
    for (size_t i = 0, n = weights_.size(); i < n; ++i) {
        if (dev[i] >= 0) continue;
        RowSplit rs{&weights_[i], {}};
        for (const auto& [d, sl] : plan_.row_slices.at(weights_[i].name)) {
            Tensor part = weights_[i];
            part.ne[1] = sl.size();
            set_contiguous_strides(part);
            part.offset += size_t(sl.begin) * weights_[i].nb[1];
            part.name += "[rows " + std::to_string(sl.begin) + ".." + std::to_string(sl.end) + "]";
            rs.parts.emplace_back(&weights_.emplace_back(std::move(part)), sl);
            dev.push_back(d);
        }
        row_splits_.push_back(std::move(rs));
    }
    if (output_ && output_ == tok_embd_ && plan_.device_of(tok_embd_->name) != plan_.output_device) {
        output_ = &weights_.emplace_back(*tok_embd_);
        dev.push_back(plan_.output_device);
    }

    // 3. Each device's tensors into its memory. The host maps the file in place or copies
    //    (Auto copies when its share takes at most half of the memory available); a copied
    //    tensor's pages of the mapping are released once every device has it, so the process
    //    never holds the mapping and the copies of much at once.
    WeightMemory mem = o.mem;
    std::vector<int> used = plan_.used_devices();
    size_t host_bytes = 0;
    for (int d : used)
        if (devices[size_t(d)].maps_file) host_bytes += plan_.weight_bytes[size_t(d)];
    if (mem == WeightMemory::Auto) mem = host_bytes <= mem_available() / 2 ? WeightMemory::Copy : WeightMemory::Map;
    std::vector<Buffer*> buffer_of(devices.size(), nullptr);
    std::vector<bool> mapped(devices.size(), false);
    // One copy per (tensor, device), however often the architecture bound it.
    std::map<std::pair<std::string, int>, size_t> first;  // -> index in weights_ of its first binding
    std::vector<size_t> at(weights_.size(), 0);
    for (int d : used) {
        Backend& be = *devices[size_t(d)].backend;
        if (devices[size_t(d)].maps_file && mem == WeightMemory::Map) {
            weight_buffers_.push_back(be.wrap_host(file_->base(), file_->size()));
            mapped[size_t(d)] = true;
        } else {
            size_t total = 0;
            for (size_t i = 0; i < weights_.size(); ++i)
                if (dev[i] == d && first.emplace(std::pair{weights_[i].name, d}, i).second)
                    at[i] = total, total += (weights_[i].nbytes() + 255) / 256 * 256;
            weight_buffers_.push_back(be.alloc(std::max<size_t>(total, 256)));
        }
        buffer_of[size_t(d)] = weight_buffers_.back().get();
    }
    std::map<std::string, size_t> last;  // name -> last entry, after which its pages may go
    std::set<std::string> in_place;      // names a mapped device reads from the mapping
    for (size_t i = 0; i < weights_.size(); ++i) {
        if (dev[i] < 0) continue;
        last[weights_[i].name] = i;
        if (mapped[size_t(dev[i])]) in_place.insert(weights_[i].name);
    }
    for (size_t i = 0; i < weights_.size(); ++i) {
        Tensor& t = weights_[i];
        const size_t file_off = t.offset, n = t.nbytes();
        const int d = dev[i];
        if (d < 0) continue;  // split by rows: its slices hold it (and release its pages)
        t.buffer = buffer_of[size_t(d)];
        if (!mapped[size_t(d)]) {
            const size_t f = first.at({t.name, d});
            if (f == i) devices[size_t(d)].backend->upload(*t.buffer, at[i], file_->base() + file_off, n);
            t.offset = at[f];
        }
        if (last[t.name] == i && !in_place.count(t.name)) file_->release(file_off, n);
    }
    // The pages that straddle two tensors, and the header's: nothing reads them in place now.
    if (in_place.empty()) file_->release(0, file_->size());
    for (int d : used) backends_.push_back(devices[size_t(d)].backend);
    // The scheduler's first backend runs nodes that read only graph inputs: the input's.
    if (auto it = std::find(backends_.begin(), backends_.end(), devices[size_t(plan_.input_device)].backend); it != backends_.end())
        std::rotate(backends_.begin(), it, it + 1);
}

std::vector<std::pair<const Tensor*, const void*>> Model::shared_weights() const {
    std::vector<std::pair<const Tensor*, const void*>> v;
    if (backends_.size() < 2) return v;
    for (const Tensor& t : weights_)
        if (t.name.rfind("blk.", 0) != 0 && &t != tok_embd_ && &t != output_ && &t != output_norm_ && t.nbytes() <= (size_t(1) << 20))
            v.emplace_back(&t, file_->find_tensor(t.name)->data);
    return v;
}

std::vector<Backend*> Model::layer_backends() const {
    std::vector<Backend*> v;
    for (int d : plan_.layer_device) v.push_back(devices_[size_t(d)].backend);
    return v;
}

std::vector<KvLayerSpec> Model::kv_layout() const {
    std::vector<KvLayerSpec> v;
    for (const LayerParams& L : hp_.layers)
        if (L.recurrent || L.kv_source >= 0) v.push_back({0, 0, 0});  // no KV rows (KvCache skips the layer)
        else v.push_back({int64_t(L.n_head_kv) * L.head_dim_k, int64_t(L.n_head_kv) * L.head_dim_v, L.window, L.v_in_k});
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
    t.buffer = nullptr;  // bound by attach() once the placement is planned
    t.offset = static_cast<size_t>(info->data - file_->base());
    t.name = name;
    return &t;
}

std::vector<float> Model::host_f32(const std::string& name, int64_t n) const {
    const GgufTensorInfo* info = file_->find_tensor(name);
    if (!info) throw std::runtime_error("model is missing tensor '" + name + "'");
    bool ok = info->type == DType::F32 && info->ne[0] == n;
    for (int i = 1; i < kMaxDims; ++i) ok = ok && info->ne[i] == 1;
    if (!ok) throw std::runtime_error("tensor '" + name + "' must be f32 [" + std::to_string(n) + "]");
    std::vector<float> v(static_cast<size_t>(n));
    std::memcpy(v.data(), info->data, v.size() * sizeof(float));
    return v;
}

HostLinear Model::host_linear(const std::string& name, int64_t n_in, int64_t n_out) const {
    const GgufTensorInfo* info = file_->find_tensor(name);
    if (!info) throw std::runtime_error("model is missing tensor '" + name + "'");
    bool ok = info->ne[0] == n_in && info->ne[1] == n_out;
    for (int i = 2; i < kMaxDims; ++i) ok = ok && info->ne[i] == 1;
    if (!ok) {
        std::string has = "[";
        for (int i = 0; i < std::max(info->n_dims, 1); ++i) has += std::to_string(info->ne[i]) + " ";
        has.back() = ']';
        throw std::runtime_error("tensor '" + name + "' has shape " + has + ", " + hp_.arch + " expects [" + std::to_string(n_in) + " " +
                                 std::to_string(n_out) + "]");
    }
    if (!can_dequantize(info->type))
        throw std::runtime_error("tensor '" + name + "' has type " + dtype_name(info->type) + ", which lockstep cannot read");
    if (n_in % block_size(info->type) != 0)
        throw std::runtime_error("tensor '" + name + "': row length " + std::to_string(n_in) + " is not a multiple of the " +
                                 dtype_name(info->type) + " block");
    HostLinear l;
    l.name = name;
    l.n_in = n_in;
    l.n_out = n_out;
    l.w.resize(size_t(n_in) * size_t(n_out));
    const size_t rb = row_bytes(info->type, n_in);  // the reader checked n_out rows of it against the file
    for (int64_t o = 0; o < n_out; ++o) dequantize_row(info->type, info->data + size_t(o) * rb, l.w.data() + size_t(o) * size_t(n_in), n_in);
    return l;
}

std::vector<float> HostLinear::apply(const std::vector<float>& x) const {
    if (int64_t(x.size()) != n_in)
        throw std::logic_error(name + ": a vector of " + std::to_string(x.size()) + " values, not " + std::to_string(n_in));
    std::vector<float> y(static_cast<size_t>(n_out));
    for (int64_t o = 0; o < n_out; ++o) {
        y[size_t(o)] = canon_dot(w.data() + size_t(o) * size_t(n_in), x.data(), n_in);
        if (!b.empty()) y[size_t(o)] = y[size_t(o)] + b[size_t(o)];
    }
    return y;
}

std::vector<float> RankHead::apply(const std::vector<float>& pooled) const {
    std::vector<float> x = pooled;
    for (const HostLinear& l : cls) {
        x = l.apply(x);
        for (float& v : x) v = det_tanh(v);
    }
    x = out.apply(x);
    if (softmax) {
        float m = x[0];
        for (float v : x) m = std::fmax(m, v);
        float sum = 0.f;
        for (float& v : x) sum = sum + (v = det_exp(v - m));  // in order
        for (float& v : x) v = canon_div(v, sum);
    }
    return x;
}

// llama.cpp's reading (llama-model.cpp, the bert / qwen3 loaders; llama-graph.cpp's
// build_pooling for LLAMA_POOLING_TYPE_RANK): cls and cls.output both optional there; a head
// with neither would pool a state as the score, which no converter writes: refused here.
void Model::load_rank_head() {
    const std::string a = hp_.arch + ".";
    const ArchKeys keys(*file_, hp_.arch);
    if (keys.get_int(ArchKey::PoolingType, 0) != 4) return;
    const int64_t E = hp_.n_embd;
    RankHead h;
    if (file_->find_tensor("cls.weight")) {
        h.cls.push_back(host_linear("cls.weight", E, E));  // (n_embd, n_embd)
        if (file_->find_tensor("cls.bias")) h.cls[0].b = host_f32("cls.bias", E);
    }
    if (file_->find_tensor("cls.norm.weight"))
        throw std::runtime_error(hp_.arch + ": the reranker head has cls.norm (ModernBERT's), which lockstep does not apply");
    const GgufTensorInfo* o = file_->find_tensor("cls.output.weight");
    if (!o) throw std::runtime_error(hp_.arch + ": pooling_type is rank (a reranker) but the file has no cls.output.weight (its scores)");
    const int64_t n_out = o->ne[1];
    if (n_out < 1 || n_out > 65536) throw std::runtime_error("tensor 'cls.output.weight' has " + std::to_string(n_out) + " rows, not 1..65536");
    h.out = host_linear("cls.output.weight", E, n_out);  // (n_embd, n_cls_out)
    if (file_->find_tensor("cls.output.bias")) h.out.b = host_f32("cls.output.bias", n_out);
    // Qwen3's rerankers score the last token's state, as a softmax over its "yes" and "no" logits.
    h.last_token = h.softmax = hp_.arch == "qwen3" || hp_.arch == "qwen3vl";
    rank_ = std::move(h);
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
    if (name.rfind("blk.", 0) == 0) matrix_rows_[name] = n;
    return t;
}

Tensor* Model::expert_weight(const std::string& name, int64_t k, int64_t n, int64_t n_expert) {
    Tensor* t = weight(name, {k, n, n_expert});
    check_matmul_type(t, name, k);
    return t;
}

Tensor* attn_positions(Graph& g, const Ubatch& ub, bool causal) {
    const int64_t T = int64_t(ub.tokens.size());
    if (causal) return g.input(DType::I32, {T}, ub.pos.data(), "pos");
    std::vector<int32_t> last(static_cast<size_t>(T));
    attn_last_keys(ub.pos.data(), ub.seq.data(), T, false, last.data());
    return g.input(DType::I32, {T}, last.data(), "attn_last_key");  // (copied now)
}

AttnKeys::Keys AttnKeys::operator()(int32_t window) {
    if (ub_.last_key.empty()) return {pos_, window};
    for (auto& [w, t] : given_)
        if (w == window) return {t, kAttnFirstGiven};
    const size_t T = ub_.tokens.size();
    std::vector<int32_t> keys(2 * T);
    for (size_t t = 0; t < T; ++t) {
        const int32_t p = ub_.pos[t];
        keys[t] = std::max(p, ub_.last_key[t]);
        keys[T + t] = int32_t(attn_first_key(p, window));
    }
    Tensor* in = g_.input(DType::I32, {int64_t(T), 2}, keys.data(), "attn_block_keys");  // (copied now)
    given_.emplace_back(window, in);
    return {in, kAttnFirstGiven};
}

Tensor* with_given_rows(Graph& g, const Ubatch& ub, Tensor* x, int64_t width) {
    if (ub.embd_at.empty()) return x;
    const int64_t E = x->ne[0], n = int64_t(ub.embd_at.size()), W = width > 0 ? width : E;
    if (ub.embd.size() != size_t(W * n) || W < E)
        throw std::invalid_argument("ubatch: " + std::to_string(n) + " embedding rows need " + std::to_string(W * n) + " values, got " +
                                    std::to_string(ub.embd.size()));
    std::vector<float> first;  // (each row's first E, when the rows are wider)
    if (W != E)
        for (int64_t i = 0; i < n; ++i) first.insert(first.end(), ub.embd.begin() + i * W, ub.embd.begin() + i * W + E);
    Tensor* rows = g.input(DType::F32, {E, n}, W != E ? first.data() : ub.embd.data(), "given_rows");
    Tensor* at = g.input(DType::I32, {n}, ub.embd_at.data(), "given_rows_at");
    return ops::set_rows(g, x, rows, at);
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

Tensor* RopeTables::operator()(const RopeParams& p, const std::vector<float>* ff) {
    for (const Made& m : made_)
        if (m.ff == ff && std::memcmp(&m.p, &p, sizeof p) == 0) return m.t;
    Tensor* t = ops::rope_table(g_, pos_->data(), int64_t(pos_->size()), p, ff ? ff->data() : nullptr);
    made_.push_back({p, ff, t});
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

Mamba2Weights Model::mamba2_weights(const std::string& p, const Mamba2Sizes& s) {
    const int64_t E = hp_.n_embd, C = s.channels(), H = s.n_head;
    Mamba2Weights w{};
    w.ssm_in = matmul_weight(p + "ssm_in.weight", E, s.d_inner + C + H);
    w.conv = weight(p + "ssm_conv1d.weight", {s.d_conv, C});
    w.conv_b = weight(p + "ssm_conv1d.bias", {C}, false);
    w.dt_b = weight(p + "ssm_dt.bias", {H});
    w.A = weight(p + "ssm_a", {1, H});
    w.D = weight(p + "ssm_d", {1, H});
    w.norm = weight(p + "ssm_norm.weight", {s.d_inner / s.n_group, s.n_group});
    w.out = matmul_weight(p + "ssm_out.weight", s.d_inner, E);
    for (const char* name : {"ssm_conv1d.bias", "ssm_dt.bias", "ssm_a", "ssm_d", "ssm_norm.weight"}) {
        const GgufTensorInfo* t = file_->find_tensor(p + name);
        if (t && t->type != DType::F32) throw std::runtime_error(hp_.arch + ": tensor '" + p + name + "' must be F32");
    }
    return w;
}

std::vector<RecurrentLayerSpec> RecurrentModel::same_state_on_recurrent_layers(const RecurrentLayerSpec& s) const {
    std::vector<RecurrentLayerSpec> v;
    for (const LayerParams& L : hp_.layers) v.push_back(L.recurrent ? s : RecurrentLayerSpec{});
    return v;
}

Tensor* RecurrentModel::build_graph(Graph&, const Ubatch&, KvCache&) const {
    throw std::logic_error(hp_.arch + " has recurrent layers: build its graph with recurrent memory (Session does)");
}

void Model::read_decoder_sizes(const ArchKeys& keys, double rms_eps_default) {
    hp_.n_embd = keys.get_int(ArchKey::EmbeddingLength);
    hp_.n_layer = keys.get_int(ArchKey::BlockCount);
    hp_.n_ctx_train = keys.get_int(ArchKey::ContextLength, 0);
    hp_.rms_eps = float(keys.get_float(ArchKey::RmsEps, rms_eps_default));
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
    if (!ub.hidden && !hp_.has_logits)
        throw std::invalid_argument(hp_.arch + " is an embedding model: it gives embeddings (hidden states), not logits");
    if (n_out < T && !all_rows) x = ops::get_rows(g, x, g.input(DType::I32, {n_out}, ub.out_idx.data(), "out_idx"));
    // (Encoders end with a LayerNorm of their own and have no output_norm.)
    if (output_norm_) x = ops::rms_norm(g, x, output_norm_, hp_.rms_eps);  // (n_embd, n_out)
    if (ub.hidden) {
        g.mark_output(x);
        return x;
    }
    Tensor* logits = ops::mul_mat(g, output_, x);  // (n_vocab, n_out)
    if (softcap > 0) logits = ops::softcap(g, logits, softcap);
    g.mark_output(logits);
    return logits;
}

}  // namespace ls
