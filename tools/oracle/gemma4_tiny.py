#!/usr/bin/env python3
"""Tiny random-weight Gemma 4 (arch gemma4) oracle models.

Builds small Gemma 4 text models with the `transformers` reference modules (Gemma4ForCausalLM,
random weights) and exports them to GGUF with the names, metadata and transforms of llama.cpp's
converter (re-implemented here from its Gemma 4 class):
  * RMSNorm weights are stored as they are (Gemma 4's norm multiplies by w, no +1);
  * the per-layer sliding/global pattern as a bool array, per-layer head_count_kv and
    feed_forward_length as arrays, key/value length of global and (_swa) sliding layers;
  * proportional RoPE of global layers as rope_freqs: factor 1 on the rotated frequencies and
    1e30 on the others (their angle becomes 0), rotating the whole head (dimension_count);
  * KV-shared layers carry no attn_k/attn_v/attn_k_norm; where attention_k_eq_v leaves a
    global layer without v_proj there is no attn_v (V is the raw K projection);
  * MoE: router weight ffn_gate_inp, its input scale ffn_gate_inp.scale, the per-expert scale
    ffn_down_exps.scale, fused experts ffn_gate_up_exps (gate rows then up rows) and
    ffn_down_exps, norms pre_ffw_norm_2 / post_ffw_norm_1 / post_ffw_norm_2;
  * PLE: per_layer_token_embd, per_layer_model_proj, per_layer_proj_norm, and per layer
    inp_gate, proj, post_norm; layer_scalar as layer_output_scale.
Writes, per model, the GGUF and the logits of a 100-token prompt (golden file read by
tests/models/test_gemma4.cpp). The window is 8 tokens, so the prompt wraps every ring many times.

  gemma4_tiny:    6 layers (S S G S S G), PLE, the last 2 layers KV-shared (double-wide MLP),
                  sliding head 32, global head 64, proportional RoPE, final softcap 30
  gemma4moe_tiny: 4 layers (S G S G), attention_k_eq_v (global layers: no v_proj, 1 KV head),
                  8 experts, 2 per token, beside the dense MLP

  gemma4 bench:   (for `lockstep bench` only, not committed, no golden) E2B-like layer sizes
                  (hidden 1536, 8 heads / 1 KV head of 256, global heads of 512, FFN 6144,
                  PLE 256), 8 layers of which the last 2 share KV, vocabulary 4096, Q8_0 matrices

Usage: tools/oracle/gemma4_tiny.py OUT_DIR [gemma4|gemma4moe] [bench]   (needs torch, transformers, gguf)
"""
import sys

import numpy as np
import torch
import gguf
from transformers import Gemma4TextConfig, Gemma4ForCausalLM

from golden import write_golden

SEED = 4321
N_PROMPT = 100
WINDOW = 8
VOCAB = 320


BENCH = False


def make_model(kind):
    if BENCH:
        cfg = Gemma4TextConfig(vocab_size=4096, hidden_size=1536, num_attention_heads=8, head_dim=256, global_head_dim=512,
                               sliding_window=512, max_position_embeddings=32768, rms_norm_eps=1e-6,
                               final_logit_softcapping=30.0, vocab_size_per_layer_input=4096, tie_word_embeddings=True,
                               num_hidden_layers=8, intermediate_size=6144, num_key_value_heads=1,
                               layer_types=["sliding_attention"] * 4 + ["full_attention"] + ["sliding_attention"] * 2 +
                               ["full_attention"], hidden_size_per_layer_input=256, num_kv_shared_layers=2)
        cfg._attn_implementation = "eager"
        torch.manual_seed(SEED)
        m = Gemma4ForCausalLM(cfg).float().eval()
        return cfg, m
    common = dict(vocab_size=VOCAB, hidden_size=64, num_attention_heads=2, head_dim=32, global_head_dim=64,
                  sliding_window=WINDOW, max_position_embeddings=256, rms_norm_eps=1e-6, final_logit_softcapping=30.0,
                  rope_parameters={
                      "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                      "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                         "rope_theta": 1000000.0}},
                  vocab_size_per_layer_input=VOCAB, tie_word_embeddings=True)
    if kind == "gemma4":
        cfg = Gemma4TextConfig(**common, num_hidden_layers=6, intermediate_size=96, num_key_value_heads=1,
                               layer_types=["sliding_attention", "sliding_attention", "full_attention"] * 2,
                               hidden_size_per_layer_input=16, num_kv_shared_layers=2, use_double_wide_mlp=True)
    else:
        cfg = Gemma4TextConfig(**common, num_hidden_layers=4, intermediate_size=96, num_key_value_heads=2,
                               num_global_key_value_heads=1, attention_k_eq_v=True,
                               layer_types=["sliding_attention", "full_attention"] * 2,
                               hidden_size_per_layer_input=0, enable_moe_block=True, num_experts=8, top_k_experts=2,
                               moe_intermediate_size=32)
    cfg._attn_implementation = "eager"
    torch.manual_seed(SEED)
    m = Gemma4ForCausalLM(cfg).float().eval()
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if p.dim() == 3:  # experts [E, out, in]: unit-variance outputs
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(p.shape[2]))
            elif p.dim() == 2:  # linear weights and embeddings: unit-variance outputs
                fan_in = p.shape[1]
                # embeddings are scaled by sqrt(dim) in the model: keep their entries ~1/sqrt(dim)
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(fan_in))
            elif "per_expert_scale" in name or name.endswith("router.scale"):
                p.copy_(1.0 + 0.3 * torch.randn(p.shape, generator=g))
            elif "norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
        # logits up to ~15, so that the final soft-cap (30) bends them (by ~8% there)
        m.model.norm.weight.mul_(4.0)
        for name, b in m.named_buffers():
            if name.endswith("layer_scalar"):
                b.copy_(0.6 + 0.8 * torch.rand(b.shape, generator=g))
    return cfg, m


def export(cfg, m, path, name=None, tail_tokens=(), ple_key_always=False):
    """The text model as llama.cpp's converter writes it; `name` replaces general.name, `tail_tokens` are control
    tokens given the last ids of the vocabulary (write_tokenizer; gemma4v_tiny.py's image tokens); with
    `ple_key_always` a model without per-layer embeddings still gets embedding_length_per_layer_input (0), as the
    converter writes it (conversion/gemma.py Gemma4Model.set_gguf_parameters; gemma4v_tiny.py)."""
    A = "gemma4"
    L = cfg.num_hidden_layers
    w = gguf.GGUFWriter(path, A)
    w.add_name(name or f"lockstep tiny {A}")
    w.add_block_count(L)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    plc = [cfg.per_layer_config[i] for i in range(L)]
    w.add_array(f"{A}.feed_forward_length", [int(m.model.layers[i].mlp.intermediate_size) for i in range(L)])
    w.add_head_count(cfg.num_attention_heads)
    w.add_array(f"{A}.attention.head_count_kv", [int(c.num_key_value_heads) for c in plc])
    swa = [t == "sliding_attention" for t in cfg.layer_types]
    w.add_array(f"{A}.attention.sliding_window_pattern", swa)
    w.add_sliding_window(cfg.sliding_window)
    w.add_uint32(f"{A}.attention.shared_kv_layers", cfg.num_kv_shared_layers)
    gh = int(plc[swa.index(False)].head_dim)
    w.add_key_length(gh)
    w.add_value_length(gh)
    sh = int(plc[swa.index(True)].head_dim)
    w.add_uint32(f"{A}.attention.key_length_swa", sh)
    w.add_uint32(f"{A}.attention.value_length_swa", sh)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    rp = cfg.rope_parameters
    w.add_rope_freq_base(rp["full_attention"]["rope_theta"])
    w.add_float32(f"{A}.rope.freq_base_swa", rp["sliding_attention"]["rope_theta"])
    w.add_rope_dimension_count(gh)
    w.add_uint32(f"{A}.rope.dimension_count_swa", sh)
    w.add_float32(f"{A}.final_logit_softcapping", cfg.final_logit_softcapping)
    if cfg.hidden_size_per_layer_input or ple_key_always:
        w.add_uint32(f"{A}.embedding_length_per_layer_input", cfg.hidden_size_per_layer_input or 0)
    if cfg.enable_moe_block:
        w.add_expert_count(cfg.num_experts)
        w.add_expert_used_count(cfg.top_k_experts)
        w.add_expert_feed_forward_length(cfg.moe_intermediate_size)

    def put(name, t):
        a = t.detach().float().contiguous().numpy().astype(np.float32)
        if BENCH and a.ndim == 2 and a.shape[1] % 32 == 0 and a.shape[0] > 1:  # matrices in Q8_0, as users run them
            q = gguf.quants.quantize(a, gguf.GGMLQuantizationType.Q8_0)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
            return
        w.add_tensor(name, a)

    sd = dict(m.named_parameters())
    bufs = dict(m.named_buffers())
    put("token_embd.weight", sd["model.embed_tokens.weight"])
    put("output_norm.weight", sd["model.norm.weight"])
    # proportional RoPE: the first partial_rotary_factor * head / 2 frequencies turn, the rest not
    n_rot_freq = int(rp["full_attention"]["partial_rotary_factor"] * gh // 2)
    put("rope_freqs.weight", torch.tensor([1.0] * n_rot_freq + [1e30] * (gh // 2 - n_rot_freq)))
    if cfg.hidden_size_per_layer_input:
        put("per_layer_token_embd.weight", sd["model.embed_tokens_per_layer.weight"])
        put("per_layer_model_proj.weight", sd["model.per_layer_model_projection.weight"])
        put("per_layer_proj_norm.weight", sd["model.per_layer_projection_norm.weight"])
    for i in range(L):
        p = f"model.layers.{i}."
        b = f"blk.{i}."
        put(b + "attn_norm.weight", sd[p + "input_layernorm.weight"])
        put(b + "attn_q.weight", sd[p + "self_attn.q_proj.weight"])
        put(b + "attn_q_norm.weight", sd[p + "self_attn.q_norm.weight"])
        if p + "self_attn.k_proj.weight" in sd:
            put(b + "attn_k.weight", sd[p + "self_attn.k_proj.weight"])
            put(b + "attn_k_norm.weight", sd[p + "self_attn.k_norm.weight"])
            if p + "self_attn.v_proj.weight" in sd:
                put(b + "attn_v.weight", sd[p + "self_attn.v_proj.weight"])
        put(b + "attn_output.weight", sd[p + "self_attn.o_proj.weight"])
        put(b + "post_attention_norm.weight", sd[p + "post_attention_layernorm.weight"])
        put(b + "ffn_norm.weight", sd[p + "pre_feedforward_layernorm.weight"])
        put(b + "ffn_gate.weight", sd[p + "mlp.gate_proj.weight"])
        put(b + "ffn_up.weight", sd[p + "mlp.up_proj.weight"])
        put(b + "ffn_down.weight", sd[p + "mlp.down_proj.weight"])
        put(b + "post_ffw_norm.weight", sd[p + "post_feedforward_layernorm.weight"])
        if cfg.enable_moe_block:
            put(b + "ffn_gate_inp.weight", sd[p + "router.proj.weight"])
            put(b + "ffn_gate_inp.scale", sd[p + "router.scale"])
            put(b + "ffn_down_exps.scale", sd[p + "router.per_expert_scale"])
            put(b + "ffn_gate_up_exps.weight", sd[p + "experts.gate_up_proj"])
            put(b + "ffn_down_exps.weight", sd[p + "experts.down_proj"])
            put(b + "pre_ffw_norm_2.weight", sd[p + "pre_feedforward_layernorm_2.weight"])
            put(b + "post_ffw_norm_1.weight", sd[p + "post_feedforward_layernorm_1.weight"])
            put(b + "post_ffw_norm_2.weight", sd[p + "post_feedforward_layernorm_2.weight"])
        if cfg.hidden_size_per_layer_input:
            put(b + "inp_gate.weight", sd[p + "per_layer_input_gate.weight"])
            put(b + "proj.weight", sd[p + "per_layer_projection.weight"])
            put(b + "post_norm.weight", sd[p + "post_per_layer_input_norm.weight"])
        put(b + "layer_output_scale.weight", bufs[p + "layer_scalar"])
    write_tokenizer(w, cfg.vocab_size, tail_tokens)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def vocab(V, tail_tokens=()):
    """(tokens, types, merges) of the small gemma4-style vocabulary: the control tokens, the 256 <0xXX>
    pieces, ASCII characters and a few merges, the user-defined visible tokens, <unusedN> fillers,
    then `tail_tokens` (control) as the last ids."""
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<|turn>", "<turn|>"]
    toks = specials + [f"<0x{b:02X}>" for b in range(256)]
    types = [3] * len(specials) + [6] * 256
    chars = ["▁"] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + list("\n.,!?")
    merges = [("▁", "t"), ("h", "e"), ("▁t", "he"), ("▁", "a"), ("i", "n"), ("e", "r")]
    toks += chars + ["".join(m) for m in merges]
    types += [1] * (len(chars) + len(merges))
    # rendered in the text, as llama.cpp's converter types them (user-defined)
    visible = ["<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", "<|tool_response>", "<tool_response|>"]
    toks += visible
    types += [4] * len(visible)
    n_unused = V - len(toks) - len(tail_tokens)
    toks += [f"<unused{i}>" for i in range(n_unused)]
    types += [5] * n_unused
    toks += list(tail_tokens)
    types += [3] * len(tail_tokens)
    assert len(toks) == V and len(set(toks)) == V
    return toks, types, merges


def write_tokenizer(w, V, tail_tokens=()):
    """A small gemma4-style vocabulary (tokenizer.ggml.model "gemma4": BPE merges over
    "▁"-escaped text, byte fallback), so that the CLI can run the tiny models: vocab()'s tokens."""
    toks, types, merges = vocab(V, tail_tokens)
    w.add_string("tokenizer.ggml.model", "gemma4")
    w.add_array("tokenizer.ggml.tokens", toks)
    w.add_array("tokenizer.ggml.token_type", types)
    w.add_array("tokenizer.ggml.merges", [f"{a} {b}" for a, b in merges])
    w.add_uint32("tokenizer.ggml.bos_token_id", 2)
    w.add_uint32("tokenizer.ggml.eos_token_id", 1)
    w.add_uint32("tokenizer.ggml.unknown_token_id", 3)
    w.add_uint32("tokenizer.ggml.padding_token_id", 0)
    w.add_bool("tokenizer.ggml.add_bos_token", True)


def main():
    out = sys.argv[1]
    kind = sys.argv[2] if len(sys.argv) > 2 else "gemma4"
    global BENCH
    BENCH = len(sys.argv) > 3 and sys.argv[3] == "bench"
    cfg, m = make_model(kind)
    export(cfg, m, f"{out}/{kind}_{'bench' if BENCH else 'tiny'}.gguf")
    if BENCH:
        return
    write_golden(m, cfg.vocab_size, N_PROMPT, SEED, f"{out}/{kind}_tiny.golden")


if __name__ == "__main__":
    main()
