#!/usr/bin/env python3
"""Tiny random-weight Qwen3.5 (arch qwen35) and Qwen3-Next (arch qwen3next, dense FFN) oracle.

Builds a small Qwen3.5 text model with the `transformers` reference modules (random weights,
a few layers, one full-attention layer every `full_attention_interval`, head_k_dim != head_v_dim,
more value heads than key heads, strong decay in some heads), exports it to GGUF with the names
and transforms of llama.cpp's converter (learned from its Qwen3.5 classes, re-implemented here):
  * +1 folded into every RMSNorm weight except the gated norm (linear_attn.norm -> ssm_norm);
  * A_log -> ssm_a = -exp(A_log); dt_bias -> ssm_dt.bias; conv1d [C,1,K] -> ssm_conv1d [K, C];
  * value heads reordered from grouped-by-key-head (HF) to tiled order, in every tensor that
    indexes them (v rows of in_proj_qkv and conv1d, in_proj_z, in_proj_a/b, A_log, dt_bias,
    out_proj columns), so that value head j reads key head j % Hk;
and writes the logits of a 100-token prompt (golden file read by tests/models/test_hybrid.cpp).

Qwen3-Next differs in what the converter writes: in_proj_qkvz (per key head [q, k, v, z]) is
split into attn_qkv [all q, all k, all v] and attn_gate [z], value heads stay grouped by key
head, in_proj_ba is kept as ssm_ba (per key head [b, a]). Its FFN here is dense (mlp_only_layers
= every layer): the MoE FFN of the real models is not supported by lockstep yet.

qwen35moe is qwen35 with the mixture-of-experts FFN of Qwen3.5-MoE (router softmax, top-k
renormalised, SwiGLU experts, a sigmoid-gated shared expert); the converter splits the fused
experts.gate_up_proj into ffn_gate_exps and ffn_up_exps and stores the shared expert's gate
as a vector (ffn_gate_inp_shexp).

qwen3nextmoe writes a qwen3next GGUF with that MoE FFN (the published Qwen3-Next layout),
expert weights renormalised (norm_topk_prob, `expert_weights_norm`).

Usage: tools/oracle/qwen3_hybrid_tiny.py OUT_DIR [qwen35|qwen35moe|qwen3next|qwen3nextmoe] [tiny|bench]   (needs torch, transformers, gguf)
"""
import sys

import numpy as np
import torch
import gguf
from transformers import (Qwen3_5TextConfig, Qwen3_5ForCausalLM, Qwen3NextConfig, Qwen3NextForCausalLM,
                          Qwen3_5MoeTextConfig, Qwen3_5MoeForCausalLM)

from golden import write_golden

SEED = 1234
N_PROMPT = 100
FULL_EVERY = 2  # full_attention_interval: layers 1 and 3 are full attention
SIZES = {
    "tiny": dict(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=32, linear_num_key_heads=2,
                 linear_num_value_heads=4, linear_key_head_dim=16, linear_value_head_dim=24),
    # For `lockstep bench` only (not committed, no golden): Qwen3.5-like head sizes.
    "bench": dict(vocab_size=4096, hidden_size=1024, intermediate_size=3072, num_hidden_layers=8,
                  num_attention_heads=8, num_key_value_heads=2, head_dim=128, linear_num_key_heads=8,
                  linear_num_value_heads=16, linear_key_head_dim=128, linear_value_head_dim=128),
}
SIZE = "tiny"


def make_model(arch):
    common = dict(SIZES[SIZE],
        linear_conv_kernel_dim=4,
        layer_types=["full_attention" if (i + 1) % FULL_EVERY == 0 else "linear_attention"
                     for i in range(SIZES[SIZE]["num_hidden_layers"])], rms_norm_eps=1e-6, max_position_embeddings=4096,
        tie_word_embeddings=False)
    if arch == "qwen35":
        cfg = Qwen3_5TextConfig(**common, rope_parameters={
            "rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25,
            "mrope_section": [2, 1, 1], "mrope_interleaved": True})
    elif arch == "qwen35moe":
        moe = dict(common)
        moe.pop("intermediate_size")
        cfg = Qwen3_5MoeTextConfig(**moe, num_experts=8, num_experts_per_tok=3, moe_intermediate_size=32,
                                   shared_expert_intermediate_size=48, rope_parameters={
            "rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25,
            "mrope_section": [2, 1, 1], "mrope_interleaved": True})
    elif arch == "qwen3nextmoe":
        moe = dict(common)
        moe.pop("intermediate_size")
        cfg = Qwen3NextConfig(**moe, num_experts=8, num_experts_per_tok=3, moe_intermediate_size=32,
                              shared_expert_intermediate_size=48, mlp_only_layers=[], decoder_sparse_step=1,
                              norm_topk_prob=True, rope_parameters={
            "rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25})
    else:
        cfg = Qwen3NextConfig(**common, num_experts=0, mlp_only_layers=[0, 1, 2, 3], rope_parameters={
            "rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25})
    cfg._attn_implementation = "eager"
    torch.manual_seed(SEED)
    m = {"qwen35": Qwen3_5ForCausalLM, "qwen35moe": Qwen3_5MoeForCausalLM, "qwen3next": Qwen3NextForCausalLM,
         "qwen3nextmoe": Qwen3NextForCausalLM}[arch](cfg).float().eval()
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in m.named_parameters():
            if p.dim() == 3:  # experts [E, out, in]: unit-variance outputs
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(p.shape[2]))
            elif p.dim() == 2:  # linear weights and embeddings: unit-variance outputs
                fan_in = p.shape[1]
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(fan_in) * (1.0 if "embed" not in name else np.sqrt(fan_in)))
            elif "conv1d" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
            elif name.endswith("A_log"):
                # strong decay in half the heads: A = 30 -> g = -30 * softplus(..) well below -5
                A = torch.tensor([30.0 if i % 2 else 0.3 + 0.4 * i for i in range(p.shape[0])])
                p.copy_(torch.log(A))
            elif name.endswith("dt_bias"):
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)
            elif "norm" in name:
                p.copy_(torch.randn(p.shape, generator=g) * 0.2 + (1.0 if name.endswith("linear_attn.norm.weight") else 0.0))
    return cfg, m


def reorder_v(t, dim, hk, r, hd):
    """grouped [Hk, r, hd] -> tiled [r, Hk, hd] along dim."""
    shape = list(t.shape)
    t = t.reshape(shape[:dim] + [hk, r, hd] + shape[dim + 1:])
    t = t.transpose(dim, dim + 1).contiguous()
    return t.reshape(shape)


def write_tensors(w, cfg, sd, A, f16=False):
    """The tensors of a qwen35 / qwen35moe / qwen3next GGUF, as the converter transforms them, from `sd`: HF
    parameter names (model.embed_tokens.weight, model.layers.N..., model.norm.weight, lm_head.weight) -> tensors.
    Also used by qwen35v_tiny.py (the text half of Qwen3_5ForConditionalGeneration, names renamed). f16: the
    converter's --outtype f16 types (every matrix F16, token_embd and output included, except ssm_conv1d and the MoE
    router ffn_gate_inp, which it keeps F32 (SSM_CONV1D, FFN_GATE_INP: conversion/base.py prepare_tensors); vectors
    and norms F32); qwen35v_tiny.py's bench."""
    hk, hv = cfg.linear_num_key_heads, cfg.linear_num_value_heads
    dk, dv = cfg.linear_key_head_dim, cfg.linear_value_head_dim
    r = hv // hk
    MOE = getattr(cfg, "num_experts", 0) > 0

    def put(name, t):
        a = t.detach().float().contiguous().numpy().astype(np.float32)
        if f16 and a.ndim == 2 and "conv1d" not in name and "ffn_gate_inp" not in name:
            w.add_tensor(name, a.astype(np.float16))
            return
        # bench size: matrices in Q8_0 (as users run them); conv1d, norms and vectors stay f32
        if SIZE != "tiny" and a.ndim == 2 and "conv1d" not in name and a.shape[1] % 32 == 0:
            q = gguf.quants.quantize(a, gguf.GGMLQuantizationType.Q8_0)
            w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
            return
        w.add_tensor(name, a)

    put("token_embd.weight", sd["model.embed_tokens.weight"])
    put("output_norm.weight", sd["model.norm.weight"] + 1)
    put("output.weight", sd["lm_head.weight"])
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        b = f"blk.{i}."
        put(b + "attn_norm.weight", sd[p + "input_layernorm.weight"] + 1)
        put(b + "post_attention_norm.weight", sd[p + "post_attention_layernorm.weight"] + 1)
        if MOE:
            mp = p + "mlp."
            put(b + "ffn_gate_inp.weight", sd[mp + "gate.weight"])
            gate, up = sd[mp + "experts.gate_up_proj"].chunk(2, dim=1)
            put(b + "ffn_gate_exps.weight", gate)
            put(b + "ffn_up_exps.weight", up)
            put(b + "ffn_down_exps.weight", sd[mp + "experts.down_proj"])
            put(b + "ffn_gate_inp_shexp.weight", sd[mp + "shared_expert_gate.weight"].squeeze(0))
            put(b + "ffn_gate_shexp.weight", sd[mp + "shared_expert.gate_proj.weight"])
            put(b + "ffn_up_shexp.weight", sd[mp + "shared_expert.up_proj.weight"])
            put(b + "ffn_down_shexp.weight", sd[mp + "shared_expert.down_proj.weight"])
        else:
            put(b + "ffn_gate.weight", sd[p + "mlp.gate_proj.weight"])
            put(b + "ffn_up.weight", sd[p + "mlp.up_proj.weight"])
            put(b + "ffn_down.weight", sd[p + "mlp.down_proj.weight"])
        if cfg.layer_types[i] == "full_attention":
            put(b + "attn_q.weight", sd[p + "self_attn.q_proj.weight"])  # per head: q rows then gate rows
            put(b + "attn_k.weight", sd[p + "self_attn.k_proj.weight"])
            put(b + "attn_v.weight", sd[p + "self_attn.v_proj.weight"])
            put(b + "attn_output.weight", sd[p + "self_attn.o_proj.weight"])
            put(b + "attn_q_norm.weight", sd[p + "self_attn.q_norm.weight"] + 1)
            put(b + "attn_k_norm.weight", sd[p + "self_attn.k_norm.weight"] + 1)
        elif A == "qwen3next":
            la = p + "linear_attn."
            kd = hk * dk
            qkvz = sd[la + "in_proj_qkvz.weight"].reshape(hk, 2 * dk + 2 * r * dv, -1)
            q, k, v, z = torch.split(qkvz, [dk, dk, r * dv, r * dv], dim=1)
            E = qkvz.shape[-1]
            put(b + "attn_qkv.weight", torch.cat([q.reshape(-1, E), k.reshape(-1, E), v.reshape(-1, E)], 0))
            put(b + "attn_gate.weight", z.reshape(-1, E))
            put(b + "ssm_ba.weight", sd[la + "in_proj_ba.weight"])
            put(b + "ssm_conv1d.weight", sd[la + "conv1d.weight"].squeeze(1))
            put(b + "ssm_dt.bias", sd[la + "dt_bias"])
            put(b + "ssm_a", -torch.exp(sd[la + "A_log"]))
            put(b + "ssm_norm.weight", sd[la + "norm.weight"])
            put(b + "ssm_out.weight", sd[la + "out_proj.weight"])
        else:
            la = p + "linear_attn."
            qkv = sd[la + "in_proj_qkv.weight"]
            kd = hk * dk
            qkv = torch.cat([qkv[:2 * kd], reorder_v(qkv[2 * kd:], 0, hk, r, dv)], 0)
            put(b + "attn_qkv.weight", qkv)
            put(b + "attn_gate.weight", reorder_v(sd[la + "in_proj_z.weight"], 0, hk, r, dv))
            put(b + "ssm_beta.weight", reorder_v(sd[la + "in_proj_b.weight"], 0, hk, r, 1))
            put(b + "ssm_alpha.weight", reorder_v(sd[la + "in_proj_a.weight"], 0, hk, r, 1))
            conv = sd[la + "conv1d.weight"].squeeze(1)  # [C, K]
            conv = torch.cat([conv[:2 * kd], reorder_v(conv[2 * kd:], 0, hk, r, dv)], 0)
            put(b + "ssm_conv1d.weight", conv)
            put(b + "ssm_dt.bias", reorder_v(sd[la + "dt_bias"], 0, hk, r, 1))
            put(b + "ssm_a", reorder_v(-torch.exp(sd[la + "A_log"]), 0, hk, r, 1))
            put(b + "ssm_norm.weight", sd[la + "norm.weight"])
            put(b + "ssm_out.weight", reorder_v(sd[la + "out_proj.weight"], 1, hk, r, dv))


def export(cfg, m, path, A):
    w = gguf.GGUFWriter(path, A)
    hk, hv = cfg.linear_num_key_heads, cfg.linear_num_value_heads
    dk, dv = cfg.linear_key_head_dim, cfg.linear_value_head_dim
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    MOE = getattr(cfg, "num_experts", 0) > 0
    if MOE:
        w.add_bool(f"{A}.expert_weights_norm", bool(getattr(cfg, "norm_topk_prob", True)))
        w.add_expert_count(cfg.num_experts)
        w.add_expert_used_count(cfg.num_experts_per_tok)
        w.add_expert_feed_forward_length(cfg.moe_intermediate_size)
        w.add_expert_shared_feed_forward_length(cfg.shared_expert_intermediate_size)
    else:
        w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_key_length(cfg.head_dim)
    w.add_value_length(cfg.head_dim)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(cfg.rope_parameters["rope_theta"])
    w.add_rope_dimension_count(int(cfg.head_dim * cfg.rope_parameters["partial_rotary_factor"]))
    if A in ("qwen35", "qwen35moe"):
        w.add_array(f"{A}.rope.dimension_sections", list(cfg.rope_parameters["mrope_section"]) + [0])
    w.add_uint32(f"{A}.ssm.conv_kernel", cfg.linear_conv_kernel_dim)
    w.add_uint32(f"{A}.ssm.state_size", dk)
    w.add_uint32(f"{A}.ssm.group_count", hk)
    w.add_uint32(f"{A}.ssm.time_step_rank", hv)
    w.add_uint32(f"{A}.ssm.inner_size", hv * dv)
    w.add_uint32(f"{A}.full_attention_interval", FULL_EVERY)

    write_tensors(w, cfg, dict(m.named_parameters()), A)
    if SIZE != "tiny":  # `lockstep bench` opens a tokenizer: a byte-level SPM vocabulary
        V = cfg.vocab_size
        toks = ["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)]
        types = [2, 3, 3] + [6] * 256
        toks += [f"<unused{i}>" for i in range(V - len(toks))]
        types += [5] * (V - len(types))
        w.add_string("tokenizer.ggml.model", "llama")
        w.add_string("tokenizer.ggml.pre", "default")
        w.add_array("tokenizer.ggml.tokens", toks)
        w.add_array("tokenizer.ggml.scores", [0.0] * V)
        w.add_array("tokenizer.ggml.token_type", types)
        w.add_uint32("tokenizer.ggml.bos_token_id", 1)
        w.add_uint32("tokenizer.ggml.eos_token_id", 2)
        w.add_uint32("tokenizer.ggml.unknown_token_id", 0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    out = sys.argv[1]
    arch = sys.argv[2] if len(sys.argv) > 2 else "qwen35"
    global SIZE
    SIZE = sys.argv[3] if len(sys.argv) > 3 else "tiny"
    cfg, m = make_model(arch)
    export(cfg, m, f"{out}/{arch}_{SIZE}.gguf", "qwen3next" if arch == "qwen3nextmoe" else arch)
    if SIZE != "tiny":
        return
    write_golden(m, cfg.vocab_size, N_PROMPT, SEED, f"{out}/{arch}_tiny.golden")


if __name__ == "__main__":
    main()
