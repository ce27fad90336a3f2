#include "core/models/registry.h"

#include <stdexcept>

#include "core/models/bert.h"
#include "core/models/deepseek2.h"
#include "core/models/gemma.h"
#include "core/models/gemma4.h"
#include "core/models/gpt_oss.h"
#include "core/models/granite_hybrid.h"
#include "core/models/lfm2.h"
#include "core/models/llama.h"
#include "core/models/nemotron_h.h"
#include "core/models/qwen3next.h"

namespace ls {
namespace {

template <class M> std::unique_ptr<Model> make() { return std::make_unique<M>(); }
template <int32_t rope_mode, QkNorm qk_norm, bool post_norm = false> std::unique_ptr<Model> make_llama() {
    return std::make_unique<Llama>(LlamaFlavor{rope_mode, qk_norm, post_norm});
}
template <DeltaHeadMap map> std::unique_ptr<Model> make_qwen3_hybrid() { return std::make_unique<Qwen3Hybrid>(map); }

// One row per GGUF architecture name. A new family: its class in core/models/<family>.cpp
// and its rows here.
struct Family {
    const char* arch;
    std::unique_ptr<Model> (*make)();
};
constexpr Family kFamilies[] = {
    {"llama", &make_llama<ROPE_NORMAL, QkNorm::None>},
    {"qwen2", &make_llama<ROPE_NEOX, QkNorm::None>},  // (Qwen2, Qwen2.5, DeepSeek-R1-Distill-Qwen: q/k/v biases)
    {"qwen3", &make_llama<ROPE_NEOX, QkNorm::PerHead>},
    {"granite", &make_llama<ROPE_NORMAL, QkNorm::None>},  // (IBM Granite 3.x dense; its multipliers from the metadata)
    {"granitemoe", &make_llama<ROPE_NORMAL, QkNorm::None>},  // (Granite 3 MoE; shared experts refused)
    {"olmo2", &make_llama<ROPE_NEOX, QkNorm::Whole, true>},  // (OLMo 2: post-norms, whole-projection q/k norms)
    {"mistral3", &make_llama<ROPE_NORMAL, QkNorm::None>},  // (Ministral 3, Mistral Small 3.x text: YaRN, attention temperature)
    {"phi3", &make_llama<ROPE_NEOX, QkNorm::None>},  // (Phi-3, Phi-4: fused q/k/v and gate/up, partial rope; not LongRoPE)
    {"glm4moe", &make_llama<ROPE_NEOX, QkNorm::PerHead>},  // (GLM-4.5/4.6/4.7: biases, partial rope, sigmoid router, shared experts)
    {"qwen3moe", &make_llama<ROPE_NEOX, QkNorm::PerHead>},
    {"qwen3vl", &make_llama<ROPE_NEOX, QkNorm::PerHead>},  // (Qwen3-VL's text side: M-RoPE, deepstack rows)
    {"qwen3vlmoe", &make_llama<ROPE_NEOX, QkNorm::PerHead>},
    {"gemma2", &make<Gemma>},
    {"gpt-oss", &make<GptOss>},
    {"gemma3", &make<Gemma>},
    {"gemma-embedding", &make<Gemma>},
    {"gemma4", &make<Gemma4>},
    {"qwen3next", &make_qwen3_hybrid<HEADS_GROUPED>},
    {"qwen35", &make_qwen3_hybrid<HEADS_TILED>},
    {"qwen35moe", &make_qwen3_hybrid<HEADS_TILED>},
    {"lfm2", &make<Lfm2>},
    {"deepseek2", &make<Deepseek2>},  // (DeepSeek V2/V3/R1, Kimi K2: latent attention)
    {"nemotron_h", &make<NemotronH>},
    {"granitehybrid", &make<GraniteHybrid>},  // (IBM Granite 4.0-H: Mamba-2 beside attention, MoE with a shared expert)  // (Nemotron-H, Nemotron Nano v2: Mamba-2 beside attention)
    {"bert", &make<Bert>},
    {"nomic-bert", &make<Bert>},
};

}  // namespace

std::string supported_architectures() {
    std::string s;
    for (const Family& f : kFamilies) s += (s.empty() ? "" : ", ") + std::string(f.arch);
    return s;
}

std::unique_ptr<Model> load_model(const std::string& path, Backend& be, Model::WeightMemory mem) {
    Model::LoadOptions o;
    o.mem = mem;
    return load_model(path, {single_device(be)}, o);
}

std::unique_ptr<Model> load_model(const std::string& path, const std::vector<ModelDevice>& devices, const Model::LoadOptions& o) {
    auto file = GgufFile::open(path);
    const std::string arch = file->get_string("general.architecture");
    for (const Family& f : kFamilies)
        if (arch == f.arch) {
            std::unique_ptr<Model> m = f.make();
            m->attach(std::move(file), devices, o);
            return m;
        }
    throw std::runtime_error(path + ": architecture '" + arch + "' is not supported (supported: " + supported_architectures() + ")");
}

}  // namespace ls
