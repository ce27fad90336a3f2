// The GGUF metadata keys the families read, each named once: "<arch>.<suffix>", as llama.cpp's
// converter writes them (gguf-py's Keys). A family reads its hyperparameters through ArchKeys
// with these names rather than spelling key strings; a key a family needs that is not here is
// added here, with the suffix the converter writes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/gguf/gguf.h"

namespace ls {

// X(name, suffix)
#define LS_ARCH_KEYS(X)                                                                  \
    X(ContextLength, "context_length")                                                   \
    X(EmbeddingLength, "embedding_length")                                               \
    X(EmbeddingLengthPerLayerInput, "embedding_length_per_layer_input")                  \
    X(BlockCount, "block_count")                                                         \
    X(FeedForwardLength, "feed_forward_length")                                          \
    X(HeadCount, "attention.head_count")                                                 \
    X(HeadCountKv, "attention.head_count_kv")                                            \
    X(KeyLength, "attention.key_length")                                                 \
    X(ValueLength, "attention.value_length")                                             \
    X(KeyLengthSwa, "attention.key_length_swa")                                          \
    X(ValueLengthSwa, "attention.value_length_swa")                                      \
    X(RmsEps, "attention.layer_norm_rms_epsilon")                                        \
    X(LayerNormEps, "attention.layer_norm_epsilon")                                      \
    X(AttentionScale, "attention.scale")                                                 \
    X(AttentionCausal, "attention.causal")                                               \
    X(SlidingWindow, "attention.sliding_window")                                         \
    X(SlidingWindowPattern, "attention.sliding_window_pattern")                          \
    X(SharedKvLayers, "attention.shared_kv_layers")                                      \
    X(TemperatureScale, "attention.temperature_scale")                                   \
    X(AttnLogitSoftcapping, "attn_logit_softcapping")                                    \
    X(FinalLogitSoftcapping, "final_logit_softcapping")                                  \
    X(RopeFreqBase, "rope.freq_base")                                                    \
    X(RopeFreqBaseSwa, "rope.freq_base_swa")                                             \
    X(RopeDimensionCount, "rope.dimension_count")                                        \
    X(RopeDimensionCountSwa, "rope.dimension_count_swa")                                 \
    X(RopeScaleLinear, "rope.scale_linear")                                              \
    X(RopeScalingType, "rope.scaling.type")                                              \
    X(RopeScalingFactor, "rope.scaling.factor")                                          \
    X(RopeScalingAttnFactor, "rope.scaling.attn_factor")                                 \
    X(RopeScalingOrigCtx, "rope.scaling.original_context_length")                        \
    X(RopeScalingFinetuned, "rope.scaling.finetuned")                                    \
    X(RopeYarnExtFactor, "rope.scaling.yarn_ext_factor")                                 \
    X(RopeYarnBetaFast, "rope.scaling.yarn_beta_fast")                                   \
    X(RopeYarnBetaSlow, "rope.scaling.yarn_beta_slow")                                   \
    X(RopeYarnLogMul, "rope.scaling.yarn_log_multiplier")                                \
    X(ExpertCount, "expert_count")                                                       \
    X(ExpertUsedCount, "expert_used_count")                                              \
    X(ExpertFeedForwardLength, "expert_feed_forward_length")                             \
    X(ExpertSharedFeedForwardLength, "expert_shared_feed_forward_length")                \
    X(ExpertWeightsNorm, "expert_weights_norm")                                          \
    X(ExpertWeightsScale, "expert_weights_scale")                                        \
    X(ExpertSharedCount, "expert_shared_count")                                          \
    X(ExpertGatingFunc, "expert_gating_func")                                            \
    X(ExpertGroupCount, "expert_group_count")                                            \
    X(ExpertGroupUsedCount, "expert_group_used_count")                                   \
    X(LeadingDenseBlockCount, "leading_dense_block_count")                               \
    X(NextnPredictLayers, "nextn_predict_layers")                                        \
    X(QLoraRank, "attention.q_lora_rank")                                                \
    X(KvLoraRank, "attention.kv_lora_rank")                                              \
    X(KeyLengthMla, "attention.key_length_mla")                                          \
    X(ValueLengthMla, "attention.value_length_mla")                                      \
    X(EmbeddingScale, "embedding_scale")                                                 \
    X(ResidualScale, "residual_scale")                                                   \
    X(LogitScale, "logit_scale")                                                         \
    X(PoolingType, "pooling_type")                                                       \
    X(FullAttentionInterval, "full_attention_interval")                                  \
    X(SsmConvKernel, "ssm.conv_kernel")                                                  \
    X(SsmStateSize, "ssm.state_size")                                                    \
    X(SsmGroupCount, "ssm.group_count")                                                  \
    X(SsmTimeStepRank, "ssm.time_step_rank")                                             \
    X(SsmInnerSize, "ssm.inner_size")                                                    \
    X(ShortconvLCache, "shortconv.l_cache")                                              \
    X(Dense2FeatIn, "dense_2_feat_in")                                                   \
    X(Dense2FeatOut, "dense_2_feat_out")                                                 \
    X(Dense3FeatIn, "dense_3_feat_in")                                                   \
    X(Dense3FeatOut, "dense_3_feat_out")

enum class ArchKey {
#define LS_X(e, s) e,
    LS_ARCH_KEYS(LS_X)
#undef LS_X
};

// A file's keys under its architecture's prefix; the accessors are GgufFile's (the same
// errors, naming the whole key).
class ArchKeys {
public:
    ArchKeys(const GgufFile& f, const std::string& arch) : f_(&f), prefix_(arch + ".") {}
    // "<arch>.<suffix>"
    std::string name(ArchKey k) const;
    std::string arch() const { return prefix_.substr(0, prefix_.size() - 1); }
    bool has(ArchKey k) const { return f_->find(name(k)) != nullptr; }
    const GgufValue* find(ArchKey k) const { return f_->find(name(k)); }
    int64_t get_int(ArchKey k) const { return f_->get_int(name(k)); }
    int64_t get_int(ArchKey k, int64_t def) const { return f_->get_int(name(k), def); }
    double get_float(ArchKey k) const { return f_->get_float(name(k)); }
    double get_float(ArchKey k, double def) const { return f_->get_float(name(k), def); }
    bool get_bool(ArchKey k, bool def) const { return f_->get_bool(name(k), def); }
    std::string get_string(ArchKey k) const { return f_->get_string(name(k)); }
    std::string get_string(ArchKey k, const std::string& def) const { return f_->get_string(name(k), def); }
    std::vector<int64_t> get_int_array(ArchKey k) const { return f_->get_int_array(name(k)); }
    std::vector<bool> get_bool_array(ArchKey k) const { return f_->get_bool_array(name(k)); }
    // A per-layer value as the converters write it: one scalar for every layer, or an array of
    // n_layer entries (Gemma 4's feed_forward_length, LFM2's head_count_kv). Absent: def for
    // every layer, or std::runtime_error naming the key when there is no default; an array of
    // another length is an error naming its length.
    std::vector<int64_t> per_layer(ArchKey k, int64_t n_layer, std::optional<int64_t> def = std::nullopt) const;

private:
    const GgufFile* f_;
    std::string prefix_;
};

}  // namespace ls
