#!/usr/bin/env python3
"""Tiny random-weight oracles of eighteen families: Llama 3 (arch llama), Qwen3 (qwen3), Qwen3-MoE
(qwen3moe), Gemma 2 (gemma2), gpt-oss (gpt-oss), Qwen2 / Qwen2.5 (qwen2), IBM Granite 3
(granite) and Granite MoE (granitemoe), OLMo 2 (olmo2), Ministral 3 (mistral3), Liquid's LFM2 (lfm2),
Phi-3 / Phi-4 (phi3) and Phi-3.5-mini / Phi-4-mini's LongRoPE (family phi3longrope, arch phi3),
DeepSeek-V2 (deepseek2) and DeepSeek-V3 (family deepseek3, arch deepseek2),
GLM-4.5 (glm4moe), NVIDIA Nemotron-H / Nemotron Nano v2 (nemotron_h: Mamba-2, attention and MLP
blocks), and IBM Granite 4.0-H (granitehybrid: Mamba-2 and attention mixers, each followed by a MoE
FFN with a shared expert).

Each model is built with the `transformers` reference class (float32, eager attention, random
weights scaled for unit-variance outputs), exported to GGUF with the tensor names, metadata keys
and transforms of llama.cpp's converter (convert_hf_to_gguf.py / conversion/*.py, re-implemented
here, not copied), and the logits of a 100-token random prompt are written with golden.py's
write_golden (format: tests/support/golden.h). Tensors are float32 except gpt-oss's expert
matrices, which are MXFP4 as in the published conversions; the torch model is given the
dequantized MXFP4 values before the logits are taken, so the golden logits are exact for the file.

Usage: tools/oracle/families_tiny.py OUT_DIR FAMILY [tiny|bench]
       FAMILY in llama, qwen3, qwen3moe, gemma2, gptoss, qwen2, granite, olmo2, mistral3, lfm2, phi3, granitemoe,
       deepseek2, deepseek3, glm4moe, nemotron_h, granitehybrid, phi3longrope; writes OUT_DIR/<family>_tiny.gguf
       and OUT_DIR/<family>_tiny.golden (phi3longrope also OUT_DIR/phi3longrope_short.golden). `bench`
       exists for llama (Llama-3.2-1B's exact shapes) and qwen2 (Qwen2.5-1.5B's): random F16 weights
       written straight from numpy (no HF model, no golden), for speed runs after llama-quantize
       (OUT_DIR/llama1b_f16.gguf, OUT_DIR/qwen2_1.5b_f16.gguf).

llama bench file: the llama keys below with Llama-3.2-1B's values (context 131072, hidden 2048,
FFN 8192, 16 layers, 32 heads, 8 KV heads, head 64, rope.freq_base 500000, rms eps 1e-5,
vocab_size 128256, rope.dimension_count 64, file_type 1 = MOSTLY_F16), tied embeddings (no
output.weight), rope_freqs.weight [32] F32 for llama3 scaling factor 32, low 1, high 4, original
8192; matrices F16 N(0, 1/fan_in) (token_embd N(0, 0.02^2)), norms F32 around 1; the llama
byte-level BPE tokenizer padded with [PADn] to 128256 tokens. llama-quantize makes Q4_K_M of it
(762.81 MiB, 1.24 B params) and llama-bench runs it.

qwen2 bench file (issue 35's speed run): Qwen2.5-1.5B's shapes (context 32768, hidden 1536, FFN
8960, 28 layers, 12 heads, 2 KV heads, head 128, rope.freq_base 1e6, rms eps 1e-6, tied
embeddings, q/k/v biases N(0, 0.1^2)), random F16 matrices as above, the qwen2 byte-level BPE
tokenizer padded to 151936 tokens (OUT_DIR/qwen2_1.5b_f16.gguf; llama-quantize makes Q4_K_M).

Shapes below are GGUF ne order (ne[0] first = the contiguous dimension; a torch/numpy [rows, cols]
matrix is ne [cols, rows]). Every file carries: general.architecture, general.type "model",
general.name "lockstep tiny <family>", general.file_type (0 = ALL_F32; gpt-oss 38 =
MOSTLY_MXFP4_MOE), general.quantization_version 2, and a tokenizer (see "Tokenizers" at the end).
"Random norm weights" are drawn around the value the runtime multiplies by (1 + 0.2 N(0,1)), i.e.
around 0 in HF for Gemma 2 (whose RMSNorm multiplies by 1 + w) and around 1 for the others.

llama (LlamaForCausalLM; vocab 384, hidden 64, 4 layers, 4 heads, 2 KV heads, head_dim 16, FFN 128,
  untied output)
  keys: llama.block_count 4, llama.context_length 2048, llama.embedding_length 64,
    llama.feed_forward_length 128, llama.attention.head_count 4, llama.attention.head_count_kv 2,
    llama.rope.freq_base 500000.0, llama.attention.layer_norm_rms_epsilon 1e-5,
    llama.attention.key_length 16, llama.attention.value_length 16, llama.vocab_size 384,
    llama.rope.dimension_count 16.
    No rope.scaling.* key: the converter writes llama3 scaling only as the rope_freqs tensor.
  tensors: token_embd.weight [64,384]; output_norm.weight [64]; output.weight [64,384];
    rope_freqs.weight [8] (F32); per layer blk.N.: attn_norm.weight [64], attn_q.weight [64,64],
    attn_k.weight [64,32], attn_v.weight [64,32], attn_output.weight [64,64], ffn_norm.weight [64],
    ffn_gate.weight [64,128], ffn_up.weight [64,128], ffn_down.weight [128,64].
  transforms: attn_q / attn_k rows permuted per head from HF's rotate-half layout to interleaved
    pairs (the converter's permute: rows of a head reshaped [2, d/2] and transposed, so GGUF row
    2i is HF row i and row 2i+1 is HF row i + d/2); RoPE is then the interleaved ("NORM") kind on
    adjacent pairs. attn_k is permuted with the KV head count.
  rope: HF rope_parameters {rope_type llama3, rope_theta 500000, factor 8, low_freq_factor 1,
    high_freq_factor 4, original_max_position_embeddings 256}. rope_freqs.weight[i] (i < d/2) is
    the divisor of frequency theta^(-2i/d): with wavelen = 2 pi theta^(2i/d), 1 if wavelen < 256/4,
    8 if wavelen > 256/1, else 1 / ((1 - s)/8 + s) with s = (256/wavelen - 1)/(4 - 1). Here
    [1, 1, 3.5685, 8, 8, 8, 8, 8]: the angle of pair i at position p is p * theta^(-2i/d) / f[i].

qwen3 (Qwen3ForCausalLM; vocab 384, hidden 64, 4 layers, 4 heads, 2 KV heads, head_dim 32 (q dim 128
  != hidden), FFN 128, tied embeddings)
  keys: qwen3.block_count, context_length 4096, embedding_length 64, feed_forward_length 128,
    attention.head_count 4, attention.head_count_kv 2, rope.freq_base 1000000.0,
    attention.layer_norm_rms_epsilon 1e-6, attention.key_length 32, attention.value_length 32.
    No rope.dimension_count (the runtime default: the head size).
  tensors: token_embd.weight [64,384]; output_norm.weight [64]; NO output.weight (tied: the
    output projection is token_embd); per layer: attn_norm [64], attn_q [64,128], attn_k [64,64],
    attn_v [64,64], attn_output [128,64], attn_q_norm [32], attn_k_norm [32], ffn_norm [64],
    ffn_gate [64,128], ffn_up [64,128], ffn_down [128,64] (all .weight).
  transforms: none (NeoX RoPE: rotate-half pairs (i, i + d/2), as HF). Q and K are RMS-normed per
    head (attn_q_norm / attn_k_norm, eps as the layers) before RoPE.

qwen2 (Qwen2ForCausalLM; vocab 384, hidden 64, 4 layers, 4 heads, 2 KV heads, head_dim 16 (hidden /
  heads: Qwen2's config has no head_dim), FFN 128, untied output, no sliding window)
  keys: qwen2.block_count 4, context_length 4096, embedding_length 64, feed_forward_length 128,
    attention.head_count 4, attention.head_count_kv 2, rope.freq_base 1000000.0,
    attention.layer_norm_rms_epsilon 1e-6; no key_length / value_length (the converter writes
    them from a config's head_dim only).
  tensors: token_embd, output_norm, output [64,384]; per layer: attn_norm, attn_q [64,64] and
    attn_q.bias [64], attn_k [64,32] and attn_k.bias [32], attn_v [64,32] and attn_v.bias [32],
    attn_output [64,64] (no bias), ffn_norm, ffn_gate [64,128], ffn_up [64,128], ffn_down [128,64].
  transforms: none (NeoX RoPE, as qwen3). Tokenizer: qwen3's BPE and special tokens, pre "qwen2".

granite (GraniteForCausalLM; vocab 384, hidden 64, 4 layers, 4 heads, 2 KV heads, head_dim 16, FFN
  128, tied output, attention_bias and mlp_bias on: every projection has a bias)
  keys: the llama ones with the granite prefix (the converter is LlamaModel's: vocab_size and
    rope.dimension_count 16; no key_length, Granite's head_dim being dropped), rope.freq_base
    10000, rms eps 1e-6, plus granite.attention.scale 0.25, granite.embedding_scale 12,
    granite.residual_scale 0.22, granite.logit_scale 8 (HF's attention_multiplier,
    embedding_multiplier, residual_multiplier, logits_scaling).
  tensors: as llama without output.weight, plus attn_{q,k,v,output}.bias and ffn_{gate,up,down}.bias.
  transforms: llama's q/k row permute, applied to attn_q.bias / attn_k.bias too. The model scales
    the embeddings by 12, each branch's output by 0.22 before the residual add, q.k by 0.25, and
    divides the logits by 8. Tokenizer: the BPE one with Granite's special tokens, pre "refact".

mistral3 (Ministral3ForCausalLM; vocab 384, hidden 64, 4 layers, 4 heads, 2 KV heads, head_dim 16,
  FFN 128, untied output, YaRN rope: factor 16, original context 32, beta 32 / 1, mscale and
  mscale_all_dim 1, llama_4_scaling_beta 0.1)
  keys: llama's with the mistral3 prefix (key_length/value_length 16, vocab_size,
    rope.dimension_count 16), rope.freq_base 1e6, rms eps 1e-5, rope.scaling.type yarn,
    rope.scaling.factor 16, rope.scaling.original_context_length 32, yarn_beta_fast 32,
    yarn_beta_slow 1, rope.scaling.yarn_log_multiplier 1 (mscale_all_dim), and
    attention.temperature_scale 0.1 (llama_4_scaling_beta).
  tensors and transforms: llama's (q/k rows permuted, interleaved rope), no rope_freqs. The
    queries after rope are multiplied by 1 + 0.1 ln(1 + floor(pos / 32)). Tokenizer: the BPE one
    with Mistral's special tokens, pre "tekken".

granitemoe (GraniteMoeForCausalLM; granite's shapes and multipliers without biases, 8 experts of FFN
  24, 3 per token, untied output)
  keys: granite's with the granitemoe prefix, plus expert_count 8 and expert_used_count 3;
    feed_forward_length 24 (the experts' FFN: HF's intermediate_size).
  tensors: granite's attention (q/k permuted), ffn_gate_inp [64,8] (the router), and the
    experts as the converter splits block_sparse_moe's gate_up: ffn_gate_exps / ffn_up_exps
    [64,24,8] (gate rows, then up rows), ffn_down_exps [24,64,8]. The router: the 3 largest
    logits' softmax, which is llama.cpp's softmax over all, top 3, renormalised.

phi3 (Phi3ForCausalLM; vocab 384, hidden 64, 4 layers, 4 heads, 2 KV heads, head_dim 16, FFN 128,
  partial_rotary_factor 0.5 (rope on the first 8 of 16 dims, as Phi-4-mini), untied output, no
  sliding window)
  keys: phi3.context_length 4096, rope.scaling.original_context_length 4096, embedding_length,
    feed_forward_length 128, block_count, head_count, head_count_kv, rms eps 1e-5,
    rope.dimension_count 8, rope.freq_base 10000, sliding_window 0 (the converter writes 0 for
    none).
  tensors: token_embd, output_norm, output; per layer attn_norm, attn_qkv [64,128] (q rows, k
    rows, v rows: HF's qkv_proj as it is), attn_output, ffn_norm, ffn_up [64,256] (HF's
    gate_up_proj: gate rows, then up rows), ffn_down. transforms: none (NeoX rope). Tokenizer:
    the SentencePiece one. No LongRoPE factors (rope_factors_long / _short: see phi3longrope).

phi3longrope (Phi3ForCausalLM with Phi-3.5-mini / Phi-4-mini's LongRoPE: phi3's shapes, partial_rotary_factor
  0.5 (8 rope dims, 4 pairs), no sliding window, untied output; max_position_embeddings 256 and
  original_max_position_embeddings 64 (scale 4; 131072 / 4096 in the real ones); rope_parameters {rope_type
  longrope, rope_theta 10000, partial_rotary_factor 0.5, original_max_position_embeddings 64, short_factor
  [1.4497, 1.1556, 1.4587, 1.0682], long_factor [1.3744, 5.0186, 5.8887, 6.1251]} (phi3_longrope_factors: short
  uniform in [1, 1.5), long uniform in [1, 8) sorted ascending as the published ones grow with the pair index,
  4 decimals; no factor / attention_factor fields, as the published configs); its own weights (seed by its index)
  keys (the converter's order): general.architecture, then phi3.rope.scaling.attn_factor 1.1547005 (float32 of
    sqrt(1 + ln(256/64) / ln 64) = sqrt(4/3); generate_extra_tensors writes it, and the converter runs that before
    the metadata), general.type, general.name, then phi3's keys with phi3.context_length 256 and
    rope.scaling.original_context_length 64 (rope.dimension_count 8, rope.freq_base 10000, sliding_window 0). No
    rope.scaling.type / rope.scaling.factor (the converter writes neither for Phi-3).
  tensors: rope_factors_long.weight [4] and rope_factors_short.weight [4] (F32; first, as the converter yields
    them), then phi3's.
  rope: NeoX on the first 8 dims of each head (pairs (i, i + 4)), angle p * 10000^(-2i/8) / f_i, f = the long
    factors or the short ones, the same set for every position; cos and sin both times attn_factor 1.1547005 with
    either set (HF's attention_scaling comes from the scale once, not from the set).
  which set: HF picks per forward call, long iff max(position) + 1 > 64 (longrope_frequency_update); llama.cpp per
    context, long iff n_ctx_per_seq > rope.scaling.original_context_length. Two goldens, each one whole-prompt call:
    phi3longrope_tiny.golden: the usual 100-token prompt: the LONG factors at all 100 positions; a runtime checks
      it with a context > 64.
    phi3longrope_short.golden: the first 48 tokens of the same prompt (write_golden's draw of 48 is that prefix):
      the SHORT factors; a runtime checks it with a context <= 64.
    (Printed: HF's inv_freq after each call is that set's; each golden equals HF with that set pinned exactly and
    misses the other set's by 2.38 (100 tokens) / 2.02 (48 tokens); cos at position 0 is 1.1547005 in every dim;
    attn_factor 1 instead moves the 100-token logits by 1.13. write_golden's token-at-a-time figure for the
    100-token file, 2.29, is HF's own switch: short while its cache holds <= 64 tokens; with the long set pinned,
    one token at a time matches the whole prompt within 3.3e-6.)

lfm2 (Lfm2ForCausalLM; vocab 384, hidden 64, 4 layers [conv, attention, conv, attention], 4 heads,
  2 KV heads, head_dim 16, FFN 128 (block_auto_adjust_ff_dim off), conv_L_cache 3, tied output)
  keys: lfm2.block_count, context_length, embedding_length, attention.head_count 4,
    attention.head_count_kv [0, 2, 0, 2] (0: a convolution layer), rope.freq_base 1e6,
    vocab_size, shortconv.l_cache 3, attention.layer_norm_rms_epsilon 1e-5,
    feed_forward_length 128.
  tensors: token_embd; token_embd_norm (HF's final embedding_norm); per layer attn_norm
    (operator_norm), ffn_norm, ffn_gate / ffn_up / ffn_down (w1 / w3 / w2); convolution layers
    shortconv.in_proj [64,192] (B, C, x rows), shortconv.conv [3,64] (HF [64,1,3] squeezed),
    shortconv.out_proj [64,64]; attention layers attn_q/k/v/output and attn_q_norm /
    attn_k_norm [16] (per head). transforms: none (NeoX rope). Tokenizer: the BPE one with
    LFM2's special tokens, pre "lfm2".

olmo2 (Olmo2ForCausalLM; vocab 384, hidden 64, 4 layers, 4 heads, 2 KV heads, head_dim 16, FFN 128,
  untied output, no biases)
  keys: the common ones with the olmo2 prefix, rope.freq_base 500000, rms eps 1e-6; no
    key_length (no head_dim in the config).
  tensors: token_embd, output_norm, output; per layer: attn_q [64,64], attn_k [64,32], attn_v
    [64,32], attn_output [64,64], attn_q_norm [64] and attn_k_norm [32] (RMS norms over the
    whole q and k projections, before the heads are split), post_attention_norm [64],
    ffn_gate, ffn_up, ffn_down, post_ffw_norm [64]; no attn_norm / ffn_norm: the residual
    stream goes into attention and FFN as it is, and each one's output is normed before it is
    added back. transforms: none (NeoX RoPE). Tokenizer: the BPE one, pre "dbrx" (OLMo 2's
    cl100k vocabulary).

qwen3moe (Qwen3MoeForCausalLM; vocab 384, hidden 64, 4 layers, 4 heads, 2 KV heads, head_dim 16,
  8 experts, top-3, expert FFN 24, norm_topk_prob True, untied output)
  keys: as qwen3 with the qwen3moe prefix (key_length/value_length 16, feed_forward_length 128 =
    HF's unused dense intermediate_size, written as the converter does) plus
    qwen3moe.expert_count 8, qwen3moe.expert_used_count 3, qwen3moe.expert_feed_forward_length 24.
    No key for norm_topk_prob: llama.cpp's qwen3moe always renormalises the top-k weights
    (softmax over all experts, take the top 3, divide by their sum).
  tensors: token_embd, output_norm, output [64,384]; per layer: attn_norm, attn_q [64,64],
    attn_k [64,32], attn_v [64,32], attn_output [64,64], attn_q_norm [16], attn_k_norm [16],
    ffn_norm [64], ffn_gate_inp.weight [64,8], ffn_gate_exps.weight [64,24,8],
    ffn_up_exps.weight [64,24,8], ffn_down_exps.weight [24,64,8].
  transforms: HF's fused experts.gate_up_proj [E, 2F, H] split on its middle axis: rows 0..F-1
    -> ffn_gate_exps, rows F..2F-1 -> ffn_up_exps; experts.down_proj [E, H, F] as is.

gemma2 (Gemma2ForCausalLM; vocab 384, hidden 64, 4 layers, 4 heads, 2 KV heads, head_dim 32
  (!= hidden/heads = 16), FFN 128, tied embeddings, sliding window 4, attn_logit_softcapping 5.0,
  final_logit_softcapping 5.0 -- both bite, see the printed statistics)
  keys: gemma2.context_length 4096, embedding_length 64, block_count 4, feed_forward_length 128,
    attention.head_count 4, attention.head_count_kv 2, attention.layer_norm_rms_epsilon 1e-6,
    attention.key_length 32, attention.value_length 32, gemma2.attn_logit_softcapping 5.0,
    gemma2.final_logit_softcapping 5.0, gemma2.attention.sliding_window 4.
    Not written (the converter writes none of them): rope.freq_base (runtime default 10000, HF's
    rope_theta here), rope.dimension_count (= head size), the sliding-window pattern, and
    query_pre_attn_scalar.
  tensors: token_embd [64,384] (also the output projection; no output.weight); output_norm [64];
    per layer: attn_norm [64], attn_q [64,128], attn_k [64,64], attn_v [64,64],
    attn_output [128,64], post_attention_norm [64], ffn_norm [64] (HF pre_feedforward_layernorm),
    ffn_gate [64,128], ffn_up [64,128], ffn_down [128,64], post_ffw_norm [64] (all .weight).
  transforms: +1 added to every norm weight (HF's Gemma2RMSNorm multiplies by 1 + w; the GGUF
    weight is the factor itself). The runtime scales the embedding by sqrt(64) = 8 (in float32).
  sliding layers: 0 and 2 (window 4: a query at p sees keys p-3..p); layers 1 and 3 are global.
    HF's layer_types (sliding where (i + 1) % 2 != 0) and llama.cpp's default pattern for gemma2
    (period 2, il % 2 < 1) agree.
  attention: scores = (q * 32^-0.5) . k, then softcap: 5 * tanh(score / 5), mask, softmax. HF's
    query_pre_attn_scalar is set to head_dim (32): llama.cpp's gemma2 ignores that field (it scales
    by 1/sqrt(head_dim), or 1/sqrt(n_embd/n_head) for the 46-layer 27B only) and the converter
    writes no key for it, so a different value could not be carried by a converter-made file.
  rope: NeoX (rotate-half), theta 10000. FFN: gelu (tanh approximation) gate times up.
  final: logits = 5 * tanh(logits / 5).

gptoss (GptOssForCausalLM; vocab 384, hidden 64, 4 layers, 4 heads, 2 KV heads, head_dim 32,
  8 experts, top-2, expert FFN 32, untied output)
  keys: gpt-oss.block_count 4, context_length 16384, embedding_length 64,
    feed_forward_length 32, attention.head_count 4, attention.head_count_kv 2,
    rope.scaling.type "yarn", rope.scaling.factor 4.0, rope.scaling.original_context_length 4096,
    rope.scaling.yarn_beta_fast 32.0, rope.scaling.yarn_beta_slow 1.0, rope.freq_base 150000.0,
    attention.layer_norm_rms_epsilon 1e-5, expert_count 8, expert_used_count 2,
    attention.key_length 32, attention.value_length 32, attention.sliding_window 4,
    expert_feed_forward_length 32. No rope.scaling.yarn_attn_factor / yarn_ext_factor (the
    config has neither, as the published one) and no sliding-window pattern key.
  tensors: token_embd [64,384], output_norm [64], output [64,384]; per layer: attn_norm [64],
    post_attention_norm [64] (HF post_attention_layernorm: the norm before the MoE),
    attn_q.weight [64,128] + attn_q.bias [128], attn_k.weight [64,64] + .bias [64],
    attn_v.weight [64,64] + .bias [64], attn_output.weight [128,64] + .bias [64],
    attn_sinks.weight [4], ffn_gate_inp.weight [64,8] + ffn_gate_inp.bias [8],
    ffn_gate_exps.weight [64,32,8] MXFP4, ffn_up_exps.weight [64,32,8] MXFP4,
    ffn_down_exps.weight [32,64,8] MXFP4, ffn_gate_exps.bias [32,8], ffn_up_exps.bias [32,8],
    ffn_down_exps.bias [64,8] (biases F32).
  transforms: HF experts.gate_up_proj is [E, H, 2F] (used as x @ W) with gate in the EVEN columns
    and up in the ODD ones: transposed to [E, 2F, H], gate = rows 0,2,4,.., up = rows 1,3,5,..;
    gate_up_proj_bias [E, 2F] split the same way (even -> ffn_gate_exps.bias, odd -> up);
    down_proj [E, F, H] transposed to [E, H, F]. Expert matrices quantised to MXFP4 along ne[0]
    (blocks of 32 along H for gate/up, along F for down): per block one E8M0 byte and 16 bytes of
    e2m1 nibbles (ggml's block_mxfp4), as the converter's repack of the published MXFP4 weights.
  sliding layers: 0 and 2 (window 4); 1 and 3 global. HF's default layer_types and llama.cpp's
    gpt-oss default pattern (period 2) agree.
  attention: scale 1/sqrt(32); per head a sink logit s_h joins the softmax denominator
    (p_j = exp(z_j) / (exp(s_h) + sum_k exp(z_k)), no value for the sink).
  router: logits = W x + b; top-2 of the logits; weights = softmax over the 2 selected logits.
  expert: g = W_gate x + b_gate, u = W_up x + b_up, g = min(g, 7), u = clamp(u, -7, 7),
    out = W_down ((u + 1) * g * sigmoid(1.702 g)) + b_down.
  rope: NeoX (rotate-half), YaRN with theta 150000, factor 4, original context 4096, beta_fast 32,
    beta_slow 1, over head_dim 32: correction dims low = 4.04, high = 8.70, not rounded (the
    published config's truncate=False, which transformers and OpenAI's implementation honour and
    llama.cpp does not: it rounds to 4 and 9; no GGUF key says which, so lockstep's gpt-oss
    loader applies the model's own rule), ramp r_i = clamp((i - 4.04)/(8.70 - 4.04), 0, 1),
    inv_freq_i = theta^(-2i/d) * ((1 - r_i) + r_i / 4), cos and sin both times
    0.1 ln(4) + 1 = 1.138629.

deepseek2 (DeepseekV2ForCausalLM, DeepSeek-V2-Lite's layout; vocab 384, hidden 64, 4 layers, 4 heads,
  multi-head latent attention (MLA) with q_lora_rank None (a plain q projection), kv_lora_rank 32,
  qk_nope_head_dim 16, qk_rope_head_dim 32, v_head_dim 16; layer 0 a dense FFN of 128
  (first_k_dense_replace 1), layers 1-3 MoE: 8 routed experts of FFN 32, top-2, 2 shared experts (one
  FFN of 64), softmax router, topk_method greedy, norm_topk_prob False, routed_scaling_factor 1; YaRN:
  factor 40, original context 64 (4096 in V2-Lite: 64 puts the ramp inside the 32 rotary dims and the
  100-token prompt past it), beta_fast 32, beta_slow 1, mscale = mscale_all_dim = 0.707, theta 10000,
  max_position_embeddings 40 * 64; rms eps 1e-6; untied output)
  keys (the converter's order; general.* and tokenizer.* as every file): deepseek2.block_count 4,
    context_length 2560, embedding_length 64, feed_forward_length 128 (the dense layer's),
    attention.head_count 4, attention.head_count_kv 1 (the converter's override: MLA run as MQA over
    the latent), rope.scaling.type "yarn", rope.scaling.factor 40, rope.scaling.original_context_length 64,
    rope.scaling.yarn_beta_fast 32, rope.scaling.yarn_beta_slow 1, rope.freq_base 10000,
    attention.layer_norm_rms_epsilon 1e-6, expert_count 8, expert_used_count 2, expert_group_count 1,
    expert_group_used_count 1 (V2-Lite's n_group / topk_group; 1 = no group limit),
    expert_gating_func 1 (SOFTMAX, from the published config's scoring_func), attention.key_length 64
    (kv_lora_rank + rope dims: what is cached per token as the key), attention.value_length 32
    (kv_lora_rank: the cached value), general.file_type 0, leading_dense_block_count 1, vocab_size 384,
    attention.kv_lora_rank 32, attention.key_length_mla 48 (nope + rope: one head's q.k size),
    attention.value_length_mla 16 (v_head_dim), expert_feed_forward_length 32, expert_shared_count 2,
    expert_weights_scale 1.0, rope.dimension_count 32, rope.scaling.yarn_log_multiplier 0.0707
    (0.1 * mscale_all_dim: the converter's legacy factor, which llama.cpp's deepseek2 loader divides
    back out). Not written: attention.q_lora_rank (q_lora_rank None), expert_weights_norm (written only
    when true), rope.scaling.yarn_attn_factor / yarn_ext_factor, any nextn key.
    (llama.cpp takes a deepseek2 file for "lite", needing no q_lora_rank key, by its layer count (27,
    26, or 48 with a 128256 vocabulary) and so refuses this 4-layer one; what marks it is attn_q
    present and attn_q_a absent, which is also what llama.cpp's graph tests.)
  tensors: token_embd [64,384], output_norm [64], output [64,384]; per layer: attn_norm [64],
    attn_q [64,192] (per head 16 nope rows, then 32 rope rows), attn_kv_a_mqa [64,64] (rows 0..31 the
    latent c, rows 32..39 the key's rope part k_pe, one for all heads), attn_kv_a_norm [32],
    attn_k_b [16,32,4], attn_v_b [32,16,4], attn_output [64,64], ffn_norm [64]; layer 0: ffn_gate
    [64,128], ffn_up [64,128], ffn_down [128,64]; layers 1-3: ffn_gate_inp [64,8], ffn_gate_exps
    [64,32,8], ffn_up_exps [64,32,8], ffn_down_exps [32,64,8], ffn_gate_shexp [64,64], ffn_up_shexp
    [64,64], ffn_down_shexp [64,64] (the 2 shared experts as one FFN of 2 * 32).
  transforms: kv_b_proj [4 * (16 + 16), 32], viewed per head as 16 k_nope rows then 16 v rows, is split:
    attn_k_b[h] = (k_nope rows)^T, a [32, 16] matrix (ne (16, 32, 4)); attn_v_b[h] = the v rows, a
    [16, 32] matrix (ne (32, 16, 4)); no kv_b tensor is written. No q/k permute: DeepSeek checkpoints
    keep rope pairs interleaved (2i, 2i+1) (HF V2 rotates them as complex numbers), which is llama.cpp's
    NORM rope. Experts: HF's gate_up_proj split as qwen3moe's (the converter stacks the checkpoint's
    per-expert gate_proj / up_proj / down_proj: the same tensors).
  attention (MLA as llama.cpp runs it, absorbed): c = RMSNorm(kv_a[0:32]) (attn_kv_a_norm, eps 1e-6),
    k_pe = rope(kv_a[32:64]); per head q = [q_nope (16) | q_pe (32)], q_pe roped;
    score(t, s) = ((attn_k_b[h] q_nope_t) . c_s + q_pe_t . k_pe_s) * kq_scale, causal softmax;
    o_h = attn_v_b[h] (sum_s p_s c_s) (16 values); the 4 heads concatenated -> attn_output. (HF: k_nope =
    k_nope rows . c, v = v rows . c, q.k over the 48 dims, the same numbers.)
    kq_scale = mscale^2 / sqrt(48) with mscale = 1 + 0.1 * 0.707 * ln 40 = 1.260804: 0.229443 (HF:
    qk_head_dim^-0.5 * yarn_get_mscale(40, mscale_all_dim)^2; llama.cpp: mscale = attn_factor_org *
    (1 + 0.1 * (yarn_log_multiplier / 0.1) * ln(1 / freq_scale)) with attn_factor_org 1 here).
  rope: NORM (interleaved pairs (2i, 2i+1)) on the 32 rope dims of q and of k_pe, theta 10000, YaRN
    over those 32 dims with original context 64: correction dims floor / ceil of 32 ln(64 / (2 pi beta))
    / (2 ln 10000) for beta 32 and 1 (-1.99 -> 0 and 4.03 -> 5; transformers (truncate, its default)
    and ggml both round), extrapolation weight r_i = 1 - clamp((i - 0) / (5 - 0), 0, 1) for pair i,
    inv_freq_i = theta^(-2i/32) * (r_i + (1 - r_i) / 40) = plain * [1, 0.805, 0.61, 0.415, 0.22,
    0.025, ...]. (32 rope dims, not V2's 64, keep the tiny key row of 64 values whole blocks for a
    q8_0 cache and the latent of 32 a whole block for V inside it.) cos and sin are NOT scaled: HF's attention_factor is yarn_get_mscale(40, mscale) /
    yarn_get_mscale(40, mscale_all_dim) = 1; llama.cpp sets yarn_attn_factor the same way (mscale =
    mscale_all_dim for deepseek2 when it is not 1), divides it by 1 + 0.1 ln 40 (0.730520 passed to
    rope) and ggml's YaRN multiplies that back, net 1.
  router (layers 1-3): p = softmax(ffn_gate_inp x) over the 8 experts; the 2 largest p; weights = those
    p as they are (no renormalisation; scale 1); out = sum_e w_e ffn_down_e(silu(ffn_gate_e x) *
    ffn_up_e x) + the shared FFN (the _shexp tensors, SiLU-gated, unweighted).

deepseek3 (DeepseekV3ForCausalLM, written as architecture deepseek2 as the converter does; deepseek2's
  sizes, YaRN, dense layer 0 and 8 experts of FFN 32, top-2, with q_lora_rank 24, 1 shared expert
  (FFN 32), a sigmoid router with e_score_correction_bias (uniform(0, 0.1): positive, as the real
  ones), n_group 4, topk_group 2 (topk_method noaux_tc), norm_topk_prob True,
  routed_scaling_factor 2.5; transformers builds no MTP layer and the converter writes none)
  keys: deepseek2's, with expert_group_count 4, expert_group_used_count 2, expert_gating_func 2
    (SIGMOID), attention.q_lora_rank 24 (between vocab_size and kv_lora_rank), expert_shared_count 1,
    expert_weights_scale 2.5, expert_weights_norm true (after expert_weights_scale).
  tensors: deepseek2's, but attn_q_a [64,24], attn_q_a_norm [24], attn_q_b [24,192] in place of attn_q
    (q = attn_q_b RMSNorm(attn_q_a x), eps 1e-6; per head 16 nope then 8 rope rows), MoE layers also
    exp_probs_b.bias [8] (HF mlp.gate.e_score_correction_bias; the converter renames it
    e_score_correction.bias), shared expert ffn_gate_shexp / ffn_up_shexp [64,32], ffn_down_shexp [32,64].
  attention and rope: deepseek2's (kq_scale 0.229443, the same YaRN).
  router (layers 1-3): s = sigmoid(ffn_gate_inp x); selection scores t = s + exp_probs_b; experts in 4
    groups of 2 consecutive ({0,1}, {2,3}, {4,5}, {6,7}); a group's score is the SUM of its 2 largest t
    (here both of its experts; not the max, which V2's group_limited_greedy uses); the 2 best groups
    are kept and the other experts' t set to -inf; the top 2 t among the rest; weights = their s
    (unbiased), divided by their sum, times 2.5 (routed_scaling_factor, on the routed weights only);
    out = sum_e w_e expert_e(x) + the shared expert, unscaled. The group limit changes the choice for
    99 of the 300 (token, MoE layer) pairs of the golden prompt (printed). (transformers 5 masks the
    dropped groups with -inf, older versions with 0.0: the same here, every t being > 0.)

glm4moe (Glm4MoeForCausalLM, GLM-4.5's layout; vocab 384, hidden 64, 4 layers, 4 heads, 2 KV heads,
  head_dim 32 (q dim 128 != hidden), partial_rotary_factor 0.5, attention_bias, use_qk_norm; layer 0 a
  dense FFN of 128, layers 1-3 MoE: 8 experts of FFN 32, top-2, 1 shared expert (FFN 32), sigmoid
  router with e_score_correction_bias (uniform(0, 0.1)), n_group 1 / topk_group 1,
  norm_topk_prob True, routed_scaling_factor 2.5; theta 1e6, no rope scaling; rms eps 1e-5;
  num_nextn_predict_layers 1; untied output)
  keys: glm4moe.block_count 5 (4 layers + the NextN layer, as the converter counts), context_length
    4096, embedding_length 64, feed_forward_length 128, attention.head_count 4,
    attention.head_count_kv 2, rope.freq_base 1000000.0, attention.layer_norm_rms_epsilon 1e-5,
    expert_count 8, expert_used_count 2, expert_group_count 1, expert_group_used_count 1,
    attention.key_length 32, attention.value_length 32, general.file_type 0, rope.dimension_count 16
    (head_dim * partial_rotary_factor), expert_feed_forward_length 32, expert_shared_count 1,
    leading_dense_block_count 1, expert_gating_func 2 (SIGMOID: the converter always writes it),
    expert_weights_scale 2.5, expert_weights_norm true, nextn_predict_layers 1. No rope.scaling keys.
  tensors: token_embd [64,384], output_norm [64], output [64,384]; per layer (0-3, and 4, the NextN
    layer): attn_norm [64], attn_q [64,128] + attn_q.bias [128], attn_k [64,64] + .bias [64],
    attn_v [64,64] + .bias [64], attn_output [128,64] (no bias), attn_q_norm [32], attn_k_norm [32],
    post_attention_norm [64] (HF post_attention_layernorm, the norm before the FFN: glm4moe's tensor
    list has no ffn_norm); layer 0: ffn_gate [64,128], ffn_up [64,128], ffn_down [128,64]; layers 1-4:
    ffn_gate_inp [64,8], exp_probs_b.bias [8], ffn_gate_exps [64,32,8], ffn_up_exps [64,32,8],
    ffn_down_exps [32,64,8], ffn_gate_shexp [64,32], ffn_up_shexp [64,32], ffn_down_shexp [32,64];
    layer 4 also nextn.eh_proj [128,64], nextn.embed_tokens [64,384], nextn.enorm [64], nextn.hnorm
    [64], nextn.shared_head_head [64,384], nextn.shared_head_norm [64]. Layer 4's weights are random
    (transformers drops a checkpoint's NextN layer on load), written under the checkpoint's names as
    the converter would; no logit depends on them (llama.cpp loads them as skipped and runs blocks
    0..block_count - nextn_predict_layers - 1).
  transforms: none (no q/k permute: llama.cpp's glm4moe rope is NeoX, as HF).
  attention: q, k, v with their biases; q and k RMS-normed per head over its 32 dims (attn_q_norm /
    attn_k_norm, eps 1e-5), then rope: NeoX (rotate-half) on the first 16 dims of each head, pairs
    (i, i + 8) for i < 8, angle p * 1e6^(-2i/16); dims 16..31 unrotated; scale 1/sqrt(32); query head
    h reads KV head h / 2.
  router (layers 1-3): deepseek3's without the group limit: s = sigmoid(ffn_gate_inp x), the top 2 of
    s + exp_probs_b, weights = their s divided by their sum, times 2.5; plus the shared expert,
    unscaled. The bias changes the choice for 50 of the 300 (token, MoE layer) pairs (printed).

nemotron_h (NemotronHForCausalLM, Nemotron Nano v2's layout; vocab 384, hidden 64, 6 blocks with
  hybrid_override_pattern "M*M-M-" (M a Mamba-2 mixer, * attention, - an MLP; every block is ONE mixer:
  x = x + mixer(RMSNorm(x) * attn_norm)); Mamba-2: mamba_num_heads 8, mamba_head_dim 16 (d_inner 128),
  ssm_state_size 16, n_groups 2, conv_kernel 4 with bias, chunk_size 16 (HF's chunked scan cuts the
  100-token prompt into 7 chunks), time_step_min/max/limit the defaults; attention: 4 heads, 2 KV heads,
  head_dim 16, no positional encoding at all (HF's NemotronHAttention applies no rope); MLP 128, relu^2,
  not gated, no biases; rms eps 1e-5 (layer_norm_epsilon); untied output)
  keys (the converter's order, from a config.json laid out as the published ones: the pattern string,
    no MoE fields, rms_norm_eps (Nano v2; norm_eps in Nemotron 3) next to layer_norm_epsilon, no
    rope_theta): nemotron_h.block_count 6, context_length 1048576 (2^20, the converter's value for a
    hybrid without rope), embedding_length 64, feed_forward_length [0, 0, 0, 128, 0, 128] (int32 array),
    attention.head_count 4, attention.head_count_kv [0, 2, 0, 0, 0, 0] (int32 array),
    attention.layer_norm_rms_epsilon 1e-5, attention.layer_norm_epsilon 1e-5, general.file_type 0,
    vocab_size 384, rope.dimension_count 16 (hidden / heads; unused), ssm.conv_kernel 4,
    ssm.state_size 16, ssm.group_count 2, ssm.inner_size 128, ssm.time_step_rank 8 (= the number of SSM
    heads, not a rank), rope.scaling.finetuned false, attention.key_length 16, attention.value_length 16.
    No rope.freq_base, no attention.scale, no expert keys.
  block kinds (llama.cpp's rule, from the two arrays): recurrent (Mamba-2) iff head_count_kv[i] == 0 and
    feed_forward_length[i] == 0; otherwise attention iff feed_forward_length[i] == 0; otherwise MLP.
  tensors: token_embd [64,384], output_norm [64], output [64,384]; every block attn_norm [64] (its
    pre-norm, whatever the kind); M blocks (0, 2, 4): ssm_in.weight [64,328], ssm_conv1d.weight [4,192],
    ssm_conv1d.bias [192], ssm_dt.bias [8], ssm_a [1,8] and ssm_d [1,8] (no .weight suffix),
    ssm_norm.weight [64,2], ssm_out.weight [128,64]; * block (1): attn_q [64,64], attn_k [64,32],
    attn_v [64,32], attn_output [64,64]; - blocks (3, 5): ffn_up [64,128], ffn_down [128,64].
  transforms: ssm_a = -exp(A_log) (A itself, ne (1, 8)); D as is, ne (1, 8); conv1d [192,1,4] squeezed
    to [192,4] (ne (4, 192): 4 taps per channel); mixer.norm.weight [128] reshaped [2, 64] (ne (64, 2):
    row g = elements 64g..64g+63, the weight of group g); dt_bias renamed ssm_dt.bias; attn_q / attn_k
    rows permuted per head as llama's (the converter's LlamaModel permute, applied although nothing is
    rotated: q and k rows of a head are reordered alike, so q.k and the output are unchanged).
  Mamba-2 block (h = RMSNorm(x) * attn_norm; per token t, every head h = 0..7, p = 0..15, n = 0..15):
    zxBCdt = ssm_in h (328 values): z = [0, 128), xBC = [128, 320), dt_raw = [320, 328).
    xBC = silu(conv + ssm_conv1d.bias), conv[c] = sum_{k=0..3} w[c][k] * xBC_{t-3+k}[c] (causal, per
      channel, over all 192 xBC channels; tap k = 3 on the current token; zeros before the prompt; the
      recurrent conv state is the last 3 pre-conv xBC rows).
    x = xBC[0, 128) as 8 heads of 16 (head h = [16h, 16h + 16)); B = xBC[128, 160) and C = xBC[160, 192),
      each 2 groups of 16 (group g = [16g, 16g + 16) of its part); head h reads group h / 4 (heads 0-3
      group 0, 4-7 group 1: HF's repeat_interleave).
    dt_h = softplus(dt_raw_h + ssm_dt.bias_h) (ggml: x > 20 ? x : log(1 + exp(x))); no clamp: HF's chunked
      scan clamps dt to >= time_step_min 0.001 (its one-token step and llama.cpp do not); the prompt's dt
      is >= 0.0056, so it never bites here.
    S_h[p][n] = S_h[p][n] * exp(dt_h * A_h) + dt_h * x_h[p] * B_g[n]   (S_h zero before the prompt)
    y_h[p] = sum_n S_h[p][n] * C_g[n] + D_h * x_h[p]   (D on the post-conv x)
    y (128) = y * silu(z), THEN RMS-normed per group of 64 (d_inner / n_groups; groups [0, 64), [64, 128);
      eps 1e-5) times ssm_norm; out = ssm_out y. (HF: norm_before_gate False; llama.cpp: swiglu_split(z,
      y), then build_norm over ne0 = 64.)
  attention block: q = attn_q h, k = attn_k h, v = attn_v h; no rope; scores q.k / sqrt(16) (no
    attention.scale key: 1/sqrt(head_dim)), causal softmax; query head h reads KV head h / 2; heads
    concatenated -> attn_output.
  MLP block: ffn_down(relu(ffn_up h)^2).  Output: RMSNorm(x) * output_norm, then output.

granitehybrid (GraniteMoeHybridForCausalLM, Granite 4.0-H-Tiny's layout; vocab 384, hidden 64, 4 layers with
  layer_types ["mamba", "attention", "mamba", "mamba"] (config.json's names; transformers 5 reads them as
  linear_attention / full_attention); every layer is a mixer (Mamba-2 or attention) THEN a MoE FFN with a
  shared expert; Mamba-2: mamba_n_heads 8, mamba_d_head 16, mamba_expand 2 (d_inner 128 = 2 * hidden, which
  llama.cpp requires), mamba_d_state 16, mamba_n_groups 2, mamba_d_conv 4 with bias, no in/out projection
  bias, mamba_chunk_size 16 (HF's chunked scan cuts the 100-token prompt into 7 chunks), time_step_limit
  (0, inf) (no dt clamp anywhere); attention: 4 heads, 2 KV heads, head_dim 16, position_embedding_type "nope"
  (as the published Granite 4.0-H configs: no rope), no biases; MoE: 8 experts of FFN 32 (intermediate_size),
  top-2, shared expert FFN 64 (shared_intermediate_size), SiLU-gated; multipliers embedding 12, residual 0.22,
  attention 0.0625 (the published configs' 1 / head_dim, not 1/sqrt: 0.25 would equal the default scale),
  logits 8; rms eps 1e-5; tied embeddings (as the published Granite 4.0-H configs))
  init: the Mamba-2 parameters as nemotron_h's (A = -exp(A_log) log-uniform in [-8, -0.5], softplus(dt_bias)
    log-uniform in [0.02, 0.3], D in [0.5, 1.5], conv taps N(0, 1/4), conv bias N(0, 0.3^2), dt rows of
    in_proj at half scale); token_embd N(0, 0.02^2) (x 12: a residual stream of rms ~0.24, so that the
    0.22-scaled branches count and the tied output is not just the input token: argmax = input token at 70 of
    100 positions) and output_norm around 48 (48 (1 + 0.2 N(0,1)): logits of std ~1 through the same small
    matrix); the rest as every family.
  keys (the converter's order, from a config.json laid out as the published ones: layer_types, rope_theta
    10000 with rope_scaling null, mamba_* fields, no head_dim): granitehybrid.block_count 4, context_length
    1048576 (2^20: GraniteHybridModel's value without rope), embedding_length 64, feed_forward_length 32 (the
    experts' FFN), attention.head_count 4, attention.head_count_kv [0, 2, 0, 0] (int32 array; 0 = a Mamba-2
    layer), rope.freq_base 10000.0 (unused), attention.layer_norm_rms_epsilon 1e-5, expert_count 8,
    expert_used_count 2, general.file_type 0, vocab_size 384, rope.dimension_count 16 (hidden / heads; unused),
    attention.scale 0.0625, embedding_scale 12.0, residual_scale 0.22, logit_scale 8.0,
    expert_shared_feed_forward_length 64, ssm.conv_kernel 4, ssm.state_size 16, ssm.group_count 2,
    ssm.inner_size 128, ssm.time_step_rank 8 (= the number of SSM heads), rope.scaling.finetuned false (the
    runtime's "no rope" switch: llama.cpp defaults it to true for granitehybrid and then ropes q and k). No
    key_length / value_length (head size = 64 / 4), no expert_gating_func / expert_weights_* keys (llama.cpp's
    granitehybrid graph hard-codes softmax and renormalisation), no layer_norm_epsilon.
  layer kinds (llama.cpp's rule): recurrent (Mamba-2) iff head_count_kv[i] == 0, else attention; every layer
    has the MoE FFN (expert_count > 0) and the shared expert (expert_shared_feed_forward_length > 0).
  tensors: token_embd [64,384] (also the output projection: no output.weight), output_norm [64]; every layer
    attn_norm [64] (HF input_layernorm, before the mixer), ffn_norm [64] (post_attention_layernorm, before the
    FFN), ffn_gate_inp [64,8] (router), ffn_gate_exps [64,32,8], ffn_up_exps [64,32,8], ffn_down_exps
    [32,64,8], ffn_gate_shexp [64,64], ffn_up_shexp [64,64], ffn_down_shexp [64,64]; Mamba-2 layers (0, 2, 3):
    ssm_in.weight [64,328], ssm_conv1d.weight [4,192], ssm_conv1d.bias [192], ssm_dt.bias [8], ssm_a [1,8] and
    ssm_d [1,8] (no .weight suffix), ssm_norm.weight [64,2], ssm_out.weight [128,64]; attention layer (1):
    attn_q [64,64], attn_k [64,32], attn_v [64,32], attn_output [64,64].
  transforms: the Mamba-2 ones of nemotron_h (ssm_a = -exp(A_log), ne (1, 8); D ne (1, 8); conv1d [192,1,4]
    squeezed; mamba.norm.weight [128] reshaped [2, 64]; dt_bias -> ssm_dt.bias); the checkpoint's
    block_sparse_moe.input_linear.weight [8, 64, 64] (transformers 5: experts.gate_up_proj, the same tensor)
    split on its middle axis, rows 0..31 -> ffn_gate_exps, rows 32..63 -> ffn_up_exps; output_linear.weight
    [8, 64, 32] -> ffn_down_exps; router.layer.weight -> ffn_gate_inp; shared_mlp.input_linear.weight [128, 64]
    split: rows 0..63 -> ffn_gate_shexp (HF's chunk 0, the SiLU'd half), rows 64..127 -> ffn_up_shexp;
    shared_mlp.output_linear -> ffn_down_shexp; attn_q / attn_k rows permuted per head as llama's (the
    converter's LlamaModel permute, applied although nothing is rotated: q.k is unchanged).
  forward (x: residual stream; n = RMSNorm, eps 1e-5):
    x = token_embd[t] * 12 (embedding_scale)
    per layer: m = Mamba-2 or attention mixer of n(x) * attn_norm; x = x + 0.22 * m (residual_scale);
      h = n(x) * ffn_norm; f = moe(h) + shexp(h); x = x + 0.22 * f (residual_scale again, on the FFN output)
    logits = (n(x) * output_norm) . token_embd / 8 (logit_scale divides).
  Mamba-2 mixer: nemotron_h's exactly (split z [0,128), xBC [128,320), dt [320,328); causal depthwise conv over
    xBC with the current token on tap 3, + ssm_conv1d.bias, SiLU; x 8 heads of 16, B and C 2 groups of 16,
    head h reads group h / 4; dt = softplus(dt_raw + ssm_dt.bias), no clamp; S = S exp(dt A) + dt x B^T,
    y = S C + D x; y * silu(z), THEN RMS-normed per group of 64 (d_inner / n_groups) times ssm_norm, eps 1e-5
    (the model's rms eps); ssm_out).
  attention mixer: q, k, v without rope or bias; scores q.k * 0.0625 (attention.scale, replacing 1/sqrt(16)),
    causal softmax; query head h reads KV head h / 2; heads concatenated -> attn_output.
  moe(h): p = softmax(ffn_gate_inp h) over all 8 experts; the 2 largest p; weights = those p divided by their
    sum (HF: softmax over the 2 largest logits, the same); out = sum_e w_e ffn_down_e(silu(ffn_gate_e h) *
    ffn_up_e h). shexp(h) = ffn_down_shexp(silu(ffn_gate_shexp h) * ffn_up_shexp h), unweighted, added to it.

Tokenizers (what the runtime reads; ids for the vocab of 384):
  llama, qwen3, qwen3moe, gptoss: byte-level BPE, tokenizer.ggml.model "gpt2",
    tokenizer.ggml.pre "llama-bpe" (llama) / "qwen2" (qwen3, qwen3moe) / "gpt-4o" (gptoss);
    tokenizer.ggml.tokens: ids 0..255 the 256 byte symbols of GPT-2's byte-to-unicode map in
    GPT-2's order ("!" = 0, .., "\u0120" (space) = 220), then the products of the merges, then
    "[PADn]" fillers (token_type 5 UNUSED), then the family's special tokens at the end of the
    vocabulary; tokenizer.ggml.token_type 1 (normal) for bytes and merges, 3 (control) for
    specials, 4 (user-defined) for Qwen3's <think> / </think> (not special in Qwen3's tokenizer,
    so the converter types them user-defined); tokenizer.ggml.merges "a b" strings.
    llama:  <|begin_of_text|> 379 (bos), <|end_of_text|> 380, <|start_header_id|> 381,
            <|end_header_id|> 382, <|eot_id|> 383 (eos, as Llama-3.x-Instruct); add_bos_token true.
    qwen3:  <|endoftext|> 379 (bos and padding), <|im_start|> 380, <|im_end|> 381 (eos),
            <think> 382, </think> 383; add_bos_token false.
    gptoss: <|startoftext|> 375 (bos), <|endoftext|> 376 (padding), <|return|> 377 (eos),
            <|constrain|> 378, <|channel|> 379, <|start|> 380, <|end|> 381, <|message|> 382,
            <|call|> 383; add_bos_token false.
  gemma2: SentencePiece, tokenizer.ggml.model "llama", pre "default", the layout of
    tests/support/tiny_gguf.cpp put_vocab: <pad> 0, <eos> 1, <bos> 2, <unk> 3 (type 2),
    <start_of_turn> 4, <end_of_turn> 5 (control), <0x00>..<0xFF> 6..261 (type 6 byte), then
    "\u2581", letters and word pieces (type 1, scores -rank), then <unusedN> (type 5);
    bos 2, eos 1, unk 3, padding 0, add_bos_token true, add_eos_token false,
    add_space_prefix false (as the Gemma 2 converter writes).
  deepseek2, deepseek3, glm4moe: the byte-level BPE above; glm4moe with pre "glm4" (as the converter
    writes it; llama.cpp's CHATGLM4 split is Llama 3's regex, merges kept), the DeepSeek files with
    "smaug-bpe", a stand-in: the converter writes "deepseek-llm" (V2) and "deepseek-v3" (V3), splits
    lockstep does not implement yet; "smaug-bpe" (Llama 3's regex, merges kept) is the nearest.
    deepseek2, deepseek3: <｜begin▁of▁sentence｜> 379 (bos), <｜end▁of▁sentence｜> 380 (eos),
            <｜▁pad▁｜> 381 (padding), <｜User｜> 382, <｜Assistant｜> 383; add_bos_token true.
    glm4moe: <|endoftext|> 377 (eos, padding, unknown), [gMASK] 378 (bos, as the GLM converter sets
            it), <sop> 379, <|system|> 380, <|user|> 381 (tokenizer.ggml.eot_token_id),
            <|assistant|> 382, <|observation|> 383 (tokenizer.ggml.eom_token_id); add_bos_token false.
  nemotron_h: the byte-level BPE above with pre "tekken". The converter (NemotronHModel.set_vocab)
    writes what get_vocab_base_pre's hash of the model's tokenizer maps to; Nemotron-H / Nano v2 use
    Mistral NeMo's 131072-token vocabulary, d32676d has no Nemotron entry, so "tekken" (Mistral-Nemo's;
    supported by lockstep; the published files' hash was not recomputed here).
    <unk> 378 (tokenizer.ggml.unknown_token_id), <s> 379 (bos), </s> 380, <SPECIAL_10> 381,
    <SPECIAL_11> 382, <SPECIAL_12> 383 (eos, as Nano v2); no padding id; add_bos_token true (the
    converter forces it for the non-MoE Nemotron-H).
  granitehybrid: the byte-level BPE above with pre "dbrx", as the published Granite 4.0 conversions carry it
    (their cl100k-based vocabulary of 100352; llama.cpp and lockstep split it by Llama 3's regex, merges kept;
    Granite 3's "refact" is the older 49152-token vocabulary). <|pad|> 379 (padding), <|end_of_text|> 380 (bos
    and eos, as Granite 4.0), <|start_of_role|> 381, <|end_of_role|> 382, <|unk|> 383
    (tokenizer.ggml.unknown_token_id); add_bos_token false.
  No tokenizer.chat_template is written (lockstep picks its template by architecture).

Checked against llama.cpp (d32676d, libllama, CPU, F32 KV cache, flash attention off): each file's
prompt, whole and one token at a time, gives the golden logits within 3e-6 (llama, qwen3moe),
2e-5 (qwen3, logits up to 18), 4.4e-3 (gemma2: ggml's CPU GELU goes through an fp16 table) and, for
gptoss, 2.4e-6 with the experts written as F32 copies of their MXFP4 values (mxfp4=False); with
the MXFP4 file llama.cpp quantizes the activations to Q8_0 (~0.03 everywhere, and two tokens whose
expert choice flips).
deepseek2, deepseek3, glm4moe (not run in llama.cpp): llama.cpp's converter (d32676d, with set_vocab
skipped) run on save_pretrained of the same models (glm4moe's NextN weights added to the checkpoint)
writes the same keys, values and key order and bit-identical tensors; a numpy forward from the GGUF
alone with llama.cpp's semantics (MLA absorbed, ggml's YaRN rope, build_moe_ffn's router) gives the
golden logits within 4e-6 (and misses them by about 3 without deepseek3's group limit, without
glm4moe's selection bias, or with NeoX pairs for deepseek2's rope).
phi3longrope (not run in llama.cpp): llama.cpp's converter (d32676d, set_vocab skipped) run on save_pretrained of
the same model writes the same keys, values, types and key order (plus general.size_label, which no file here
carries) and bit-identical tensors, rope_factors_long / _short first.
nemotron_h (not run in llama.cpp): the golden is HF's pure-torch path (no mamba_ssm / causal_conv1d
installed: its torch fallbacks), float32, eager attention; whole prompt (chunked scan) vs one token at a
time through HF's cache (recurrent step) 3.5e-6. llama.cpp's converter (d32676d, set_vocab skipped,
config.json read as it is: with transformers 5's own NemotronHConfig, AutoConfig's to_dict() adds MoE
defaults (num_experts_per_tok) and the converter takes nemotron_h_moe) run on a published-style
checkpoint of the same model (backbone.* names, the config above) writes the same keys, values, types
and key order and bit-identical tensors. A float64 numpy forward from the GGUF alone with the
sequential recurrence above (nemotron_h_numpy_logits, run at the end) gives the golden within 3.1e-6;
it misses by 2.7 to 5 with heads interleaved over the groups, the norm before the z gate, one norm over
all 128, no D, or the conv taps reversed.
granitehybrid (not run in llama.cpp): the golden is HF's pure-torch path (as nemotron_h's), float32, eager
attention; whole prompt (chunked scan) vs one token at a time through HF's cache 3.6e-6 (smallest top-1
margin 5.2e-3, smallest gap between the 2nd and 3rd router logit 4.3e-4). llama.cpp's converter (d32676d,
set_vocab skipped) run on a published-style checkpoint of the same model (input_linear / output_linear /
router.layer names, lm_head absent, the config.json above) writes the same keys, values, types and key order
and bit-identical tensors; transformers loads that checkpoint to the golden logits exactly. A float64 numpy
forward from the GGUF alone with the semantics above (granitehybrid_numpy_logits, run at the end) gives the
golden within 3.1e-6; it misses by 1.5 without renormalising the top-2 weights, 3.4 without the shared
expert, 3.8 / 2.5 with the shared / routed experts' gate and up halves swapped, 4.9 with residual_scale on
the mixer output only, 1.8 with the attention scale 1/sqrt(16), 5.2 without embedding_scale.
"""
import functools
import math
import sys

import numpy as np
import torch
import gguf

from golden import write_golden, write_spm_vocab_keys

SEED = 2020
N_PROMPT = 100
N_PROMPT_SHORT = 48  # phi3longrope's second golden: the first 48 tokens of the same prompt (<= its original context 64)
VOCAB = 384
# (append only: a family's weights are drawn with SEED + its index here)
FAMILIES = ("llama", "qwen3", "qwen3moe", "gemma2", "gptoss", "qwen2", "granite", "olmo2", "mistral3", "lfm2", "phi3", "granitemoe",
            "deepseek2", "deepseek3", "glm4moe", "nemotron_h", "granitehybrid", "phi3longrope")
ARCH = {"llama": "llama", "qwen3": "qwen3", "qwen3moe": "qwen3moe", "gemma2": "gemma2", "gptoss": "gpt-oss", "qwen2": "qwen2",
        "granite": "granite", "olmo2": "olmo2", "mistral3": "mistral3", "lfm2": "lfm2", "phi3": "phi3", "granitemoe": "granitemoe",
        "deepseek2": "deepseek2", "deepseek3": "deepseek2", "glm4moe": "glm4moe", "nemotron_h": "nemotron_h",
        "granitehybrid": "granitehybrid", "phi3longrope": "phi3"}
# Ministral 3's YaRN and Llama 4 attention temperature, with an original context of 32 so that
# the 100-token golden prompt crosses three of the temperature's steps (16384 in the real ones)
MINISTRAL3_ROPE = {"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 16.0, "original_max_position_embeddings": 32,
                   "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0, "llama_4_scaling_beta": 0.1}
# Granite 3's multipliers (granite-3.x-2b-instruct's values, the attention's for head_dim 16)
GRANITE_MULT = dict(embedding_multiplier=12.0, residual_multiplier=0.22, attention_multiplier=0.25, logits_scaling=8.0)

LLAMA3_ROPE = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 256}
GPTOSS_ROPE = {"rope_type": "yarn", "rope_theta": 150000.0, "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0,
               "original_max_position_embeddings": 4096, "truncate": False}
# DeepSeek-V2-Lite's YaRN (factor 40, beta 32 / 1, mscale = mscale_all_dim = 0.707) with an original context of 64
# (4096 in the real ones) so that the ramp falls inside the 8 rotary dims; context 40 * 64 = 2560
DEEPSEEK_YARN = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0, "original_max_position_embeddings": 64,
                 "beta_fast": 32.0, "beta_slow": 1.0, "mscale": 0.707, "mscale_all_dim": 0.707}
# Nemotron-H's layer pattern (M Mamba-2, * attention, - MLP), as hybrid_override_pattern in the published configs
NEMOTRON_H_PATTERN = "M*M-M-"
# Granite 4.0-H's multipliers for the tiny shapes: embedding 12, residual 0.22 and logits 8 as Granite 4.0-H-1B /
# Granite 3; the attention's as the Granite 4.0 configs set it, 1 / head_dim (0.0078125 for 128, 0.015625 for 64):
# 1/16 here, so that it differs from the 1/sqrt(head_dim) = 0.25 a runtime would use without the key
GRANITE_HYBRID_MULT = dict(embedding_multiplier=12.0, residual_multiplier=0.22, attention_multiplier=0.0625, logits_scaling=8.0)
GRANITE_HYBRID_LAYERS = ["mamba", "attention", "mamba", "mamba"]  # (config.json's names; transformers 5 renames them)
GRANITE_HYBRID_EMBD_STD = 0.02  # tied embedding: 12 * 0.02 keeps the residual stream near the branches' 0.22-scaled outputs
GRANITE_HYBRID_OUT_NORM = 48.0  # ... and an output_norm around 48 gives logits of std ~1 through the same small matrix
GEMMA2_SOFTCAP_ATTN = 5.0
GEMMA2_SOFTCAP_FINAL = 5.0
# Phi-3.5-mini / Phi-4-mini's LongRoPE in miniature: original context 64 (4096 in the real ones) and
# max_position_embeddings 256 (131072), a scale of 4 (32), so that the 100-token golden prompt takes the long factors
# and the 48-token one the short ones
PHI3_LONGROPE_ORIG_CTX = 64
PHI3_LONGROPE_MAX_POS = 256


def phi3_longrope_factors(n_pairs):
    """(short_factor, long_factor), one per rotary pair, rounded to 4 decimals: short uniform in [1, 1.5), long
    uniform in [1, 8) and sorted ascending (the published long factors grow with the pair index, i.e. with the
    wavelength). Drawn from numpy with the family's seed, before (and apart from) the weights' torch generator."""
    rng = np.random.default_rng(SEED + FAMILIES.index("phi3longrope"))
    short = [round(float(x), 4) for x in 1.0 + 0.5 * rng.random(n_pairs)]
    long = [round(float(x), 4) for x in np.sort(1.0 + 7.0 * rng.random(n_pairs))]
    return short, long


# ----------------------------------------------------------------------------------------------
# models


def make_model(family):
    from transformers import (LlamaConfig, LlamaForCausalLM, Qwen3Config, Qwen3ForCausalLM, Qwen3MoeConfig,
                              Qwen3MoeForCausalLM, Gemma2Config, Gemma2ForCausalLM, GptOssConfig, GptOssForCausalLM,
                              Qwen2Config, Qwen2ForCausalLM, GraniteConfig, GraniteForCausalLM, Olmo2Config,
                              Olmo2ForCausalLM, Ministral3Config, Ministral3ForCausalLM, Lfm2Config, Lfm2ForCausalLM,
                              Phi3Config, Phi3ForCausalLM, GraniteMoeConfig, GraniteMoeForCausalLM, DeepseekV2Config,
                              DeepseekV2ForCausalLM, DeepseekV3Config, DeepseekV3ForCausalLM, Glm4MoeConfig,
                              Glm4MoeForCausalLM)
    common = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2)
    if family == "llama":
        cfg = LlamaConfig(**common, head_dim=16, intermediate_size=128, max_position_embeddings=2048, rms_norm_eps=1e-5,
                          tie_word_embeddings=False, rope_parameters=dict(LLAMA3_ROPE))
        cls = LlamaForCausalLM
    elif family == "qwen3":
        cfg = Qwen3Config(**common, head_dim=32, intermediate_size=128, max_position_embeddings=4096, rms_norm_eps=1e-6,
                          tie_word_embeddings=True, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
        cls = Qwen3ForCausalLM
    elif family == "qwen3moe":
        cfg = Qwen3MoeConfig(**common, head_dim=16, intermediate_size=128, max_position_embeddings=4096,
                             rms_norm_eps=1e-6, tie_word_embeddings=False, num_experts=8, num_experts_per_tok=3,
                             moe_intermediate_size=24, norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[],
                             rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
        cls = Qwen3MoeForCausalLM
    elif family == "qwen2":
        cfg = Qwen2Config(**common, intermediate_size=128, max_position_embeddings=4096, rms_norm_eps=1e-6,
                          tie_word_embeddings=False, use_sliding_window=False,
                          rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
        cls = Qwen2ForCausalLM
    elif family == "granitemoe":
        cfg = GraniteMoeConfig(**common, intermediate_size=24, max_position_embeddings=4096, rms_norm_eps=1e-6,
                               tie_word_embeddings=False, num_local_experts=8, num_experts_per_tok=3, **GRANITE_MULT,
                               rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
        cls = GraniteMoeForCausalLM
    elif family == "granite":
        cfg = GraniteConfig(**common, intermediate_size=128, max_position_embeddings=4096, rms_norm_eps=1e-6,
                            tie_word_embeddings=True, attention_bias=True, mlp_bias=True, **GRANITE_MULT,
                            rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
        cls = GraniteForCausalLM
    elif family == "olmo2":
        cfg = Olmo2Config(**common, intermediate_size=128, max_position_embeddings=4096, rms_norm_eps=1e-6,
                          tie_word_embeddings=False, attention_bias=False,
                          rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
        cls = Olmo2ForCausalLM
    elif family == "mistral3":
        cfg = Ministral3Config(**common, head_dim=16, intermediate_size=128, max_position_embeddings=512, rms_norm_eps=1e-5,
                               tie_word_embeddings=False, sliding_window=None, rope_parameters=dict(MINISTRAL3_ROPE))
        cls = Ministral3ForCausalLM
    elif family == "lfm2":
        cfg = Lfm2Config(**common, intermediate_size=128, block_auto_adjust_ff_dim=False,
                         max_position_embeddings=4096, norm_eps=1e-5, tie_word_embeddings=True, conv_L_cache=3,
                         layer_types=["conv", "full_attention", "conv", "full_attention"],
                         rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})
        cls = Lfm2ForCausalLM
    elif family == "phi3":
        cfg = Phi3Config(**common, intermediate_size=128, max_position_embeddings=4096, original_max_position_embeddings=4096,
                         rms_norm_eps=1e-5, tie_word_embeddings=False, sliding_window=None, pad_token_id=0, eos_token_id=1,
                         bos_token_id=2, partial_rotary_factor=0.5,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5})
        cls = Phi3ForCausalLM
    elif family == "phi3longrope":
        # phi3's model with Phi-3.5-mini / Phi-4-mini's rope: LongRoPE factors for the 4 rotary pairs (8 rope dims of
        # head 16), no "factor" and no "attention_factor" (as the published configs: HF takes the scale from
        # max_position_embeddings / original_max_position_embeddings, as the converter does)
        short, long = phi3_longrope_factors(int(16 * 0.5) // 2)
        cfg = Phi3Config(**common, intermediate_size=128, max_position_embeddings=PHI3_LONGROPE_MAX_POS,
                         original_max_position_embeddings=PHI3_LONGROPE_ORIG_CTX, rms_norm_eps=1e-5,
                         tie_word_embeddings=False, sliding_window=None, pad_token_id=0, eos_token_id=1, bos_token_id=2,
                         partial_rotary_factor=0.5,
                         rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
                                          "short_factor": short, "long_factor": long,
                                          "original_max_position_embeddings": PHI3_LONGROPE_ORIG_CTX})
        cls = Phi3ForCausalLM
    elif family == "gemma2":
        cfg = Gemma2Config(**common, head_dim=32, intermediate_size=128, max_position_embeddings=4096, rms_norm_eps=1e-6,
                           tie_word_embeddings=True, sliding_window=4, query_pre_attn_scalar=32,
                           attn_logit_softcapping=GEMMA2_SOFTCAP_ATTN, final_logit_softcapping=GEMMA2_SOFTCAP_FINAL,
                           hidden_activation="gelu_pytorch_tanh",
                           rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
        cls = Gemma2ForCausalLM
    elif family == "gptoss":
        cfg = GptOssConfig(**common, head_dim=32, intermediate_size=32, max_position_embeddings=16384,
                           rms_norm_eps=1e-5, tie_word_embeddings=False, num_local_experts=8, num_experts_per_tok=2,
                           sliding_window=4, swiglu_alpha=1.702, swiglu_limit=7.0, attention_bias=True,
                           rope_parameters=dict(GPTOSS_ROPE))
        cls = GptOssForCausalLM
    elif family in ("deepseek2", "deepseek3"):
        # multi-head latent attention; every head its own K and V (num_key_value_heads = heads, as the
        # real configs: the converter writes 1); scoring_func and topk_method are not fields of the
        # transformers configs but are in the published config.json files, and the converter reads
        # scoring_func (-> expert_gating_func), so they are passed as the published configs have them
        mla = dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=4,
                   kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=32, v_head_dim=16, intermediate_size=128,
                   moe_intermediate_size=32, first_k_dense_replace=1, n_routed_experts=8, num_experts_per_tok=2,
                   max_position_embeddings=2560, rms_norm_eps=1e-6, tie_word_embeddings=False,
                   rope_parameters=dict(DEEPSEEK_YARN))
        if family == "deepseek2":
            cfg = DeepseekV2Config(**mla, q_lora_rank=None, n_shared_experts=2, scoring_func="softmax", topk_method="greedy",
                                   n_group=1, topk_group=1, norm_topk_prob=False, routed_scaling_factor=1.0)
            cls = DeepseekV2ForCausalLM
        else:
            cfg = DeepseekV3Config(**mla, q_lora_rank=24, n_shared_experts=1, scoring_func="sigmoid", topk_method="noaux_tc",
                                   n_group=4, topk_group=2, norm_topk_prob=True, routed_scaling_factor=2.5)
            cls = DeepseekV3ForCausalLM
    elif family == "glm4moe":
        cfg = Glm4MoeConfig(**common, head_dim=32, intermediate_size=128, moe_intermediate_size=32, max_position_embeddings=4096,
                            rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=True, use_qk_norm=True,
                            first_k_dense_replace=1, n_routed_experts=8, num_experts_per_tok=2, n_shared_experts=1, n_group=1,
                            topk_group=1, norm_topk_prob=True, routed_scaling_factor=2.5, num_nextn_predict_layers=1,
                            partial_rotary_factor=0.5,
                            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "partial_rotary_factor": 0.5})
        cls = Glm4MoeForCausalLM
    elif family == "nemotron_h":
        # Nemotron Nano v2's layout in miniature: "M" Mamba-2 mixer, "*" attention (no positional encoding),
        # "-" relu^2 MLP, one mixer per block. chunk_size 16: the 100-token prompt spans 7 chunks of HF's
        # chunked scan. (transformers 5 turns hybrid_override_pattern into layers_block_type.)
        from transformers import NemotronHConfig, NemotronHForCausalLM
        cfg = NemotronHConfig(vocab_size=VOCAB, hidden_size=64, hybrid_override_pattern=NEMOTRON_H_PATTERN,
                              num_attention_heads=4, num_key_value_heads=2, head_dim=16, attention_bias=False,
                              intermediate_size=128, mlp_hidden_act="relu2", mlp_bias=False, mamba_num_heads=8,
                              mamba_head_dim=16, ssm_state_size=16, n_groups=2, conv_kernel=4, use_conv_bias=True,
                              mamba_hidden_act="silu", use_bias=False, mamba_proj_bias=False, chunk_size=16,
                              layer_norm_epsilon=1e-5, max_position_embeddings=4096, tie_word_embeddings=False)
        cls = NemotronHForCausalLM
    elif family == "granitehybrid":
        # Granite 4.0-H-Tiny's layout in miniature: Mamba-2 and attention (no positional encoding: "nope") mixers, each
        # followed by a MoE FFN with a shared expert; tied embeddings. chunk_size 16: the prompt spans 7 chunks.
        from transformers import GraniteMoeHybridConfig, GraniteMoeHybridForCausalLM
        cfg = GraniteMoeHybridConfig(**common, intermediate_size=32, shared_intermediate_size=64, num_local_experts=8,
                                     num_experts_per_tok=2, layer_types=list(GRANITE_HYBRID_LAYERS),
                                     position_embedding_type="nope", mamba_n_heads=8, mamba_d_head=16, mamba_d_state=16,
                                     mamba_n_groups=2, mamba_d_conv=4, mamba_expand=2, mamba_chunk_size=16,
                                     mamba_conv_bias=True, mamba_proj_bias=False, attention_bias=False, hidden_act="silu",
                                     rms_norm_eps=1e-5, max_position_embeddings=4096, tie_word_embeddings=True,
                                     **GRANITE_HYBRID_MULT, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
        cls = GraniteMoeHybridForCausalLM
    else:
        raise SystemExit(f"unknown family {family!r}")
    cfg._attn_implementation = "eager"
    torch.manual_seed(SEED)
    m = cls(cfg).float().eval()
    g = torch.Generator().manual_seed(SEED + FAMILIES.index(family))
    tied = cfg.tie_word_embeddings
    with torch.no_grad():
        for name, p in m.named_parameters():
            init_weight(family, name, p, g, tied)
        for name, b in m.named_buffers():
            if name.endswith("e_score_correction_bias"):
                # DeepSeek-V3 / GLM-4.5's selection bias: small and positive, so that every biased score
                # (sigmoid + bias) is > 0 as in the real models
                b.copy_(torch.rand(b.shape, generator=g) * 0.1)
        if family == "gemma2":
            m.model.norm.weight.add_(1.0)  # (1 + w) ~ 2: logits large enough that the final cap bends them
        if family == "glm4moe":
            m.lockstep_nextn = glm4moe_nextn_layer(cfg, g)
        if family == "nemotron_h":
            # dt rows of in_proj (the last mamba_num_heads rows) at half scale: dt_raw ~ N(0, 1/4), so that
            # softplus(dt_raw + dt_bias) stays well above HF's time_step_min clamp (0.001) on the prompt
            for layer in m.model.layers:
                if layer.block_type == "linear_attention":
                    layer.mixer.in_proj.weight[-cfg.mamba_num_heads:].mul_(0.5)
        if family == "granitehybrid":
            m.model.norm.weight.mul_(GRANITE_HYBRID_OUT_NORM)
            for layer in m.model.layers:  # dt rows at half scale, as nemotron_h
                if layer.mamba is not None:
                    layer.mamba.in_proj.weight[-cfg.mamba_n_heads:].mul_(0.5)
    if family == "gptoss":
        mxfp4_roundtrip(m)
    return cfg, m


def init_mamba2(name, p, g, mixer):
    """A Mamba-2 mixer's own parameters (prefix mixer: "mixer." or "mamba."); True when handled."""
    if name.endswith(mixer + "A_log"):  # A = -exp(A_log) log-uniform in [-8, -0.5]
        p.copy_(math.log(0.5) + torch.rand(p.shape, generator=g) * (math.log(8.0) - math.log(0.5)))
    elif name.endswith(mixer + "dt_bias"):  # softplus(dt_bias) log-uniform in [0.02, 0.3]
        dt = torch.exp(math.log(0.02) + torch.rand(p.shape, generator=g) * (math.log(0.3) - math.log(0.02)))
        p.copy_(dt + torch.log(-torch.expm1(-dt)))  # inverse softplus
    elif name.endswith(mixer + "D"):
        p.copy_(0.5 + torch.rand(p.shape, generator=g))
    elif name.endswith(mixer + "conv1d.weight"):  # depthwise taps [C, 1, K]
        p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[2]))
    else:
        return False
    return True


def init_nemotron_h(name, p, g):
    """Nemotron-H's own parameters (True when handled; the rest take init_weight's common rules)."""
    if init_mamba2(name, p, g, "mixer."):
        return True
    if name == "model.embeddings.weight":
        p.copy_(torch.randn(p.shape, generator=g))
        return True
    return False


def init_granitehybrid(name, p, g):
    """Granite 4.0-H's own parameters: the Mamba-2 mixers' and the small tied embedding."""
    if init_mamba2(name, p, g, "mamba."):
        return True
    if name == "model.embed_tokens.weight":
        p.copy_(torch.randn(p.shape, generator=g) * GRANITE_HYBRID_EMBD_STD)
        return True
    return False


def init_weight(family, name, p, g, tied):
    if family == "nemotron_h" and init_nemotron_h(name, p, g):
        return
    if family == "granitehybrid" and init_granitehybrid(name, p, g):
        return
    if name.endswith("experts.gate_up_proj") or name.endswith("experts.down_proj"):
        # unit-variance outputs: gpt-oss stores [E, in, out] (x @ W), the others [E, out, in]
        fan_in = p.shape[1] if family == "gptoss" else p.shape[2]
        p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(fan_in))
    elif p.dim() == 2:
        fan_in = p.shape[1]
        if "embed_tokens" in name:
            # gemma2 multiplies the embedding by sqrt(hidden): entries ~1/sqrt(hidden) there;
            # a tied embedding is also the output projection: entries ~0.5 keep logits moderate
            std = 1.0 / math.sqrt(fan_in) if family == "gemma2" else (0.5 if tied else 1.0)
            p.copy_(torch.randn(p.shape, generator=g) * std)
        else:
            p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(fan_in))
    elif name.endswith("conv.conv.weight"):  # LFM2's depthwise taps [C, 1, L]
        p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[2]))
    elif name.endswith("sinks"):
        p.copy_(torch.randn(p.shape, generator=g) * 1.5)
    elif "bias" in name:
        p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    elif "norm" in name:
        centre = 0.0 if family == "gemma2" else 1.0
        p.copy_(centre + 0.2 * torch.randn(p.shape, generator=g))
    else:
        raise RuntimeError(f"no init rule for {name} {tuple(p.shape)}")


def glm4moe_nextn_layer(cfg, g):
    """GLM-4.5's NextN (multi-token prediction) block, model.layers.<n_layers> of the published
    checkpoints: a whole MoE decoder layer plus eh_proj, enorm, hnorm, shared_head.{norm,head} and
    its own embed_tokens. transformers never builds it (its loader drops those weights), so random
    values in the HF names, for the converter to write; nothing the golden logits depend on."""
    from transformers.models.glm4_moe.modeling_glm4_moe import Glm4MoeDecoderLayer
    L, H = cfg.num_hidden_layers, cfg.hidden_size
    layer = Glm4MoeDecoderLayer(cfg, L).float()
    out = {}
    for name, p in layer.named_parameters():
        init_weight("glm4moe", name, p, g, False)
        out[f"model.layers.{L}.{name}"] = p.detach().clone()
    out[f"model.layers.{L}.mlp.gate.e_score_correction_bias"] = torch.rand(cfg.n_routed_experts, generator=g) * 0.1
    out[f"model.layers.{L}.eh_proj.weight"] = torch.randn(H, 2 * H, generator=g) / math.sqrt(2 * H)  # [e_norm; h_norm] -> H
    for nm in ("enorm", "hnorm", "shared_head.norm"):
        out[f"model.layers.{L}.{nm}.weight"] = 1.0 + 0.2 * torch.randn(H, generator=g)
    out[f"model.layers.{L}.embed_tokens.weight"] = torch.randn(cfg.vocab_size, H, generator=g)
    out[f"model.layers.{L}.shared_head.head.weight"] = torch.randn(cfg.vocab_size, H, generator=g) / math.sqrt(H)
    return out


def gptoss_expert_views(mlp):
    """GGUF-layout expert matrices [E, rows, cols] (row-major, cols = ne[0]) of a GptOss MLP."""
    gu = mlp.experts.gate_up_proj.detach().transpose(-1, -2)  # [E, 2F, H]
    return gu[:, ::2, :], gu[:, 1::2, :], mlp.experts.down_proj.detach().transpose(-1, -2)  # gate, up [E,F,H]; down [E,H,F]


def mxfp4_roundtrip(m):
    """Replace every expert matrix by its MXFP4 dequantization (what the GGUF holds)."""
    Q = gguf.GGMLQuantizationType.MXFP4
    with torch.no_grad():
        for layer in m.model.layers:
            gate, up, down = gptoss_expert_views(layer.mlp)
            dq = [torch.from_numpy(gguf.quants.dequantize(gguf.quants.quantize(t.contiguous().numpy(), Q), Q).copy())
                  for t in (gate, up, down)]
            gu = layer.mlp.experts.gate_up_proj  # [E, H, 2F]
            gu[:, :, ::2] = dq[0].transpose(-1, -2)
            gu[:, :, 1::2] = dq[1].transpose(-1, -2)
            layer.mlp.experts.down_proj.copy_(dq[2].transpose(-1, -2))
    for layer in m.model.layers:  # the views of the new values quantize to themselves
        for t in gptoss_expert_views(layer.mlp):
            a = t.contiguous().numpy()
            assert np.array_equal(gguf.quants.dequantize(gguf.quants.quantize(a, Q), Q), a)


# ----------------------------------------------------------------------------------------------
# converter transforms


def permute_qk(w, n_head):
    """HF rotate-half rows -> interleaved pairs, per head (the converter's Llama permute)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama3_rope_factors(rp, dim):
    base = rp["rope_theta"]
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor, lo, hi, old = rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"], rp["original_max_position_embeddings"]
    lo_wl, hi_wl = old / lo, old / hi
    out = []
    for f in freqs.tolist():
        wl = 2 * math.pi / f
        if wl < hi_wl:
            out.append(1.0)
        elif wl > lo_wl:
            out.append(factor)
        else:
            s = (old / wl - lo) / (hi - lo)
            out.append(1.0 / ((1 - s) / factor + s))
    return torch.tensor(out, dtype=torch.float32)


# ----------------------------------------------------------------------------------------------
# tokenizers


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs], bs  # symbols in GPT-2's id order, and the byte each stands for


BPE_MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("Ġ", "a"), ("i", "n"), ("e", "r"), ("o", "n"), ("r", "e"),
              ("a", "n"), ("Ġ", "s"), ("Ġ", "w"), ("o", "u"), ("Ġ", "i"), ("e", "n"), ("Ġ", "c"), ("i", "s"),
              ("Ġ", "o"), ("a", "t"), ("l", "l"), ("Ċ", "Ċ")]

BPE_SPECIALS = {
    # (token, type) at the end of the vocabulary; then bos, eos, padding (None: not written), add_bos
    "llama": ([("<|begin_of_text|>", 3), ("<|end_of_text|>", 3), ("<|start_header_id|>", 3),
               ("<|end_header_id|>", 3), ("<|eot_id|>", 3)], "<|begin_of_text|>", "<|eot_id|>", None, True),
    "qwen3": ([("<|endoftext|>", 3), ("<|im_start|>", 3), ("<|im_end|>", 3), ("<think>", 4), ("</think>", 4)],
              "<|endoftext|>", "<|im_end|>", "<|endoftext|>", False),
    "lfm2": ([("<|startoftext|>", 3), ("<|endoftext|>", 3), ("<|im_start|>", 3), ("<|im_end|>", 3)],
             "<|startoftext|>", "<|im_end|>", "<|endoftext|>", True),
    "mistral3": ([("<unk>", 3), ("<s>", 3), ("</s>", 3), ("[INST]", 3), ("[/INST]", 3)], "<s>", "</s>", None, True),
    "olmo2": ([("<|endoftext|>", 3), ("<|pad|>", 3), ("<|im_start|>", 3), ("<|im_end|>", 3)],
              "<|endoftext|>", "<|endoftext|>", "<|pad|>", False),
    "granitemoe": ([("<|end_of_text|>", 3), ("<|start_of_role|>", 3), ("<|end_of_role|>", 3), ("<|tool_call|>", 3)],
                   "<|end_of_text|>", "<|end_of_text|>", "<|end_of_text|>", False),
    "granite": ([("<|end_of_text|>", 3), ("<|start_of_role|>", 3), ("<|end_of_role|>", 3), ("<|tool_call|>", 3)],
                "<|end_of_text|>", "<|end_of_text|>", "<|end_of_text|>", False),
    "gptoss": ([("<|startoftext|>", 3), ("<|endoftext|>", 3), ("<|return|>", 3), ("<|constrain|>", 3),
                ("<|channel|>", 3), ("<|start|>", 3), ("<|end|>", 3), ("<|message|>", 3), ("<|call|>", 3)],
               "<|startoftext|>", "<|return|>", "<|endoftext|>", False),
    "deepseek2": ([("<｜begin▁of▁sentence｜>", 3), ("<｜end▁of▁sentence｜>", 3), ("<｜▁pad▁｜>", 3), ("<｜User｜>", 3),
                   ("<｜Assistant｜>", 3)], "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>", True),
    "glm4moe": ([("<|endoftext|>", 3), ("[gMASK]", 3), ("<sop>", 3), ("<|system|>", 3), ("<|user|>", 3), ("<|assistant|>", 3),
                 ("<|observation|>", 3)], "[gMASK]", "<|endoftext|>", "<|endoftext|>", False),
    # Nemotron Nano v2 (its Mistral-NeMo-derived vocabulary): bos <s>, eos <SPECIAL_12>, unk <unk>; the
    # converter sets add_bos_token true for the non-MoE Nemotron-H
    "nemotron_h": ([("<unk>", 3), ("<s>", 3), ("</s>", 3), ("<SPECIAL_10>", 3), ("<SPECIAL_11>", 3), ("<SPECIAL_12>", 3)],
                   "<s>", "<SPECIAL_12>", None, True),
    # Granite 4.0 (its cl100k-based vocabulary of 100352): <|pad|> 100256 (padding), <|end_of_text|> 100257 (bos and
    # eos), <|start_of_role|>, <|end_of_role|>, <|unk|> 100269 (unknown); no bos added
    "granitehybrid": ([("<|pad|>", 3), ("<|end_of_text|>", 3), ("<|start_of_role|>", 3), ("<|end_of_role|>", 3),
                       ("<|unk|>", 3)], "<|end_of_text|>", "<|end_of_text|>", "<|pad|>", False),
}
BPE_SPECIALS_OF = {"qwen3moe": "qwen3", "qwen2": "qwen3", "deepseek3": "deepseek2"}
# further special ids (key suffix -> token), after padding: what the GLM converter sets besides bos
BPE_EXTRA_IDS = {"glm4moe": {"eot": "<|user|>", "unknown": "<|endoftext|>", "eom": "<|observation|>"},
                 "nemotron_h": {"unknown": "<unk>"}, "granitehybrid": {"unknown": "<|unk|>"}}
# deepseek2 / deepseek3 / glm4moe: stand-ins for "deepseek-llm" / "deepseek-v3" / "glm4", which lockstep
# does not split by (see "Tokenizers" in the docstring)
BPE_PRE = {"lfm2": "lfm2", "mistral3": "tekken", "llama": "llama-bpe", "qwen3": "qwen2", "qwen3moe": "qwen2", "gptoss": "gpt-4o", "qwen2": "qwen2", "granite": "refact",
           "olmo2": "dbrx", "granitemoe": "refact", "deepseek2": "smaug-bpe", "deepseek3": "smaug-bpe", "glm4moe": "glm4",
           "nemotron_h": "tekken", "granitehybrid": "dbrx"}


def write_bpe_tokenizer(w, family, V):
    syms, _ = bytes_to_unicode()
    toks = list(syms)
    types = [1] * 256
    for a, b in BPE_MERGES:
        assert a in toks and b in toks and a + b not in toks
        toks.append(a + b)
        types.append(1)
    specials, bos, eos, pad, add_bos = BPE_SPECIALS[BPE_SPECIALS_OF.get(family, family)]
    n_pad = V - len(toks) - len(specials)
    toks += [f"[PAD{len(toks) + i}]" for i in range(n_pad)]
    types += [5] * n_pad
    toks += [t for t, _ in specials]
    types += [ty for _, ty in specials]
    assert len(toks) == V
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", BPE_PRE[family])
    w.add_array("tokenizer.ggml.tokens", toks)
    w.add_array("tokenizer.ggml.token_type", types)
    w.add_array("tokenizer.ggml.merges", [f"{a} {b}" for a, b in BPE_MERGES])
    w.add_uint32("tokenizer.ggml.bos_token_id", toks.index(bos))
    w.add_uint32("tokenizer.ggml.eos_token_id", toks.index(eos))
    if pad is not None:
        w.add_uint32("tokenizer.ggml.padding_token_id", toks.index(pad))
    for key, tok in BPE_EXTRA_IDS.get(family, {}).items():
        w.add_uint32(f"tokenizer.ggml.{key}_token_id", toks.index(tok))
    w.add_bool("tokenizer.ggml.add_bos_token", add_bos)
    return {t: toks.index(t) for t, _ in specials}


def write_spm_tokenizer(w, V):
    """tests/support/tiny_gguf.cpp put_vocab's layout (Gemma-style SentencePiece with byte tokens)."""
    toks = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]
    types = [3, 3, 3, 2, 3, 3]
    toks += [f"<0x{b:02X}>" for b in range(256)]
    types += [6] * 256
    scores = [0.0] * len(toks)
    sp = "\u2581"
    pieces = [sp] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    pieces += ["th", "he", "in", "er", "an", sp + "t", sp + "a", "the", sp + "th", sp + "the"]
    pieces += ["re", "on", "at", "en", "nd", "is", "or", "es", "it", "ing", "ion", "and"]
    pieces += [sp + s for s in ("i", "o", "s", "w", "an", "is", "it", "in", "on", "and")]
    seen = set()
    unused = 0
    for piece in pieces:
        if len(toks) >= V:
            break
        if piece in seen:
            continue
        seen.add(piece)
        toks.append(piece)
        types.append(1)
        scores.append(-float(len(seen)))
    while len(toks) < V:
        toks.append(f"<unused{unused}>")
        types.append(5)
        scores.append(0.0)
        unused += 1
    write_spm_vocab_keys(w, toks, scores, types)


# ----------------------------------------------------------------------------------------------
# GGUF export


def f32(t):
    return t.detach().float().contiguous().numpy().astype(np.float32)


def put_f32(w, name, t):
    w.add_tensor(name, f32(t))


def finish_gguf(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def export_lfm2(cfg, m, path):
    """LFM2 as llama.cpp's converter (conversion/lfm2.py) writes it."""
    w = gguf.GGUFWriter(path, "lfm2")
    w.add_type("model")
    w.add_name("lockstep tiny lfm2")
    L, H, nh = cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads
    w.add_block_count(L)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(H)
    w.add_head_count(nh)
    w.add_head_count_kv([cfg.num_key_value_heads if t != "conv" else 0 for t in cfg.layer_types])
    w.add_rope_freq_base(cfg.rope_parameters["rope_theta"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_vocab_size(cfg.vocab_size)
    w.add_shortconv_l_cache(cfg.conv_L_cache)
    w.add_layer_norm_rms_eps(cfg.norm_eps)
    w.add_feed_forward_length(cfg.intermediate_size)  # (block_auto_adjust_ff_dim off: as it is)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    sd = dict(m.named_parameters())
    put = functools.partial(put_f32, w)

    put("token_embd.weight", sd["model.embed_tokens.weight"])
    put("token_embd_norm.weight", sd["model.embedding_norm.weight"])
    if not cfg.tie_word_embeddings:
        put("output.weight", sd["lm_head.weight"])
    for i, kind in enumerate(cfg.layer_types):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        put(b + "attn_norm.weight", sd[p + "operator_norm.weight"])
        put(b + "ffn_norm.weight", sd[p + "ffn_norm.weight"])
        if kind == "conv":
            put(b + "shortconv.in_proj.weight", sd[p + "conv.in_proj.weight"])
            put(b + "shortconv.conv.weight", sd[p + "conv.conv.weight"].squeeze(1))  # [C, L]: ne (L, C)
            put(b + "shortconv.out_proj.weight", sd[p + "conv.out_proj.weight"])
        else:
            a = p + "self_attn."
            for src, dst in (("q_proj", "attn_q"), ("k_proj", "attn_k"), ("v_proj", "attn_v"), ("out_proj", "attn_output")):
                put(f"{b}{dst}.weight", sd[f"{a}{src}.weight"])
            put(b + "attn_q_norm.weight", sd[a + "q_layernorm.weight"])
            put(b + "attn_k_norm.weight", sd[a + "k_layernorm.weight"])
        put(b + "ffn_gate.weight", sd[p + "feed_forward.w1.weight"])
        put(b + "ffn_up.weight", sd[p + "feed_forward.w3.weight"])
        put(b + "ffn_down.weight", sd[p + "feed_forward.w2.weight"])
    print("special token ids:", write_bpe_tokenizer(w, "lfm2", cfg.vocab_size))
    finish_gguf(w)


def phi3_longrope_attn_factor(cfg):
    """The converter's rope.scaling.attn_factor for LongRoPE ("su" / "longrope"): sqrt(1 + ln(scale) / ln(original))
    with scale = max_position_embeddings / original_max_position_embeddings, 1 when scale <= 1."""
    orig = cfg.rope_parameters["original_max_position_embeddings"]
    scale = cfg.max_position_embeddings / orig
    return math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1.0 else 1.0


def export_phi3(cfg, m, path, family="phi3"):
    """Phi-3 / Phi-4 as llama.cpp's converter (conversion/phi.py, Phi3MiniModel) writes them: q, k
    and v in one attn_qkv, gate and up in one ffn_up (gate rows first), as the HF checkpoints
    have them. With LongRoPE (rope_parameters with long_factor, family phi3longrope) also what
    generate_extra_tensors adds: rope.scaling.attn_factor and the F32 tensors rope_factors_long /
    rope_factors_short [rope dims / 2]. The converter runs generate_extra_tensors (prepare_tensors)
    before the metadata (prepare_metadata), so that key comes right after general.architecture and
    those two tensors before the model's."""
    w = gguf.GGUFWriter(path, "phi3")
    H, nh = cfg.hidden_size, cfg.num_attention_heads
    rp = cfg.rope_parameters
    rot = int(rp.get("partial_rotary_factor", 1.0) * H) // nh
    long_factors, short_factors = rp.get("long_factor"), rp.get("short_factor")
    if long_factors:
        assert rp["rope_type"] in ("su", "longrope"), rp["rope_type"]
        assert len(long_factors) == len(short_factors) == rot // 2
        w.add_rope_scaling_attn_factors(phi3_longrope_attn_factor(cfg))
    w.add_type("model")
    w.add_name(f"lockstep tiny {family}")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_rope_scaling_orig_ctx_len(cfg.original_max_position_embeddings)
    w.add_embedding_length(H)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_head_count(nh)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_dimension_count(rot)
    w.add_rope_freq_base(cfg.rope_parameters["rope_theta"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_sliding_window(cfg.sliding_window or 0)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    sd = dict(m.named_parameters())
    put = functools.partial(put_f32, w)

    if long_factors:
        put("rope_factors_long.weight", torch.tensor(long_factors, dtype=torch.float32))
        put("rope_factors_short.weight", torch.tensor(short_factors, dtype=torch.float32))
    put("token_embd.weight", sd["model.embed_tokens.weight"])
    put("output_norm.weight", sd["model.norm.weight"])
    put("output.weight", sd["lm_head.weight"])
    for i in range(cfg.num_hidden_layers):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        put(b + "attn_norm.weight", sd[p + "input_layernorm.weight"])
        put(b + "attn_qkv.weight", sd[p + "self_attn.qkv_proj.weight"])
        put(b + "attn_output.weight", sd[p + "self_attn.o_proj.weight"])
        put(b + "ffn_norm.weight", sd[p + "post_attention_layernorm.weight"])
        put(b + "ffn_up.weight", sd[p + "mlp.gate_up_proj.weight"])
        put(b + "ffn_down.weight", sd[p + "mlp.down_proj.weight"])
    write_spm_tokenizer(w, cfg.vocab_size)
    finish_gguf(w)


def put_moe_ffn(put, b, mp, get, F):
    """A DeepSeek / GLM MoE block's tensors: HF prefix mp (e.g. "model.layers.1.mlp."), get(name) -> tensor or None."""
    put(b + "ffn_gate_inp.weight", get(mp + "gate.weight"))
    bias = get(mp + "gate.e_score_correction_bias")
    if bias is not None:
        put(b + "exp_probs_b.bias", bias)  # (the converter renames e_score_correction_bias to e_score_correction.bias)
    gu = get(mp + "experts.gate_up_proj")  # [E, 2F, H]: gate rows, then up rows
    put(b + "ffn_gate_exps.weight", gu[:, :F, :])
    put(b + "ffn_up_exps.weight", gu[:, F:, :])
    put(b + "ffn_down_exps.weight", get(mp + "experts.down_proj"))  # [E, H, F]
    for nm in ("gate", "up", "down"):
        put(f"{b}ffn_{nm}_shexp.weight", get(f"{mp}shared_experts.{nm}_proj.weight"))


def hf_tensors(m):
    """Parameters and buffers by name (the selection biases are buffers)."""
    t = {n: p.detach() for n, p in m.named_parameters()}
    t.update({n: b_.detach() for n, b_ in m.named_buffers() if n.endswith("e_score_correction_bias")})
    t.update(getattr(m, "lockstep_nextn", {}))
    return t


def export_deepseek2(family, cfg, m, path):
    """DeepSeek-V2 / V3 as llama.cpp's converter (conversion/deepseek.py, DeepseekV2Model, which also
    takes DeepseekV3ForCausalLM) writes them: architecture deepseek2, MLA as MQA over the latent
    (head_count_kv 1, key_length kv_lora_rank + rope dims, value_length kv_lora_rank), kv_b_proj split
    per head into attn_k_b (transposed) and attn_v_b, no q/k permute (the checkpoints' rope pairs are
    already interleaved), MTP layers skipped."""
    w = gguf.GGUFWriter(path, "deepseek2")
    w.add_type("model")
    w.add_name(f"lockstep tiny {family}")
    L, H, nh = cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads
    nope, rope, vd, kvr = cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim, cfg.kv_lora_rank
    rp = cfg.rope_parameters
    # TextModel.set_gguf_parameters
    w.add_block_count(L)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(H)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(nh)
    w.add_head_count_kv(1)  # (the converter's override of num_key_value_heads for MLA)
    w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
    w.add_rope_scaling_factor(rp["factor"])
    w.add_rope_scaling_orig_ctx_len(rp["original_max_position_embeddings"])
    w.add_rope_scaling_yarn_beta_fast(rp["beta_fast"])
    w.add_rope_scaling_yarn_beta_slow(rp["beta_slow"])
    w.add_rope_freq_base(rp["rope_theta"])
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_expert_count(cfg.n_routed_experts)
    w.add_expert_used_count(cfg.num_experts_per_tok)
    w.add_expert_group_count(cfg.n_group)
    w.add_expert_group_used_count(cfg.topk_group)
    w.add_expert_gating_func({"softmax": gguf.ExpertGatingFuncType.SOFTMAX,
                              "sigmoid": gguf.ExpertGatingFuncType.SIGMOID}[cfg.scoring_func])
    # the config's head_dim (= qk_rope_head_dim in transformers 5) puts key/value_length here first;
    # DeepseekV2Model's values below overwrite them in place
    w.add_key_length(kvr + rope)
    w.add_value_length(kvr)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    # DeepseekV2Model.set_gguf_parameters
    w.add_leading_dense_block_count(cfg.first_k_dense_replace)
    w.add_vocab_size(cfg.vocab_size)
    if cfg.q_lora_rank is not None:
        w.add_q_lora_rank(cfg.q_lora_rank)
    w.add_kv_lora_rank(kvr)
    w.add_key_length_mla(nope + rope)
    w.add_value_length_mla(vd)
    w.add_expert_feed_forward_length(cfg.moe_intermediate_size)
    w.add_expert_shared_count(cfg.n_shared_experts)
    w.add_expert_weights_scale(cfg.routed_scaling_factor)
    if cfg.norm_topk_prob:
        w.add_expert_weights_norm(True)
    w.add_rope_dimension_count(rope)
    w.add_rope_scaling_yarn_log_mul(0.1 * rp["mscale_all_dim"])  # (the converter's legacy 0.1 factor)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    sd = hf_tensors(m)
    put = functools.partial(put_f32, w)

    put("token_embd.weight", sd["model.embed_tokens.weight"])
    put("output_norm.weight", sd["model.norm.weight"])
    put("output.weight", sd["lm_head.weight"])
    for i in range(L):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        a = p + "self_attn."
        put(b + "attn_norm.weight", sd[p + "input_layernorm.weight"])
        if cfg.q_lora_rank is None:
            put(b + "attn_q.weight", sd[a + "q_proj.weight"])  # [nh * (nope + rope), H]: per head nope then rope rows
        else:
            put(b + "attn_q_a.weight", sd[a + "q_a_proj.weight"])
            put(b + "attn_q_a_norm.weight", sd[a + "q_a_layernorm.weight"])
            put(b + "attn_q_b.weight", sd[a + "q_b_proj.weight"])
        put(b + "attn_kv_a_mqa.weight", sd[a + "kv_a_proj_with_mqa.weight"])  # [kvr + rope, H]: latent rows, then k_pe rows
        put(b + "attn_kv_a_norm.weight", sd[a + "kv_a_layernorm.weight"])
        kv_b = sd[a + "kv_b_proj.weight"].reshape(nh, nope + vd, kvr)  # per head: k_nope rows, then v rows
        put(b + "attn_k_b.weight", kv_b[:, :nope, :].transpose(1, 2))  # [nh, kvr, nope]: ne (nope, kvr, nh)
        put(b + "attn_v_b.weight", kv_b[:, nope:, :])  # [nh, vd, kvr]: ne (kvr, vd, nh)
        put(b + "attn_output.weight", sd[a + "o_proj.weight"])
        put(b + "ffn_norm.weight", sd[p + "post_attention_layernorm.weight"])
        if i < cfg.first_k_dense_replace:
            for nm in ("gate", "up", "down"):
                put(f"{b}ffn_{nm}.weight", sd[f"{p}mlp.{nm}_proj.weight"])
        else:
            put_moe_ffn(put, b, p + "mlp.", sd.get, cfg.moe_intermediate_size)
    print("special token ids:", write_bpe_tokenizer(w, family, cfg.vocab_size))
    finish_gguf(w)


def export_glm4moe(cfg, m, path):
    """GLM-4.5 as llama.cpp's converter (conversion/glm.py, Glm4MoeModel) writes it: one block more than
    the model runs (the NextN layer, whose tensors are written under blk.<n_layers>), the norm before
    the FFN as post_attention_norm, no q/k permute (NeoX rope, as HF)."""
    w = gguf.GGUFWriter(path, "glm4moe")
    w.add_type("model")
    w.add_name("lockstep tiny glm4moe")
    L, H, nh, nkv, hd = cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    n_nextn = cfg.num_nextn_predict_layers
    rp = cfg.rope_parameters
    # TextModel.set_gguf_parameters (rope_type "default": no rope.scaling keys)
    w.add_block_count(L + n_nextn)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(H)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_rope_freq_base(rp["rope_theta"])
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_expert_count(cfg.n_routed_experts)
    w.add_expert_used_count(cfg.num_experts_per_tok)
    w.add_expert_group_count(cfg.n_group)
    w.add_expert_group_used_count(cfg.topk_group)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    # Glm4MoeModel.set_gguf_parameters (its expert_count again: same key, same value)
    w.add_rope_dimension_count(int(hd * rp.get("partial_rotary_factor", 0.5)))
    w.add_expert_feed_forward_length(cfg.moe_intermediate_size)
    w.add_expert_shared_count(cfg.n_shared_experts)
    w.add_leading_dense_block_count(cfg.first_k_dense_replace)
    w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
    w.add_expert_weights_scale(cfg.routed_scaling_factor)
    w.add_expert_weights_norm(cfg.norm_topk_prob)
    w.add_nextn_predict_layers(n_nextn)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    sd = hf_tensors(m)
    put = functools.partial(put_f32, w)

    put("token_embd.weight", sd["model.embed_tokens.weight"])
    put("output_norm.weight", sd["model.norm.weight"])
    put("output.weight", sd["lm_head.weight"])
    for i in range(L + n_nextn):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        a = p + "self_attn."
        put(b + "attn_norm.weight", sd[p + "input_layernorm.weight"])
        for src, dst in (("q_proj", "attn_q"), ("k_proj", "attn_k"), ("v_proj", "attn_v")):
            put(f"{b}{dst}.weight", sd[f"{a}{src}.weight"])
            put(f"{b}{dst}.bias", sd[f"{a}{src}.bias"])
        put(b + "attn_output.weight", sd[a + "o_proj.weight"])
        put(b + "attn_q_norm.weight", sd[a + "q_norm.weight"])
        put(b + "attn_k_norm.weight", sd[a + "k_norm.weight"])
        put(b + "post_attention_norm.weight", sd[p + "post_attention_layernorm.weight"])
        if i < cfg.first_k_dense_replace:
            for nm in ("gate", "up", "down"):
                put(f"{b}ffn_{nm}.weight", sd[f"{p}mlp.{nm}_proj.weight"])
        else:
            put_moe_ffn(put, b, p + "mlp.", sd.get, cfg.moe_intermediate_size)
        if i >= L:
            put(b + "nextn.eh_proj.weight", sd[p + "eh_proj.weight"])
            put(b + "nextn.embed_tokens.weight", sd[p + "embed_tokens.weight"])
            put(b + "nextn.enorm.weight", sd[p + "enorm.weight"])
            put(b + "nextn.hnorm.weight", sd[p + "hnorm.weight"])
            put(b + "nextn.shared_head_head.weight", sd[p + "shared_head.head.weight"])
            put(b + "nextn.shared_head_norm.weight", sd[p + "shared_head.norm.weight"])
    print("special token ids:", write_bpe_tokenizer(w, "glm4moe", cfg.vocab_size))
    finish_gguf(w)


def export_nemotron_h(cfg, m, path):
    """Nemotron-H (non-MoE) as llama.cpp's converter (conversion/nemotron.py NemotronHModel, on
    GraniteHybridModel / Mamba2Model / GraniteMoeModel / LlamaModel) writes it from a config.json laid
    out as the published ones (hybrid_override_pattern string, no MoE fields, rms_norm_eps next to
    layer_norm_epsilon, no rope_theta). Keys in the converter's order; a key set twice keeps its first
    place and takes the later value (context_length, feed_forward_length, attention.head_count_kv)."""
    w = gguf.GGUFWriter(path, "nemotron_h")
    w.add_type("model")
    w.add_name("lockstep tiny nemotron_h")
    pattern = cfg.hybrid_override_pattern  # "M*M-M-"
    L, H, nh, nkv, hd = len(pattern), cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
    n_ssm_head, ssm_hd, ng, ds = cfg.mamba_num_heads, cfg.mamba_head_dim, cfg.n_groups, cfg.ssm_state_size
    d_inner = n_ssm_head * ssm_hd
    attn = [i for i, c in enumerate(pattern) if c == "*"]
    mlp = [i for i, c in enumerate(pattern) if c == "-"]
    eps = cfg.layer_norm_epsilon
    # TextModel.set_gguf_parameters (via GraniteModel, which drops head_dim first)
    w.add_block_count(L)
    w.add_context_length(2 ** 20)  # max_position_embeddings first; GraniteHybridModel overwrites it (no rope)
    w.add_embedding_length(H)
    w.add_feed_forward_length([cfg.intermediate_size if i in mlp else 0 for i in range(L)])  # (NemotronHModel's array)
    w.add_head_count(nh)
    w.add_head_count_kv([nkv if i in attn else 0 for i in range(L)])  # (GraniteHybridModel's array)
    w.add_layer_norm_rms_eps(eps)  # rms_norm_eps (Nano v2) / norm_eps (Nemotron 3)
    w.add_layer_norm_eps(eps)  # layer_norm_epsilon
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    # LlamaModel.set_gguf_parameters
    w.add_vocab_size(cfg.vocab_size)
    w.add_rope_dimension_count(H // nh)  # (hidden / heads: head_dim was dropped by GraniteModel)
    # GraniteHybridModel.set_gguf_parameters
    w.add_ssm_conv_kernel(cfg.conv_kernel)
    w.add_ssm_state_size(ds)
    w.add_ssm_group_count(ng)
    w.add_ssm_inner_size(d_inner)
    w.add_ssm_time_step_rank(n_ssm_head)
    w.add_rope_scaling_finetuned(False)  # (use_rope: Bamba only, or no Mamba layer)
    # NemotronHModel.set_gguf_parameters
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    sd = dict(m.named_parameters())
    put = functools.partial(put_f32, w)

    put("token_embd.weight", sd["model.embeddings.weight"])
    put("output_norm.weight", sd["model.norm_f.weight"])
    put("output.weight", sd["lm_head.weight"])
    for i, kind in enumerate(pattern):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        x = p + "mixer."
        put(b + "attn_norm.weight", sd[p + "norm.weight"])  # every block's pre-norm
        if kind == "M":
            put(b + "ssm_in.weight", sd[x + "in_proj.weight"])  # [2 d_inner + 2 ng ds + nh, H]: z, x, B, C, dt rows
            put(b + "ssm_conv1d.weight", sd[x + "conv1d.weight"].squeeze(1))  # [C, 1, K] -> ne (K, C)
            put(b + "ssm_conv1d.bias", sd[x + "conv1d.bias"])
            put(b + "ssm_dt.bias", sd[x + "dt_bias"])
            put(b + "ssm_a", -torch.exp(sd[x + "A_log"]).reshape(-1, 1))  # ne (1, nh)
            put(b + "ssm_d", sd[x + "D"].reshape(-1, 1))  # ne (1, nh)
            put(b + "ssm_norm.weight", sd[x + "norm.weight"].reshape(ng, d_inner // ng))  # ne (d_inner / ng, ng)
            put(b + "ssm_out.weight", sd[x + "out_proj.weight"])
        elif kind == "*":
            # LlamaModel's rope permute (undo_permute), applied though there is no rope: the same row
            # order within each head of q and k, so q.k is unchanged
            put(b + "attn_q.weight", permute_qk(sd[x + "q_proj.weight"], nh))
            put(b + "attn_k.weight", permute_qk(sd[x + "k_proj.weight"], nkv))
            put(b + "attn_v.weight", sd[x + "v_proj.weight"])
            put(b + "attn_output.weight", sd[x + "o_proj.weight"])
        else:
            put(b + "ffn_up.weight", sd[x + "up_proj.weight"])
            put(b + "ffn_down.weight", sd[x + "down_proj.weight"])
    print("special token ids:", write_bpe_tokenizer(w, "nemotron_h", cfg.vocab_size))
    finish_gguf(w)


def export_granitehybrid(cfg, m, path):
    """Granite 4.0-H as llama.cpp's converter (conversion/granite.py GraniteHybridModel, on Mamba2Model /
    GraniteMoeModel / GraniteModel / LlamaModel) writes it from a config.json laid out as the published ones
    (layer_types "mamba" / "attention", position_embedding_type "nope", rope_theta 10000 with rope_scaling null,
    mamba_* fields, no head_dim). Keys in the converter's order; a key set twice keeps its first place and takes
    the later value (context_length, attention.head_count_kv)."""
    w = gguf.GGUFWriter(path, "granitehybrid")
    w.add_type("model")
    w.add_name("lockstep tiny granitehybrid")
    L, H, nh, nkv = cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.num_key_value_heads
    n_ssm_head, ng, ds = cfg.mamba_n_heads, cfg.mamba_n_groups, cfg.mamba_d_state
    d_inner = cfg.mamba_expand * H  # (the converter's: expand * hidden_size; = n_ssm_head * mamba_d_head)
    assert d_inner == n_ssm_head * cfg.mamba_d_head
    attn = [i for i, t in enumerate(cfg.layer_types) if t == "full_attention"]
    # TextModel.set_gguf_parameters (GraniteModel drops head_dim first: none here)
    w.add_block_count(L)
    w.add_context_length(2 ** 20)  # max_position_embeddings first; GraniteHybridModel overwrites it (no rope)
    w.add_embedding_length(H)
    w.add_feed_forward_length(cfg.intermediate_size)  # (the experts')
    w.add_head_count(nh)
    w.add_head_count_kv([nkv if i in attn else 0 for i in range(L)])  # (GraniteHybridModel's array)
    w.add_rope_freq_base(cfg.rope_parameters["rope_theta"])  # (rope_theta 10000 in config.json; unused)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_expert_count(cfg.num_local_experts)
    w.add_expert_used_count(cfg.num_experts_per_tok)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    # LlamaModel.set_gguf_parameters
    w.add_vocab_size(cfg.vocab_size)
    w.add_rope_dimension_count(H // nh)
    # GraniteModel.set_gguf_parameters
    w.add_attention_scale(cfg.attention_multiplier)
    w.add_embedding_scale(cfg.embedding_multiplier)
    w.add_residual_scale(cfg.residual_multiplier)
    w.add_logit_scale(cfg.logits_scaling)
    # GraniteMoeModel.set_gguf_parameters
    w.add_expert_shared_feed_forward_length(cfg.shared_intermediate_size)
    # GraniteHybridModel.set_gguf_parameters
    w.add_ssm_conv_kernel(cfg.mamba_d_conv)
    w.add_ssm_state_size(ds)
    w.add_ssm_group_count(ng)
    w.add_ssm_inner_size(d_inner)
    w.add_ssm_time_step_rank(n_ssm_head)
    w.add_rope_scaling_finetuned(False)  # (use_rope: Bamba only, or no Mamba layer)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    sd = dict(m.named_parameters())
    put = functools.partial(put_f32, w)

    put("token_embd.weight", sd["model.embed_tokens.weight"])  # (tied: also the output projection)
    put("output_norm.weight", sd["model.norm.weight"])
    F, S = cfg.intermediate_size, cfg.shared_intermediate_size
    for i in range(L):
        p, b = f"model.layers.{i}.", f"blk.{i}."
        put(b + "attn_norm.weight", sd[p + "input_layernorm.weight"])
        put(b + "ffn_norm.weight", sd[p + "post_attention_layernorm.weight"])
        if i in attn:
            a = p + "self_attn."
            # LlamaModel's rope permute (undo_permute), applied though there is no rope: the same row order
            # within each head of q and k, so q.k is unchanged
            put(b + "attn_q.weight", permute_qk(sd[a + "q_proj.weight"], nh))
            put(b + "attn_k.weight", permute_qk(sd[a + "k_proj.weight"], nkv))
            put(b + "attn_v.weight", sd[a + "v_proj.weight"])
            put(b + "attn_output.weight", sd[a + "o_proj.weight"])
        else:
            x = p + "mamba."
            put(b + "ssm_in.weight", sd[x + "in_proj.weight"])  # [2 d_inner + 2 ng ds + nh, H]: z, x, B, C, dt rows
            put(b + "ssm_conv1d.weight", sd[x + "conv1d.weight"].squeeze(1))  # [C, 1, K] -> ne (K, C)
            put(b + "ssm_conv1d.bias", sd[x + "conv1d.bias"])
            put(b + "ssm_dt.bias", sd[x + "dt_bias"])
            put(b + "ssm_a", -torch.exp(sd[x + "A_log"]).reshape(-1, 1))  # ne (1, nh)
            put(b + "ssm_d", sd[x + "D"].reshape(-1, 1))  # ne (1, nh)
            put(b + "ssm_norm.weight", sd[x + "norm.weight"].reshape(ng, d_inner // ng))  # ne (d_inner / ng, ng)
            put(b + "ssm_out.weight", sd[x + "out_proj.weight"])
        mp = p + "block_sparse_moe."
        put(b + "ffn_gate_inp.weight", sd[mp + "router.weight"])  # (checkpoint: router.layer.weight)
        gu = sd[mp + "experts.gate_up_proj"]  # [E, 2F, H] (checkpoint: input_linear.weight): gate rows, then up rows
        put(b + "ffn_gate_exps.weight", gu[:, :F, :])
        put(b + "ffn_up_exps.weight", gu[:, F:, :])
        put(b + "ffn_down_exps.weight", sd[mp + "experts.down_proj"])  # [E, H, F] (checkpoint: output_linear.weight)
        sh = sd[p + "shared_mlp.input_linear.weight"]  # [2S, H]: gate rows (the SiLU'd half), then up rows
        put(b + "ffn_gate_shexp.weight", sh[:S])
        put(b + "ffn_up_shexp.weight", sh[S:])
        put(b + "ffn_down_shexp.weight", sd[p + "shared_mlp.output_linear.weight"])
    print("special token ids:", write_bpe_tokenizer(w, "granitehybrid", cfg.vocab_size))
    finish_gguf(w)


def export(family, cfg, m, path, mxfp4=True):
    """mxfp4=False (checks only): gpt-oss experts as F32 copies of their MXFP4 values."""
    if family == "lfm2":
        return export_lfm2(cfg, m, path)
    if family in ("phi3", "phi3longrope"):
        return export_phi3(cfg, m, path, family)
    if family in ("deepseek2", "deepseek3"):
        return export_deepseek2(family, cfg, m, path)
    if family == "glm4moe":
        return export_glm4moe(cfg, m, path)
    if family == "nemotron_h":
        return export_nemotron_h(cfg, m, path)
    if family == "granitehybrid":
        return export_granitehybrid(cfg, m, path)
    A = ARCH[family]
    w = gguf.GGUFWriter(path, A)
    w.add_type("model")
    w.add_name(f"lockstep tiny {family}")
    L, H = cfg.num_hidden_layers, cfg.hidden_size
    nh, nkv = cfg.num_attention_heads, cfg.num_key_value_heads
    hd = getattr(cfg, "head_dim", None) or H // nh
    # the converter's key order: TextModel.set_gguf_parameters, then the family's additions
    if family == "gemma2":
        w.add_context_length(cfg.max_position_embeddings)
        w.add_embedding_length(H)
        w.add_block_count(L)
        w.add_feed_forward_length(cfg.intermediate_size)
        w.add_head_count(nh)
        w.add_head_count_kv(nkv)
        w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
        w.add_key_length(hd)
        w.add_value_length(hd)
        w.add_file_type(gguf.LlamaFileType.ALL_F32)
        w.add_attn_logit_softcapping(cfg.attn_logit_softcapping)
        w.add_final_logit_softcapping(cfg.final_logit_softcapping)
        w.add_sliding_window(cfg.sliding_window)
    else:
        w.add_block_count(L)
        w.add_context_length(cfg.max_position_embeddings)
        w.add_embedding_length(H)
        w.add_feed_forward_length(cfg.intermediate_size)
        w.add_head_count(nh)
        w.add_head_count_kv(nkv)
        rp = cfg.rope_parameters
        if rp["rope_type"] == "yarn":
            w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
            w.add_rope_scaling_factor(rp["factor"])
            w.add_rope_scaling_orig_ctx_len(rp["original_max_position_embeddings"])
            w.add_rope_scaling_yarn_beta_fast(rp["beta_fast"])
            w.add_rope_scaling_yarn_beta_slow(rp["beta_slow"])
        w.add_rope_freq_base(rp["rope_theta"])
        w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
        if family == "qwen3moe":
            w.add_expert_count(cfg.num_experts)
            w.add_expert_used_count(cfg.num_experts_per_tok)
        if family in ("gptoss", "granitemoe"):
            w.add_expert_count(cfg.num_local_experts)
            w.add_expert_used_count(cfg.num_experts_per_tok)
        if family not in ("qwen2", "granite", "granitemoe", "olmo2"):  # (the converter writes them only from a config's head_dim: Qwen2's have none, Granite's is dropped)
            w.add_key_length(hd)
            w.add_value_length(hd)
        w.add_file_type(gguf.LlamaFileType.MOSTLY_MXFP4_MOE if family == "gptoss" else gguf.LlamaFileType.ALL_F32)
        if family in ("llama", "granite", "granitemoe", "mistral3"):
            w.add_vocab_size(cfg.vocab_size)
            w.add_rope_dimension_count(hd)
        if family == "mistral3":
            w.add_rope_scaling_yarn_log_mul(rp["mscale_all_dim"])
            w.add_attn_temperature_scale(rp["llama_4_scaling_beta"])
        if family in ("granite", "granitemoe"):
            w.add_attention_scale(cfg.attention_multiplier)
            w.add_embedding_scale(cfg.embedding_multiplier)
            w.add_residual_scale(cfg.residual_multiplier)
            w.add_logit_scale(cfg.logits_scaling)
        if family == "qwen3moe":
            w.add_expert_feed_forward_length(cfg.moe_intermediate_size)
        if family == "gptoss":
            w.add_sliding_window(cfg.sliding_window)
            w.add_expert_feed_forward_length(cfg.intermediate_size)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    put = functools.partial(put_f32, w)

    def put_mxfp4(name, t):
        if not mxfp4:
            return put(name, t)
        q = gguf.quants.quantize(t.contiguous().numpy().astype(np.float32), gguf.GGMLQuantizationType.MXFP4)
        w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.MXFP4)

    sd = dict(m.named_parameters())
    norm = (lambda t: t + 1) if family == "gemma2" else (lambda t: t)
    put("token_embd.weight", sd["model.embed_tokens.weight"])
    put("output_norm.weight", norm(sd["model.norm.weight"]))
    if not cfg.tie_word_embeddings:
        put("output.weight", sd["lm_head.weight"])
    if family == "llama":
        put("rope_freqs.weight", llama3_rope_factors(cfg.rope_parameters, hd))
    for i in range(L):
        p = f"model.layers.{i}."
        b = f"blk.{i}."
        a = p + "self_attn."
        if family != "olmo2":  # (OLMo 2 has no norm before attention or FFN)
            put(b + "attn_norm.weight", norm(sd[p + "input_layernorm.weight"]))
        q, k = sd[a + "q_proj.weight"], sd[a + "k_proj.weight"]
        if family in ("llama", "granite", "granitemoe", "mistral3"):
            q, k = permute_qk(q, nh), permute_qk(k, nkv)
        put(b + "attn_q.weight", q)
        put(b + "attn_k.weight", k)
        put(b + "attn_v.weight", sd[a + "v_proj.weight"])
        put(b + "attn_output.weight", sd[a + "o_proj.weight"])
        if family == "gptoss":
            for src, dst in (("q_proj", "attn_q"), ("k_proj", "attn_k"), ("v_proj", "attn_v"), ("o_proj", "attn_output")):
                put(f"{b}{dst}.bias", sd[f"{a}{src}.bias"])
            put(b + "attn_sinks.weight", sd[a + "sinks"])
        if family == "qwen2":  # q, k and v have biases, the output projection none
            for src, dst in (("q_proj", "attn_q"), ("k_proj", "attn_k"), ("v_proj", "attn_v")):
                put(f"{b}{dst}.bias", sd[f"{a}{src}.bias"])
        if family == "granite":  # attention_bias: all four, q and k permuted as their rows
            put(b + "attn_q.bias", permute_qk(sd[a + "q_proj.bias"], nh))
            put(b + "attn_k.bias", permute_qk(sd[a + "k_proj.bias"], nkv))
            put(b + "attn_v.bias", sd[a + "v_proj.bias"])
            put(b + "attn_output.bias", sd[a + "o_proj.bias"])
        if family in ("qwen3", "qwen3moe", "olmo2"):  # (OLMo 2's over the whole projection: [64] and [32])
            put(b + "attn_q_norm.weight", sd[a + "q_norm.weight"])
            put(b + "attn_k_norm.weight", sd[a + "k_norm.weight"])
        if family == "gemma2":
            put(b + "post_attention_norm.weight", norm(sd[p + "post_attention_layernorm.weight"]))
            put(b + "ffn_norm.weight", norm(sd[p + "pre_feedforward_layernorm.weight"]))
            put(b + "post_ffw_norm.weight", norm(sd[p + "post_feedforward_layernorm.weight"]))
        elif family == "gptoss":
            put(b + "post_attention_norm.weight", sd[p + "post_attention_layernorm.weight"])
        elif family == "olmo2":
            put(b + "post_attention_norm.weight", sd[p + "post_attention_layernorm.weight"])
            put(b + "post_ffw_norm.weight", sd[p + "post_feedforward_layernorm.weight"])
        else:
            put(b + "ffn_norm.weight", sd[p + "post_attention_layernorm.weight"])
        if family in ("qwen3moe", "granitemoe"):
            # (granitemoe: the converter splits block_sparse_moe's input_linear the same way)
            mp = p + ("mlp." if family == "qwen3moe" else "block_sparse_moe.")
            put(b + "ffn_gate_inp.weight", sd[mp + ("gate.weight" if family == "qwen3moe" else "router.weight")])
            F = cfg.moe_intermediate_size if family == "qwen3moe" else cfg.intermediate_size
            gu = sd[mp + "experts.gate_up_proj"]  # [E, 2F, H]: gate rows then up rows
            put(b + "ffn_gate_exps.weight", gu[:, :F, :])
            put(b + "ffn_up_exps.weight", gu[:, F:, :])
            put(b + "ffn_down_exps.weight", sd[mp + "experts.down_proj"])  # [E, H, F]
        elif family == "gptoss":
            mp = p + "mlp."
            put(b + "ffn_gate_inp.weight", sd[mp + "router.weight"])
            put(b + "ffn_gate_inp.bias", sd[mp + "router.bias"])
            gate, up, down = gptoss_expert_views(m.model.layers[i].mlp)
            put_mxfp4(b + "ffn_gate_exps.weight", gate)
            put_mxfp4(b + "ffn_up_exps.weight", up)
            put_mxfp4(b + "ffn_down_exps.weight", down)
            gub = sd[mp + "experts.gate_up_proj_bias"]  # [E, 2F]: gate even, up odd
            put(b + "ffn_gate_exps.bias", gub[:, ::2])
            put(b + "ffn_up_exps.bias", gub[:, 1::2])
            put(b + "ffn_down_exps.bias", sd[mp + "experts.down_proj_bias"])
        else:
            put(b + "ffn_gate.weight", sd[p + "mlp.gate_proj.weight"])
            put(b + "ffn_up.weight", sd[p + "mlp.up_proj.weight"])
            put(b + "ffn_down.weight", sd[p + "mlp.down_proj.weight"])
            if family == "granite":  # mlp_bias
                for nm in ("gate", "up", "down"):
                    put(f"{b}ffn_{nm}.bias", sd[f"{p}mlp.{nm}_proj.bias"])
    if family == "gemma2":
        write_spm_tokenizer(w, cfg.vocab_size)
    else:
        specials = write_bpe_tokenizer(w, family, cfg.vocab_size)
        print("special token ids:", specials)
    finish_gguf(w)


# ----------------------------------------------------------------------------------------------
# diagnostics


def prompt_logits(cfg, m):
    tokens = np.random.default_rng(SEED).integers(0, cfg.vocab_size, N_PROMPT)  # write_golden's prompt
    with torch.no_grad():
        return m(torch.tensor(tokens[None])).logits[0]


def describe(family, cfg, m):
    """What the golden logits depend on: printed for the record, nothing written."""
    if family == "llama":
        print("rope_freqs:", [round(x, 4) for x in llama3_rope_factors(cfg.rope_parameters, cfg.head_dim).tolist()])
    print("layer_types:", getattr(cfg, "layer_types", None))
    ref = prompt_logits(cfg, m)
    if family == "gptoss":
        re = m.model.rotary_emb
        base_inv = 1.0 / (cfg.rope_parameters["rope_theta"] ** (torch.arange(0, cfg.head_dim, 2).float() / cfg.head_dim))
        print("yarn inv_freq / plain inv_freq:", [round(x, 4) for x in (re.inv_freq / base_inv).tolist()],
              " attention_scaling:", re.attention_scaling)
    if family == "llama":  # how much the llama3 factors matter
        re = m.model.rotary_emb
        inv = re.inv_freq.clone()
        re.inv_freq.copy_(1.0 / (cfg.rope_parameters["rope_theta"] ** (torch.arange(0, cfg.head_dim, 2).float() / cfg.head_dim)))
        print(f"max |logit change| without the llama3 factors: {(prompt_logits(cfg, m) - ref).abs().max().item():.3f}")
        re.inv_freq.copy_(inv)
    if family == "gptoss":
        sinks = [l.self_attn.sinks.detach().clone() for l in m.model.layers]
        with torch.no_grad():
            for l in m.model.layers:
                l.self_attn.sinks.fill_(-1e4)
        print(f"max |logit change| without the sinks: {(prompt_logits(cfg, m) - ref).abs().max().item():.3f}")
        with torch.no_grad():
            for l, s in zip(m.model.layers, sinks):
                l.self_attn.sinks.copy_(s)
    if family in ("qwen3moe", "gptoss"):  # near-ties in expert selection make a file fragile
        gaps = []

        def hook(mod, args, out):
            x = args[0].reshape(-1, args[0].shape[-1])
            if family == "gptoss":
                z = torch.nn.functional.linear(x, mod.weight, mod.bias)
            else:
                z = torch.softmax(torch.nn.functional.linear(x, mod.weight), dim=-1)
            top = torch.sort(z, dim=-1, descending=True).values
            gaps.append((top[:, mod.top_k - 1] - top[:, mod.top_k]).min().item())

        router = "router" if family == "gptoss" else "gate"
        hs = [getattr(l.mlp, router).register_forward_hook(hook) for l in m.model.layers]
        prompt_logits(cfg, m)
        for h in hs:
            h.remove()
        what = "router logits" if family == "gptoss" else "router probabilities"
        print(f"smallest gap between the k-th and (k+1)-th {what} (whole prompt): {min(gaps):.2e}")
    if family in ("deepseek2", "deepseek3", "glm4moe"):
        describe_routed(family, cfg, m, ref)
    if family == "nemotron_h":
        describe_nemotron_h(cfg, m, ref)
    if family == "granitehybrid":
        describe_granitehybrid(cfg, m, ref)
    if family == "phi3longrope":
        describe_phi3longrope(cfg, m, ref)
    if family == "gemma2":
        from transformers.models.gemma2 import modeling_gemma2 as mg
        scores = []
        orig = mg.eager_attention_forward

        def spy(module, query, key, value, attention_mask, dropout=0.0, scaling=None, softcap=None, **kw):
            kst = mg.repeat_kv(key, module.num_key_value_groups)
            scores.append((torch.matmul(query, kst.transpose(2, 3)) * scaling).abs().max().item())
            return orig(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, softcap=softcap, **kw)

        mg.eager_attention_forward = spy
        try:
            tokens = np.random.default_rng(SEED).integers(0, cfg.vocab_size, N_PROMPT)
            with torch.no_grad():
                raw = m.lm_head(m.model(torch.tensor(tokens[None])).last_hidden_state)
        finally:
            mg.eager_attention_forward = orig
        print(f"max |attention score| before the cap {max(scores):.2f} (cap {cfg.attn_logit_softcapping}),"
              f" max |logit| before the final cap {raw.abs().max().item():.2f} (cap {cfg.final_logit_softcapping})")
        for l in m.model.layers:
            l.self_attn.attn_logit_softcapping = None
        print(f"max |logit change| without the attention soft-cap: {(prompt_logits(cfg, m) - ref).abs().max().item():.3f}")
        for l in m.model.layers:
            l.self_attn.attn_logit_softcapping = cfg.attn_logit_softcapping


def longrope_inv_freq(cfg, which):
    """inv_freq_i = 1 / (factor_i * theta^(2i/d)) over the d rotary dims, factor = the "short" or "long" set."""
    rp = cfg.rope_parameters
    d = int(cfg.hidden_size // cfg.num_attention_heads * rp["partial_rotary_factor"])
    f = torch.tensor(rp[which + "_factor"], dtype=torch.float32)
    return 1.0 / (f * rp["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))


def longrope_pinned(cfg, m, tokens, which, step=False):
    """Logits of tokens with HF's per-forward choice of factors switched off and the frequencies pinned to one set
    (what llama.cpp does for a whole context: long iff n_ctx > original). step: one token at a time through the
    cache, else the whole prompt at once."""
    re = m.model.rotary_emb
    saved_type, saved_inv = re.rope_type, re.inv_freq.clone()
    re.rope_type = "pinned"  # (not "longrope": dynamic_rope_update then leaves inv_freq alone)
    re.inv_freq.copy_(longrope_inv_freq(cfg, which))
    try:
        with torch.no_grad():
            ids = torch.tensor(np.asarray(tokens, dtype=np.int64)[None])
            if not step:
                return m(ids).logits[0]
            out = m(ids[:, :1], use_cache=True)
            rows = [out.logits[0, -1]]
            for t in range(1, ids.shape[1]):
                out = m(ids[:, t:t + 1], past_key_values=out.past_key_values, use_cache=True)
                rows.append(out.logits[0, -1])
            return torch.stack(rows)
    finally:
        re.rope_type = saved_type
        re.inv_freq.copy_(saved_inv)


def describe_phi3longrope(cfg, m, ref):
    """Which factor set HF uses for each golden prompt (the inv_freq it leaves behind, and the logits against both
    sets pinned), the attention factor it puts on cos and sin, and how much the factors move the logits."""
    rp = cfg.rope_parameters
    re = m.model.rotary_emb
    print("longrope short_factor:", rp["short_factor"], " long_factor:", rp["long_factor"],
          " original context:", rp["original_max_position_embeddings"], " max_position_embeddings:",
          cfg.max_position_embeddings)
    cos0 = []
    hook = re.register_forward_hook(lambda mod, args, out: cos0.append(out[0][0, 0].clone()))
    tokens = np.random.default_rng(SEED).integers(0, cfg.vocab_size, N_PROMPT)  # write_golden's prompt
    for n in (N_PROMPT, N_PROMPT_SHORT):
        with torch.no_grad():
            got = m(torch.tensor(tokens[None, :n])).logits[0]
        used = [w for w in ("short", "long") if torch.equal(re.inv_freq, longrope_inv_freq(cfg, w))]
        d = {w: (got - longrope_pinned(cfg, m, tokens[:n], w)).abs().max().item() for w in ("short", "long")}
        print(f"{n}-token prompt: HF's inv_freq after the forward is the {used} set; max |logit - pinned short| "
              f"{d['short']:.3e}, |logit - pinned long| {d['long']:.3e}; max |logit| {got.abs().max().item():.3f}")
    hook.remove()
    print(f"HF attention_scaling {re.attention_scaling!r}; cos at position 0 (every dim, both prompts) "
          f"{sorted(set(torch.cat(cos0).tolist()))}; converter attn_factor {phi3_longrope_attn_factor(cfg)!r}"
          f" (float32 {float(np.float32(phi3_longrope_attn_factor(cfg)))!r})")
    step = longrope_pinned(cfg, m, tokens, "long", step=True)
    print(f"100-token prompt, long factors pinned, one token at a time vs whole: max |diff| "
          f"{(step - ref).abs().max().item():.3e} (write_golden's own token-at-a-time figure below is large: HF "
          f"picks the factors per forward, short while the cache holds <= {rp['original_max_position_embeddings']} tokens)")
    flat = longrope_pinned(cfg, m, tokens, "short")
    saved = re.attention_scaling
    re.attention_scaling = 1.0
    with torch.no_grad():
        no_attn = m(torch.tensor(tokens[None])).logits[0]
    re.attention_scaling = saved
    print(f"max |logit change| on the 100-token prompt: short factors instead of long {(flat - ref).abs().max().item():.3f},"
          f" attention factor 1 instead of {saved:.6f} {(no_attn - ref).abs().max().item():.3f}")


def check_phi3longrope(out):
    """Both golden files against HF with the factor set pinned (long for the 100-token file, short for the 48)."""
    cfg, m = make_model("phi3longrope")
    for name, which in (("phi3longrope_tiny", "long"), ("phi3longrope_short", "short")):
        n, tokens, golden = read_golden_file(f"{out}/{name}.golden")
        other = "short" if which == "long" else "long"
        same = longrope_pinned(cfg, m, tokens, which).numpy()
        diff = longrope_pinned(cfg, m, tokens, other).numpy()
        print(f"{name}.golden ({n} tokens): max |golden - HF with {which} factors pinned| {np.abs(golden - same).max():.3e},"
              f" with {other} pinned {np.abs(golden - diff).max():.3e}; max |logit| {np.abs(golden).max():.4f}")


def describe_routed(family, cfg, m, ref):
    """DeepSeek / GLM: the logits' spread, the YaRN numbers, and what the router's bias and group limit
    change (each MoE layer's choice for every prompt token, against the plain top-k)."""
    am = ref.argmax(-1)
    print(f"logits: std {ref.std().item():.3f}, max |logit| {ref.abs().max().item():.3f},"
          f" {len(set(am.tolist()))} distinct argmax tokens over {ref.shape[0]} positions")
    if family != "glm4moe":
        re = m.model.rotary_emb
        d = cfg.qk_rope_head_dim
        base_inv = 1.0 / (cfg.rope_parameters["rope_theta"] ** (torch.arange(0, d, 2).float() / d))
        print("yarn inv_freq / plain inv_freq:", [round(x, 4) for x in (re.inv_freq / base_inv).tolist()],
              " cos/sin factor (attention_scaling):", re.attention_scaling,
              f" softmax scale: {m.model.layers[0].self_attn.scaling:.6f} = {cfg.qk_head_dim}^-0.5 *"
              f" {m.model.layers[0].self_attn.scaling * math.sqrt(cfg.qk_head_dim):.6f}")
    k, E = cfg.num_experts_per_tok, cfg.n_routed_experts
    stats = dict(tokens=0, vs_plain=0, vs_unbiased=0, gap=float("inf"), group_gap=float("inf"))

    def hook(mod, args, out):
        x = args[0].reshape(-1, args[0].shape[-1]).float()
        logits = torch.nn.functional.linear(x, mod.weight.float())
        probs = torch.softmax(logits, -1) if family == "deepseek2" else torch.sigmoid(logits)
        sel = probs + mod.e_score_correction_bias if hasattr(mod, "e_score_correction_bias") else probs
        chosen = out[2].sort(-1).values
        plain = sel.topk(k, -1).indices.sort(-1).values  # no group limit
        unbiased = probs.topk(k, -1).indices.sort(-1).values  # no bias, no group limit
        stats["tokens"] += x.shape[0]
        stats["vs_plain"] += (chosen != plain).any(-1).sum().item()
        stats["vs_unbiased"] += (chosen != unbiased).any(-1).sum().item()
        masked = sel.clone()
        if cfg.n_group and cfg.n_group > 1:
            gs = sel.view(-1, cfg.n_group, E // cfg.n_group).topk(2, -1).values.sum(-1)
            gsort = gs.sort(-1, descending=True).values
            stats["group_gap"] = min(stats["group_gap"], (gsort[:, cfg.topk_group - 1] - gsort[:, cfg.topk_group]).min().item())
            keep = torch.zeros_like(gs).scatter_(1, gs.topk(cfg.topk_group, -1).indices, 1.0)
            masked = masked.masked_fill(keep.repeat_interleave(E // cfg.n_group, -1) == 0, float("-inf"))
        top = masked.sort(-1, descending=True).values
        stats["gap"] = min(stats["gap"], (top[:, k - 1] - top[:, k]).min().item())

    hs = [l.mlp.gate.register_forward_hook(hook) for l in m.model.layers if hasattr(l.mlp, "gate")]
    prompt_logits(cfg, m)
    for h in hs:
        h.remove()
    print(f"routing over {stats['tokens']} (token, MoE layer) pairs: {stats['vs_plain']} differ from the plain top-{k} of"
          f" the selection scores (group limit), {stats['vs_unbiased']} from the top-{k} of the unbiased scores;"
          f" smallest gap k-th / (k+1)-th eligible score {stats['gap']:.2e}"
          + (f", smallest gap between the kept and the first dropped group {stats['group_gap']:.2e}"
             if cfg.n_group and cfg.n_group > 1 else ""))


def describe_nemotron_h(cfg, m, ref):
    """The logits' spread, the SSM's A and dt over the prompt (dt against HF's time_step_min clamp of the
    chunked scan, which its one-token step and llama.cpp do not apply), and how much each block kind
    moves the logits."""
    am = ref.argmax(-1)
    print(f"logits: std {ref.std().item():.3f}, max |logit| {ref.abs().max().item():.3f},"
          f" {len(set(am.tolist()))} distinct argmax tokens over {ref.shape[0]} positions")
    nh = cfg.mamba_num_heads
    dts = {}

    def hook(i):
        def f(mod, args, out):
            dts[i] = torch.nn.functional.softplus(out[0, :, -nh:] + m.model.layers[i].mixer.dt_bias).detach()
        return f

    hs = [l.mixer.in_proj.register_forward_hook(hook(i)) for i, l in enumerate(m.model.layers)
          if l.block_type == "linear_attention"]
    prompt_logits(cfg, m)
    for h in hs:
        h.remove()
    for i, dt in dts.items():
        A = -torch.exp(m.model.layers[i].mixer.A_log.detach())
        dA = torch.exp(dt * A)
        print(f"layer {i}: A in [{A.min().item():.3f}, {A.max().item():.3f}], dt = softplus(dt_raw + dt_bias) in"
              f" [{dt.min().item():.4f}, {dt.max().item():.4f}] (clamp {m.model.layers[i].mixer.time_step_limit[0]}),"
              f" exp(dt A) in [{dA.min().item():.3f}, {dA.max().item():.3f}]")
    with torch.no_grad():
        for kind in ("linear_attention", "full_attention", "mlp"):
            saved = []
            for l in m.model.layers:
                if l.block_type == kind:
                    saved.append((l, l.norm.weight.clone()))
                    l.norm.weight.zero_()  # the block adds mixer(0) = 0 (no biases): skipped
            print(f"max |logit change| without the {kind} blocks: {(prompt_logits(cfg, m) - ref).abs().max().item():.3f}")
            for l, wgt in saved:
                l.norm.weight.copy_(wgt)


def rms_np(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def silu_np(x):
    return x / (1.0 + np.exp(-x))


def mamba2_numpy(T, b, h, d_inner, ds, nh, ng, K, eps):
    """A Mamba-2 mixer (GGUF tensors T, prefix b) on the normed block input h [n, n_embd], float64, with the
    SEQUENTIAL recurrence, token by token, as llama.cpp's build_mamba2_layer and ggml_ssm_scan compute it (no
    chunking, no dt clamp); zero conv and SSM state before the first token."""
    n, hd_ssm = h.shape[0], d_inner // nh
    zxbcdt = h @ T[b + "ssm_in.weight"].T
    z, xbc, dt = zxbcdt[:, :d_inner], zxbcdt[:, d_inner:2 * d_inner + 2 * ng * ds], zxbcdt[:, -nh:]
    w, cb = T[b + "ssm_conv1d.weight"], T[b + "ssm_conv1d.bias"]  # [C, K], [C]
    pad = np.concatenate([np.zeros((K - 1, xbc.shape[1])), xbc])
    xbc = silu_np(sum(pad[k:k + n] * w[:, k] for k in range(K)) + cb)  # tap K-1 on the current token
    xs = xbc[:, :d_inner].reshape(n, nh, hd_ssm)
    Bm = xbc[:, d_inner:d_inner + ng * ds].reshape(n, ng, ds)
    Cm = xbc[:, d_inner + ng * ds:].reshape(n, ng, ds)
    dt = np.logaddexp(0.0, dt + T[b + "ssm_dt.bias"])  # softplus, no clamp
    Av, Dv = T[b + "ssm_a"][:, 0], T[b + "ssm_d"][:, 0]
    grp = np.arange(nh) // (nh // ng)  # head -> group of B and C
    state = np.zeros((nh, hd_ssm, ds))
    y = np.empty((n, nh, hd_ssm))
    for t in range(n):
        dA = np.exp(dt[t] * Av)  # [nh]
        state = state * dA[:, None, None] + (dt[t][:, None] * xs[t])[:, :, None] * Bm[t, grp][:, None, :]
        y[t] = np.einsum("hpn,hn->hp", state, Cm[t, grp]) + Dv[:, None] * xs[t]
    y = y.reshape(n, d_inner) * silu_np(z)
    y = rms_np(y.reshape(n, ng, d_inner // ng), T[b + "ssm_norm.weight"], eps).reshape(n, d_inner)
    return y @ T[b + "ssm_out.weight"].T


def nope_attention_numpy(T, b, h, nh, nkv, hd, scale):
    """Causal GQA attention without positional encoding: scores q.k * scale, query head i reads KV head
    i / (nh / nkv); the heads concatenated -> attn_output."""
    n = h.shape[0]
    q = (h @ T[b + "attn_q.weight"].T).reshape(n, nh, hd)
    k = (h @ T[b + "attn_k.weight"].T).reshape(n, nkv, hd)
    v = (h @ T[b + "attn_v.weight"].T).reshape(n, nkv, hd)
    kh = np.arange(nh) // (nh // nkv)
    s = np.einsum("thd,shd->hts", q, k[:, kh]) * scale
    s = np.where(np.tril(np.ones((n, n), bool))[None], s, -np.inf)
    p_ = np.exp(s - s.max(-1, keepdims=True))
    p_ /= p_.sum(-1, keepdims=True)
    return np.einsum("hts,shd->thd", p_, v[:, kh]).reshape(n, nh * hd) @ T[b + "attn_output.weight"].T


def nemotron_h_numpy_logits(path, tokens):
    """An independent float64 forward of a nemotron_h GGUF (this script's or llama.cpp's converter's),
    read from the file alone, with the SEQUENTIAL recurrence, token by token, as llama.cpp's graph and
    ggml_ssm_scan compute it (no chunking, no dt clamp)."""
    r = gguf.GGUFReader(path)

    def kv(key):
        return r.fields[key].contents()

    T = {t.name: np.array(t.data, dtype=np.float64) for t in r.tensors}  # numpy shape = ne reversed
    A_ = "nemotron_h."
    L, nh_attn = kv(A_ + "block_count"), kv(A_ + "attention.head_count")
    hkv, ff = kv(A_ + "attention.head_count_kv"), kv(A_ + "feed_forward_length")
    eps = kv(A_ + "attention.layer_norm_rms_epsilon")
    d_inner, ds = kv(A_ + "ssm.inner_size"), kv(A_ + "ssm.state_size")
    nh, ng, K = kv(A_ + "ssm.time_step_rank"), kv(A_ + "ssm.group_count"), kv(A_ + "ssm.conv_kernel")
    hd = kv(A_ + "attention.key_length")
    n = len(tokens)

    def rms(x, w):
        return rms_np(x, w, eps)

    x = T["token_embd.weight"][tokens]
    for il in range(L):
        b = f"blk.{il}."
        h = rms(x, T[b + "attn_norm.weight"])
        if hkv[il] == 0 and ff[il] == 0:  # recurrent (Mamba-2) block
            out = mamba2_numpy(T, b, h, d_inner, ds, nh, ng, K, eps)
        elif ff[il] == 0:  # attention block: no positional encoding
            out = nope_attention_numpy(T, b, h, nh_attn, hkv[il], hd, 1.0 / math.sqrt(hd))
        else:  # MLP block: relu^2, not gated
            out = np.maximum(h @ T[b + "ffn_up.weight"].T, 0.0) ** 2 @ T[b + "ffn_down.weight"].T
        x = x + out
    return rms(x, T["output_norm.weight"]) @ T["output.weight"].T


def read_golden_file(golden_path):
    with open(golden_path, "rb") as f:
        n, V = np.frombuffer(f.read(8), "<i4")
        tokens = np.frombuffer(f.read(4 * n), "<i4")
        golden = np.frombuffer(f.read(4 * n * V), "<f4").reshape(n, V)
    return n, tokens, golden


def check_nemotron_h(gguf_path, golden_path):
    n, tokens, golden = read_golden_file(golden_path)
    ref = nemotron_h_numpy_logits(gguf_path, tokens)
    print(f"numpy sequential forward from the GGUF (float64) vs golden: max |diff| {np.abs(ref - golden).max():.3e}"
          f" (max |logit| {np.abs(golden).max():.3f}), argmax agrees at {(ref.argmax(-1) == golden.argmax(-1)).sum()}/{n}")


def describe_granitehybrid(cfg, m, ref):
    """The logits' spread, the SSM's A and dt over the prompt, the router's closest calls, and how much each
    part and each multiplier moves the logits (HF side; the GGUF-side variants are in check_granitehybrid)."""
    tokens = np.random.default_rng(SEED).integers(0, cfg.vocab_size, N_PROMPT)
    am = ref.argmax(-1)
    print(f"logits: std {ref.std().item():.3f}, max |logit| {ref.abs().max().item():.3f},"
          f" {len(set(am.tolist()))} distinct argmax tokens over {ref.shape[0]} positions,"
          f" argmax = the input token at {(am.numpy() == tokens).sum()}")
    nh, k = cfg.mamba_n_heads, cfg.num_experts_per_tok
    dts, gaps = {}, []

    def dt_hook(i):
        def f(mod, args, out):
            dts[i] = torch.nn.functional.softplus(out[0, :, -nh:] + m.model.layers[i].mamba.dt_bias).detach()
        return f

    def router_hook(mod, args, out):
        top = out[0].sort(-1, descending=True).values  # router logits
        gaps.append((top[:, k - 1] - top[:, k]).min().item())

    hs = [l.mamba.in_proj.register_forward_hook(dt_hook(i)) for i, l in enumerate(m.model.layers) if l.mamba is not None]
    hs += [l.block_sparse_moe.router.register_forward_hook(router_hook) for l in m.model.layers]
    prompt_logits(cfg, m)
    for h in hs:
        h.remove()
    for i, dt in dts.items():
        A = -torch.exp(m.model.layers[i].mamba.A_log.detach())
        dA = torch.exp(dt * A)
        print(f"layer {i}: A in [{A.min().item():.3f}, {A.max().item():.3f}], dt = softplus(dt_raw + dt_bias) in"
              f" [{dt.min().item():.4f}, {dt.max().item():.4f}], exp(dt A) in [{dA.min().item():.3f}, {dA.max().item():.3f}]")
    print(f"smallest gap between the {k}-th and {k + 1}-th router logits (whole prompt, all layers): {min(gaps):.2e}")

    def change(what):
        print(f"max |logit change| {what}: {(prompt_logits(cfg, m) - ref).abs().max().item():.3f}")

    with torch.no_grad():
        for what, get in (("without the shared expert", lambda l: l.shared_mlp.output_linear.weight),
                          ("without the routed experts", lambda l: l.block_sparse_moe.experts.down_proj)):
            saved = [get(l).clone() for l in m.model.layers]
            for l in m.model.layers:
                get(l).zero_()
            change(what)
            for l, wgt in zip(m.model.layers, saved):
                get(l).copy_(wgt)
        for kind, what in (("linear_attention", "Mamba-2"), ("full_attention", "attention")):
            saved = []
            for l in m.model.layers:
                if l.block_type == kind:
                    saved.append((l, l.input_layernorm.weight.clone()))
                    l.input_layernorm.weight.zero_()  # the mixer sees 0 and adds 0 (Mamba: z = 0 gates y to 0)
            change(f"without the {what} mixers (their input zeroed)")
            for l, wgt in saved:
                l.input_layernorm.weight.copy_(wgt)
    m.model.embedding_multiplier = 1.0
    change("with embedding_multiplier 1")
    m.model.embedding_multiplier = cfg.embedding_multiplier
    for l in m.model.layers:
        l.residual_multiplier = 1.0
    change("with residual_multiplier 1")
    for l in m.model.layers:
        l.residual_multiplier = cfg.residual_multiplier
    for l in m.model.layers:
        if l.self_attn is not None:
            l.self_attn.scaling = 1.0 / math.sqrt(l.self_attn.head_dim)
    change("with the attention scale 1/sqrt(head_dim) = 0.25 (no attention.scale)")
    for l in m.model.layers:
        if l.self_attn is not None:
            l.self_attn.scaling = cfg.attention_multiplier


def granitehybrid_numpy_logits(path, tokens, variant=()):
    """An independent float64 forward of a granitehybrid GGUF (this script's or llama.cpp's converter's), read
    from the file alone, with llama.cpp's semantics (granite-hybrid.cpp, build_mamba2_layer with the sequential
    recurrence, build_moe_ffn). variant: deliberate mistakes, to show that the golden tells them apart."""
    r = gguf.GGUFReader(path)

    def kv(key):
        return r.fields[key].contents()

    T = {t.name: np.array(t.data, dtype=np.float64) for t in r.tensors}  # numpy shape = ne reversed
    A_ = "granitehybrid."
    L, nh_attn, hkv = kv(A_ + "block_count"), kv(A_ + "attention.head_count"), kv(A_ + "attention.head_count_kv")
    H = kv(A_ + "embedding_length")
    eps = kv(A_ + "attention.layer_norm_rms_epsilon")
    d_inner, ds = kv(A_ + "ssm.inner_size"), kv(A_ + "ssm.state_size")
    nh, ng, K = kv(A_ + "ssm.time_step_rank"), kv(A_ + "ssm.group_count"), kv(A_ + "ssm.conv_kernel")
    E, k_used = kv(A_ + "expert_count"), kv(A_ + "expert_used_count")
    emb_s, res_s = kv(A_ + "embedding_scale"), kv(A_ + "residual_scale")
    att_s, logit_s = kv(A_ + "attention.scale"), kv(A_ + "logit_scale")
    assert kv(A_ + "rope.scaling.finetuned") is False  # no rope
    hd = H // nh_attn  # (no key_length: n_embd / n_head)
    if "attn_scale_default" in variant:
        att_s = 1.0 / math.sqrt(hd)
    n = len(tokens)

    def rms(x, w):
        return rms_np(x, w, eps)

    def swiglu(h, gate, up, down):  # down(silu(gate h) * up h), gate / up [F, H], down [H, F]
        return (silu_np(h @ gate.T) * (h @ up.T)) @ down.T

    x = T["token_embd.weight"][tokens] * (1.0 if "no_embedding_scale" in variant else emb_s)
    for il in range(L):
        b = f"blk.{il}."
        h = rms(x, T[b + "attn_norm.weight"])
        if hkv[il] == 0:  # recurrent (Mamba-2) layer
            out = mamba2_numpy(T, b, h, d_inner, ds, nh, ng, K, eps)
        else:  # attention without positional encoding, scale attention.scale
            out = nope_attention_numpy(T, b, h, nh_attn, hkv[il], hd, att_s)
        x = x + out * res_s
        h = rms(x, T[b + "ffn_norm.weight"])
        p = np.exp(h @ T[b + "ffn_gate_inp.weight"].T)
        p /= p.sum(-1, keepdims=True)  # softmax over all experts
        top = np.argsort(-p, axis=-1, kind="stable")[:, :k_used]
        wts = np.take_along_axis(p, top, -1)
        if "no_renorm" not in variant:
            wts /= wts.sum(-1, keepdims=True)  # the k weights renormalised (= HF's softmax over the top-k logits)
        gate, up, down = T[b + "ffn_gate_exps.weight"], T[b + "ffn_up_exps.weight"], T[b + "ffn_down_exps.weight"]
        if "experts_up_gate_swapped" in variant:
            gate, up = up, gate
        moe = np.zeros_like(h)
        for t in range(n):
            for j, e in enumerate(top[t]):
                moe[t] += wts[t, j] * swiglu(h[t], gate[e], up[e], down[e])
        g_sh, u_sh = T[b + "ffn_gate_shexp.weight"], T[b + "ffn_up_shexp.weight"]
        if "shexp_up_gate_swapped" in variant:
            g_sh, u_sh = u_sh, g_sh
        shared = 0.0 if "no_shared" in variant else swiglu(h, g_sh, u_sh, T[b + "ffn_down_shexp.weight"])
        x = x + (moe + shared) * (1.0 if "ffn_unscaled" in variant else res_s)
    return rms(x, T["output_norm.weight"]) @ T["token_embd.weight"].T / logit_s  # tied output


def check_granitehybrid(gguf_path, golden_path):
    n, tokens, golden = read_golden_file(golden_path)
    ref = granitehybrid_numpy_logits(gguf_path, tokens)
    print(f"numpy sequential forward from the GGUF (float64) vs golden: max |diff| {np.abs(ref - golden).max():.3e}"
          f" (max |logit| {np.abs(golden).max():.3f}), argmax agrees at {(ref.argmax(-1) == golden.argmax(-1)).sum()}/{n}")
    for v, what in (("no_renorm", "top-2 weights not renormalised"), ("no_shared", "no shared expert"),
                    ("shexp_up_gate_swapped", "shared expert's gate / up halves swapped"),
                    ("experts_up_gate_swapped", "experts' gate / up halves swapped"),
                    ("ffn_unscaled", "residual_scale on the mixer output only (not the FFN's)"),
                    ("attn_scale_default", "attention scale 1/sqrt(head_dim) instead of attention.scale"),
                    ("no_embedding_scale", "no embedding_scale")):
        d = np.abs(granitehybrid_numpy_logits(gguf_path, tokens, (v,)) - golden).max()
        print(f"  variant {what}: max |diff| {d:.3f}")


# ----------------------------------------------------------------------------------------------
# bench: Llama-3.2-1B shapes, random F16, written straight from numpy


def export_llama_bench(path):
    V, E, L, NH, NKV, HD, FF = 128256, 2048, 16, 32, 8, 64, 8192
    rp = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
    rng = np.random.default_rng(SEED)
    w = gguf.GGUFWriter(path, "llama")
    w.add_type("model")
    w.add_name("lockstep bench llama 1B random")
    w.add_block_count(L)
    w.add_context_length(131072)
    w.add_embedding_length(E)
    w.add_feed_forward_length(FF)
    w.add_head_count(NH)
    w.add_head_count_kv(NKV)
    w.add_rope_freq_base(rp["rope_theta"])
    w.add_layer_norm_rms_eps(1e-5)
    w.add_key_length(HD)
    w.add_value_length(HD)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_vocab_size(V)
    w.add_rope_dimension_count(HD)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)

    def mat(rows, cols, std):
        a = np.empty((rows, cols), dtype=np.float16)
        step = max(1, (1 << 24) // cols)
        for r in range(0, rows, step):
            a[r:r + step] = (rng.standard_normal((min(step, rows - r), cols), dtype=np.float32) * std).astype(np.float16)
        return a

    def normw(n):
        return (1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    w.add_tensor("token_embd.weight", mat(V, E, 0.02))  # tied: also the output projection
    w.add_tensor("output_norm.weight", normw(E))
    w.add_tensor("rope_freqs.weight", llama3_rope_factors(rp, HD).numpy())
    for i in range(L):
        b = f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", normw(E))
        w.add_tensor(b + "attn_q.weight", mat(NH * HD, E, E ** -0.5))
        w.add_tensor(b + "attn_k.weight", mat(NKV * HD, E, E ** -0.5))
        w.add_tensor(b + "attn_v.weight", mat(NKV * HD, E, E ** -0.5))
        w.add_tensor(b + "attn_output.weight", mat(E, NH * HD, (NH * HD) ** -0.5))
        w.add_tensor(b + "ffn_norm.weight", normw(E))
        w.add_tensor(b + "ffn_gate.weight", mat(FF, E, E ** -0.5))
        w.add_tensor(b + "ffn_up.weight", mat(FF, E, E ** -0.5))
        w.add_tensor(b + "ffn_down.weight", mat(E, FF, FF ** -0.5))
    write_bpe_tokenizer(w, "llama", V)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()


# bench: Qwen2.5-1.5B shapes (qwen2: q/k/v biases, NeoX rope, tied embeddings), random F16
def export_qwen2_bench(path):
    V, E, L, NH, NKV, HD, FF = 151936, 1536, 28, 12, 2, 128, 8960
    rng = np.random.default_rng(SEED)
    w = gguf.GGUFWriter(path, "qwen2")
    w.add_type("model")
    w.add_name("lockstep bench qwen2 1.5B random")
    w.add_block_count(L)
    w.add_context_length(32768)
    w.add_embedding_length(E)
    w.add_feed_forward_length(FF)
    w.add_head_count(NH)
    w.add_head_count_kv(NKV)
    w.add_rope_freq_base(1000000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)

    def mat(rows, cols, std):
        a = np.empty((rows, cols), dtype=np.float16)
        step = max(1, (1 << 24) // cols)
        for r in range(0, rows, step):
            a[r:r + step] = (rng.standard_normal((min(step, rows - r), cols), dtype=np.float32) * std).astype(np.float16)
        return a

    def vec(n, mean, std):
        return (mean + std * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    w.add_tensor("token_embd.weight", mat(V, E, 0.02))  # tied: also the output projection
    w.add_tensor("output_norm.weight", vec(E, 1.0, 0.1))
    for i in range(L):
        b = f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", vec(E, 1.0, 0.1))
        w.add_tensor(b + "attn_q.weight", mat(NH * HD, E, E ** -0.5))
        w.add_tensor(b + "attn_q.bias", vec(NH * HD, 0.0, 0.1))
        w.add_tensor(b + "attn_k.weight", mat(NKV * HD, E, E ** -0.5))
        w.add_tensor(b + "attn_k.bias", vec(NKV * HD, 0.0, 0.1))
        w.add_tensor(b + "attn_v.weight", mat(NKV * HD, E, E ** -0.5))
        w.add_tensor(b + "attn_v.bias", vec(NKV * HD, 0.0, 0.1))
        w.add_tensor(b + "attn_output.weight", mat(E, NH * HD, (NH * HD) ** -0.5))
        w.add_tensor(b + "ffn_norm.weight", vec(E, 1.0, 0.1))
        w.add_tensor(b + "ffn_gate.weight", mat(FF, E, E ** -0.5))
        w.add_tensor(b + "ffn_up.weight", mat(FF, E, E ** -0.5))
        w.add_tensor(b + "ffn_down.weight", mat(E, FF, FF ** -0.5))
    write_bpe_tokenizer(w, "qwen2", V)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__.split("\n\n")[2])
    out, family = sys.argv[1], sys.argv[2]
    size = sys.argv[3] if len(sys.argv) > 3 else "tiny"
    if size == "bench":
        if family == "llama":
            export_llama_bench(f"{out}/llama1b_f16.gguf")
        elif family == "qwen2":
            export_qwen2_bench(f"{out}/qwen2_1.5b_f16.gguf")
        else:
            raise SystemExit("bench: llama or qwen2")
        return
    cfg, m = make_model(family)
    describe(family, cfg, m)
    export(family, cfg, m, f"{out}/{family}_tiny.gguf")
    if family == "gptoss":
        # The same model with its experts as F32 copies of their MXFP4 values: lockstep (like
        # llama.cpp) rounds activations to 8 bits for a quantized matmul, which the float
        # oracle does not, so the golden bound is checked on this file and the MXFP4 one
        # within the rounding's reach (tests/models/test_families.cpp).
        export(family, cfg, m, f"{out}/gptossf32_tiny.gguf", mxfp4=False)
    write_golden(m, cfg.vocab_size, N_PROMPT, SEED, f"{out}/{family}_tiny.golden")
    if family == "phi3longrope":
        # the same prompt's first 48 tokens (write_golden's draw of 48 is that prefix): HF takes the short factors
        write_golden(m, cfg.vocab_size, N_PROMPT_SHORT, SEED, f"{out}/phi3longrope_short.golden")
        check_phi3longrope(out)
    if family == "nemotron_h":
        check_nemotron_h(f"{out}/{family}_tiny.gguf", f"{out}/{family}_tiny.golden")
    if family == "granitehybrid":
        check_granitehybrid(f"{out}/{family}_tiny.gguf", f"{out}/{family}_tiny.golden")


if __name__ == "__main__":
    main()
