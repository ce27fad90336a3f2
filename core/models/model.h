// A loaded model: hyperparameters, per-layer data, typed weights bound to a backend, and the
// graph builder of its architecture.
#pragma once
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/backend.h"
#include "core/gguf/gguf.h"
#include "core/memory/kv_cache.h"
#include "core/memory/recurrent_memory.h"
#include "core/models/arch_keys.h"
#include "core/models/mamba2_block.h"
#include "core/sched/placement.h"
#include "core/sched/scheduler.h"

namespace ls {

// Per-layer differences are data, not branches on the architecture.
struct LayerParams {
    int32_t window = 0;        // 0 = full attention
    float rope_base = 10000.f;
    float rope_scale = 1.f;    // freq_scale = 1 / linear factor
    int32_t n_head = 0, n_head_kv = 0;
    int32_t head_dim_k = 0, head_dim_v = 0;
    // Hybrid models: a recurrent (gated delta net) layer keeps no KV rows; its state lives in
    // RecurrentMemory (recurrent_layout()).
    bool recurrent = false;
    // Gemma 4's KV-shared layers: >= 0 names the earlier layer (of the same window) whose
    // cache this layer attends over; it stores no rows of its own. -1: its own cache.
    int32_t kv_source = -1;
    // Multi-head latent attention (deepseek2): the cached key is the latent and its rope part,
    // the value the latent alone, its first head_dim_v values (KvLayerSpec::v_in_k).
    bool v_in_k = false;
};

struct Hparams {
    std::string arch;
    int64_t n_embd = 0, n_layer = 0, n_ff = 0, n_vocab = 0, n_ctx_train = 0;
    float rms_eps = 1e-6f;
    float attn_scale = 1.f;
    // Encoders (BERT, nomic-bert) attend both ways: every token of a sequence sees the whole
    // sequence (attn_last_keys, core/rules/attention_rule.h). Such a model evaluates an input
    // in one ubatch.
    bool causal = true;
    // false: an embedding model with no output projection; it gives hidden states only
    // (Ubatch::hidden), and a request for logits is refused.
    bool has_logits = true;
    // The width of the rows a ubatch gives in place of tokens' (Ubatch::embd): n_embd, or more
    // where the model reads more than one row's worth per image token (Qwen3-VL's deepstack:
    // n_embd * (1 + deepstack layers)); 0 stands for n_embd.
    int64_t n_embd_in = 0;
    int64_t given_width() const { return n_embd_in > 0 ? n_embd_in : n_embd; }
    std::vector<LayerParams> layers;
};

// The tokens of one ubatch: token, position and sequence per token, and which need logits.
struct Ubatch {
    std::vector<int32_t> tokens, pos, seq;
    std::vector<int32_t> out_idx;  // indices (into tokens) whose logits are wanted, in order
    // What out_idx's rows give: false, the logits; true, the final normalized hidden state
    // (n_embd floats: what the output matrix multiplies), for embeddings. output_head honours
    // it, so every family gives either.
    bool hidden = false;
    // Rows given as input embeddings instead of their token's (an image's soft tokens, from a
    // vision encoder): token embd_at[i] takes row i of embd (Hparams::given_width() floats
    // each), as it is (a model's scaling of token embeddings does not apply to it).
    std::vector<int32_t> embd_at;
    std::vector<float> embd;
    // Per token, when not empty: the last position its query sees where that is past its own
    // (an image's tokens see the whole image, as Gemma 3 asks), or -1 (causal).
    std::vector<int32_t> last_key;
    // Models with multi-axis rope (Model::rope_axes() > 1, Qwen3.5's M-RoPE): each token's
    // position on every axis, [T][axes] (Session fills it: text tokens take one position on
    // every axis; an image's tokens their temporal, row and column positions).
    std::vector<int32_t> rope_pos;
};

// The KV-cache row of every token of a ubatch in a ring of R rows per sequence slot,
// seq * R + pos mod R (SEMANTICS.md section 1): one I64 graph input per distinct R.
class CacheRows {
public:
    CacheRows(Graph& g, const Ubatch& ub) : g_(g), ub_(ub) {}
    Tensor* operator()(int64_t R);

private:
    Graph& g_;
    const Ubatch& ub_;
    std::vector<std::pair<int64_t, Tensor*>> by_ring_;
};

// The rope cos/sin tables of a ubatch's positions (ops::rope_table): one graph input per
// distinct setting (Gemma 3: local and global bases), computed once and read by every layer.
class RopeTables {
public:
    // pos: one position per token; it must outlive this object.
    RopeTables(Graph& g, const std::vector<int32_t>& pos) : g_(g), pos_(&pos) {}
    // freq_factors: n_dims/2 host floats (Model::host_f32), or null.
    Tensor* operator()(const RopeParams& p, const std::vector<float>* freq_factors = nullptr);
    // Other positions from here on (Gemma 4's layers after the narrowing to the output rows).
    void reset(const std::vector<int32_t>& pos) {
        pos_ = &pos;
        made_.clear();
    }

private:
    Graph& g_;
    const std::vector<int32_t>* pos_;
    struct Made {
        RopeParams p;
        const std::vector<float>* ff;
        Tensor* t;
    };
    std::vector<Made> made_;
};

// The attention op's position input for a ubatch: per token, the last key position its query
// sees (attn_last_keys): its own position when causal, its sequence's last one otherwise.
Tensor* attn_positions(Graph& g, const Ubatch& ub, bool causal);

// The position input and window of a layer's attention in a model whose ubatch may hold
// blocks of tokens that see each other (Ubatch::last_key): without such blocks, the model's own
// position input `pos` and the layer's window; with them, each query's last and first key (kAttnFirstGiven): the
// last from last_key (its own position outside a block), the first its own position's window
// start, so a block token sees the keys its window reaches back to and the rest of its block.
// One input per distinct window, made once.
class AttnKeys {
public:
    AttnKeys(Graph& g, const Ubatch& ub, Tensor* pos) : g_(g), ub_(ub), pos_(pos) {}
    struct Keys {
        Tensor* pos;
        int32_t window;  // for AttentionParams / CachedAttention
    };
    Keys operator()(int32_t window);

private:
    Graph& g_;
    const Ubatch& ub_;
    Tensor* pos_;
    std::vector<std::pair<int32_t, Tensor*>> given_;
};

// x (n_embd, T), the ubatch's token embeddings, with the rows Ubatch::embd gives written over
// theirs (set_rows); x itself when it gives none. Given rows of `width` values (0: n_embd)
// give their first n_embd.
Tensor* with_given_rows(Graph& g, const Ubatch& ub, Tensor* x, int64_t width = 0);

// The projections of a standard attention block and their biases (null where absent).
struct AttnWeights {
    Tensor* wq;  // (n_embd, n_head * head_dim_k)
    Tensor* wk;  // (n_embd, n_head_kv * head_dim_k)
    Tensor* wv;  // (n_embd, n_head_kv * head_dim_v)
    Tensor* wo;  // (n_head * head_dim_v, n_embd)
    Tensor *bq = nullptr, *bk = nullptr, *bv = nullptr, *bo = nullptr;
};
enum class Biases { None, Optional, Required };

// A matrix applied on the host to a finished vector (EmbeddingGemma's sentence-transformers
// Dense projections, applied to a pooled embedding): read once at load, its rows dequantized to
// F32, bound to no device. apply() sums each output in canon_dot's fixed order
// (core/rules/canon.h), so the result is the same bits on every machine and backend.
struct HostLinear {
    std::string name;             // the tensor's, for messages
    int64_t n_in = 0, n_out = 0;
    std::vector<float> w;         // (n_in, n_out): output o is the dot of row o with x
    std::vector<float> b;         // (n_out) added after the dot, or empty: no bias
    // y = W x (+ b); x.size() must be n_in.
    std::vector<float> apply(const std::vector<float>& x) const;
};

// A reranker's classifier head (<arch>.pooling_type 4, "rank"), as llama.cpp's build_pooling
// runs it on the pooled state: cls.weight (+ cls.bias) then tanh, where the file has them
// (RoBERTa-style heads); cls.output.weight (+ cls.output.bias), the scores; softmax over them
// for Qwen3's rerankers (their two rows are the language model's "yes" and "no"). The state
// pooled is the first token's ([CLS]), or the last one's for Qwen3. On the host, in fixed
// order (canon_dot, det_tanh, det_exp), like HostLinear.
struct RankHead {
    std::vector<HostLinear> cls;  // 0 or 1: cls.weight (+ bias), followed by tanh
    HostLinear out;               // cls.output.weight (+ bias): n_out scores
    bool softmax = false;
    bool last_token = false;
    // The scores of a pooled state of n_embd values; the first is the relevance score.
    std::vector<float> apply(const std::vector<float>& pooled) const;
};


// A backend as the one device of a model (the CPU and the reference backend are the host).
ModelDevice single_device(Backend& be);

class Model {
public:
    // How a host backend (CPU) holds the weights: mapped from the file in place, or copied
    // into its own (huge-page) memory, which decodes faster; Auto copies when the file takes
    // at most half of the memory available (llama.cpp's --mmap / --no-mmap pick one).
    // Backends with their own memory (GPUs) always copy.
    enum class WeightMemory { Auto, Map, Copy };
    virtual ~Model() = default;
    // Takes the opened file, puts its bytes where `be` computes on them (see WeightMemory),
    // reads hyperparameters and binds every weight. Throws naming the tensor, type or key at
    // fault. The model registry (core/models/registry.h, load_model) picks the architecture's
    // class and calls this once.
    void attach(std::unique_ptr<GgufFile> file, Backend& be, WeightMemory mem);

    // Over several devices (issue 31): the architecture binds every weight first (checking
    // shapes and types, reading no bytes), then plan_placement decides each tensor's device
    // from `placement` (refusing a plan that does not fit before anything is copied), then
    // each device gets its tensors: the host maps them in place or copies them (WeightMemory),
    // other devices copy. `state` sizes the KV cache for the fit check (n_ctx 0: not counted).
    struct LoadOptions {
        WeightMemory mem = WeightMemory::Auto;
        PlacementFlags placement;
        KvCacheConfig state;
    };
    void attach(std::unique_ptr<GgufFile> file, const std::vector<ModelDevice>& devices, const LoadOptions& o);

    const PlacementPlan& placement() const { return plan_; }
    // The backends holding any of the model, the one with the token embedding first.
    const std::vector<Backend*>& backends() const { return backends_; }
    // Small weights outside the layers that layers read: each device
    // gets a copy (Scheduler's `shared`) rather than each node that reads one going to it.
    // Each with its bytes in the mapped file.
    std::vector<std::pair<const Tensor*, const void*>> shared_weights() const;
    // --split-mode row: the matrices split by output rows, each with its slices (the whole
    // tensor is placed on no device; the scheduler runs a slice per device and gathers).
    const std::vector<RowSplit>& row_splits() const { return row_splits_; }
    // Where the output head runs.
    Backend* output_backend() const { return devices_.at(size_t(plan_.output_device)).backend; }
    // Where layer il's weights, KV rows and recurrent state live.
    std::vector<Backend*> layer_backends() const;

    const Hparams& hparams() const { return hp_; }
    // What a pooled sequence embedding goes through, in order, before it is normalized (empty:
    // nothing): EmbeddingGemma's dense_2 then dense_3, as llama.cpp's build_dense_out applies
    // them. The chain maps n_embd to n_embd (checked at load), so an embedding keeps n_embd.
    const std::vector<HostLinear>& embd_projection() const { return embd_proj_; }
    // A reranker's head (pooling_type rank), or null.
    const RankHead* rank_head() const { return rank_ ? &*rank_ : nullptr; }
    const GgufFile& gguf() const { return *file_; }
    size_t weight_bytes() const { return file_->size(); }
    std::vector<KvLayerSpec> kv_layout() const;
    // Hybrid models: per layer, the recurrent state per sequence slot (empty: none).
    virtual std::vector<RecurrentLayerSpec> recurrent_layout() const { return {}; }
    // Whether build_graph takes given input rows and blocks of tokens that see each other
    // (Ubatch::embd_at, Ubatch::last_key): the families that run images.
    virtual bool takes_given_rows() const { return false; }
    // How many position axes the model's rope reads (Ubatch::rope_pos): 1 for plain rope, 3
    // for M-RoPE (temporal, height, width), where an image's tokens take their place in its
    // grid and the text after it continues from its largest position plus one.
    virtual int rope_axes() const { return 1; }

    // Builds the graph of one ubatch; returns the logits F32 [n_vocab, out_idx.size()]
    // (ub.hidden: the hidden states F32 [n_embd, out_idx.size()]; nullptr when no row is
    // wanted). Every family ends with output_head, which makes the choice.
    virtual Tensor* build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const = 0;
    // The same for models with recurrent layers (rs is null when recurrent_layout() is empty).
    // Sessions call this one; models without recurrent state need not override it.
    virtual Tensor* build_graph(Graph& g, const Ubatch& ub, KvCache& kv, RecurrentMemory* rs) const {
        (void)rs;
        return build_graph(g, ub, kv);
    }

protected:
    // Reads hyperparameters and binds weights; called once by attach().
    virtual void load_arch() = 0;
    // The sizes every decoder's metadata has, into hp_: embedding_length, block_count,
    // context_length (0 when absent) and the RMS epsilon (rms_eps_default when absent).
    void read_decoder_sizes(const ArchKeys& keys, double rms_eps_default);
    // Binds a weight, checking its shape (ne0 first, as in GGUF) and that `be` can use its type.
    Tensor* weight(const std::string& name, std::initializer_list<int64_t> ne, bool required = true);
    Tensor* norm_weight(const std::string& name, int64_t n);
    // A small F32 tensor of n values read into host memory and bound to no device (rope
    // frequency factors, which core folds into the rope tables); checks shape and type.
    std::vector<float> host_f32(const std::string& name, int64_t n) const;
    Tensor* matmul_weight(const std::string& name, int64_t k, int64_t n);
    // A matrix (n_in, n_out) of any type core/quant dequantizes, read into host memory
    // (HostLinear); checks shape, type and whole blocks per row, naming the tensor.
    HostLinear host_linear(const std::string& name, int64_t n_in, int64_t n_out) const;
    // blk.N.attn_{q,k,v,output}.weight (and .bias as `biases` says) for layer L's geometry.
    AttnWeights attn_weights(const std::string& prefix, const LayerParams& L, Biases biases);
    // blk.N.ssm_* of a Mamba-2 layer (core/models/mamba2_block.h), shapes checked, the small
    // vectors F32.
    Mamba2Weights mamba2_weights(const std::string& prefix, const Mamba2Sizes& s);
    // The matrices of n_expert experts, [k, n, n_expert] (mul_mat_id's w).
    Tensor* expert_weight(const std::string& name, int64_t k, int64_t n, int64_t n_expert);
    // Binds token_embd (which sets hp_.n_vocab), output_norm and output (token_embd when the
    // file ties them): every architecture here has these three.
    void bind_embeddings();
    // The logits of the rows ub.out_idx asks for (only those go through the large output
    // projection): RMS norm with output_norm, then output, then soft-capped when softcap > 0.
    // With ub.hidden, the normed rows themselves (no projection, no soft cap): the one place
    // the hidden-state output is made. nullptr when none is wanted. `all_rows`: x holds
    // exactly the wanted rows already.
    Tensor* output_head(Graph& g, const Ubatch& ub, Tensor* x, float softcap = 0.f, bool all_rows = false) const;

    Tensor* tok_embd_ = nullptr;     // (n_embd, n_vocab)
    Tensor* output_norm_ = nullptr;  // (n_embd)
    Tensor* output_ = nullptr;       // (n_embd, n_vocab): tok_embd_ unless the file has its own

    std::unique_ptr<GgufFile> file_;
    std::vector<ModelDevice> devices_;
    std::vector<Backend*> backends_;
    PlacementPlan plan_;
    std::vector<std::unique_ptr<Buffer>> weight_buffers_;  // per device used
    std::deque<Tensor> weights_;
    std::unordered_map<std::string, int64_t> matrix_rows_;  // a layer's matrices: name -> output rows
    std::vector<RowSplit> row_splits_;
    Hparams hp_;
    std::vector<HostLinear> embd_proj_;  // embd_projection()
    std::optional<RankHead> rank_;       // rank_head()

private:
    void load_rank_head();
};

// A model with recurrent layers (their state in RecurrentMemory, recurrent_layout()): Session
// builds its graph with the memory; the form without it refuses, naming the architecture.
class RecurrentModel : public Model {
public:
    Tensor* build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const final;
    Tensor* build_graph(Graph& g, const Ubatch& ub, KvCache& kv, RecurrentMemory* rs) const override = 0;

protected:
    // recurrent_layout() of a model whose recurrent layers all keep the same state: s on each
    // of them, nothing on the others.
    std::vector<RecurrentLayerSpec> same_state_on_recurrent_layers(const RecurrentLayerSpec& s) const;
};

}  // namespace ls
