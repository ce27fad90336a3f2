#pragma once
#include "core/ir/op_params.h"
#include "core/models/model.h"
#include "core/models/moe.h"

namespace ls {

// gpt-oss: sliding-window (128 tokens) and full layers alternating, attention with biases
// and a learned sink logit per head, YaRN rope, a mixture of clamped-SwiGLU experts with
// biases (router: top-k of the logits, softmax over those k), experts usually MXFP4.
class GptOss final : public Model {
public:
    Tensor* build_graph(Graph& g, const Ubatch& ub, KvCache& kv) const override;

private:
    void load_arch() override;
    struct Layer {
        Tensor* attn_norm;                // (n_embd)
        AttnWeights at;                   // q, k, v, o with their biases
        Tensor* sinks;                    // (n_head) F32
        Tensor* post_attn_norm;           // (n_embd): the FFN's input norm
        Tensor *ffn_gate_inp, *ffn_gate_inp_b;  // router (n_embd, n_expert), (n_expert)
        MoeExperts experts;
    };
    std::vector<Layer> layers_;
    RopeParams rope_{};
    int64_t n_expert_ = 0, n_expert_used_ = 0;
};

}  // namespace ls
