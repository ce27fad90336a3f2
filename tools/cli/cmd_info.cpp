#include <cstdio>
#include <map>

#include "tools/cli/app.h"

namespace ls::cli {

int cmd_info(const Options& o) {
    Options mapped = o;
    if (mapped.mmap < 0) mapped.mmap = 1;  // only metadata is read: no copy of the weights
    App app = open_app(mapped);
    const Hparams& hp = app.model->hparams();
    const GgufFile& f = app.model->gguf();
    std::printf("file:        %s (GGUF v%u, %.1f MiB)\n", app.model_path.c_str(), f.version(), f.size() / 1048576.0);
    std::printf("name:        %s\n", f.get_string("general.name", "?").c_str());
    std::printf("arch:        %s: %lld layers, n_embd %lld, n_ff %lld, vocab %lld, trained context %lld\n", hp.arch.c_str(),
                (long long)hp.n_layer, (long long)hp.n_embd, (long long)hp.n_ff, (long long)hp.n_vocab, (long long)hp.n_ctx_train);
    const LayerParams& L0 = hp.layers.at(0);
    std::printf("attention:   %d heads, %d kv heads, head dim %d/%d, scale %.5f\n", L0.n_head, L0.n_head_kv, L0.head_dim_k,
                L0.head_dim_v, hp.attn_scale);
    for (size_t il = 0; il < hp.layers.size(); ++il) {
        const LayerParams& L = hp.layers[il];
        std::string kind = L.recurrent ? "recurrent" : L.window ? "window " + std::to_string(L.window) : "global";
        // Per-layer head geometry where it differs from layer 0 (Gemma 4's global layers).
        if (L.n_head_kv != L0.n_head_kv || L.head_dim_k != L0.head_dim_k || L.head_dim_v != L0.head_dim_v)
            kind += ", " + std::to_string(L.n_head_kv) + " kv heads, head dim " + std::to_string(L.head_dim_k) + "/" +
                    std::to_string(L.head_dim_v);
        if (L.kv_source >= 0) kind += ", reads layer " + std::to_string(L.kv_source) + "'s KV cache";
        std::printf("  layer %2zu: %s, rope base %g scale %g\n", il, kind.c_str(), L.rope_base, L.rope_scale);
    }
    std::map<std::string, std::pair<int, size_t>> types;
    int64_t params = 0;
    for (const GgufTensorInfo& t : f.tensors()) {
        auto& e = types[dtype_name(t.type)];
        e.first++;
        e.second += t.nbytes;
        params += t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
    }
    std::printf("tensors:     %zu, %.1f M parameters\n", f.tensors().size(), params / 1e6);
    for (auto& [name, e] : types) std::printf("  %-7s %4d tensors, %8.1f MiB\n", name.c_str(), e.first, e.second / 1048576.0);
    // KV memory per 1000 tokens of context, F16, one sequence.
    double kv = 0;
    for (const auto& l : app.model->kv_layout()) kv += double(l.k_row + (l.v_in_k ? 0 : l.v_row)) * 2;
    // (multi-head latent attention: the latent and its rope part, V inside K)
    std::printf("kv cache:    %.0f bytes per token, %.2f MiB per 1000 positions (f16, before the sliding-window rings cap it)\n", kv,
                kv * 1000 / 1048576.0);
    std::printf("placement:   %s\n", app.model->placement().describe().c_str());
    std::printf("tokenizer:   %s, %d tokens, bos %d, eos %d, eot %d\n", f.get_string("tokenizer.ggml.model", "?").c_str(),
                app.tokenizer->n_vocab(), app.tokenizer->bos(), app.tokenizer->eos(), app.tokenizer->eot());
    return 0;
}

}  // namespace ls::cli
