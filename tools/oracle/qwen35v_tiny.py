#!/usr/bin/env python3
r"""Tiny random-weight Qwen3.5 vision-language oracle: Qwen3_5ForConditionalGeneration (a Qwen3-VL-style vision tower
with its patch merger, and a Qwen3.5 hybrid text model: gated delta net layers plus one full-attention layer, with
interleaved M-RoPE), the two GGUF files llama.cpp's converter makes of it (the text model, arch qwen35, and the mmproj,
arch clip, projector qwen3vl_merger), HF's preprocessing of the 7 test images (resized size, patch grid, normalized
image and pixel_values), the image embeddings, the M-RoPE positions and the logits of two chat prompts with images.

The model is built with `transformers` (5.24; float32, eager attention, random weights scaled for O(1) activations),
exported with the tensor names, metadata keys and transforms of llama.cpp's converter (conversion/qwen.py
Qwen3_5TextModel, conversion/qwen3vl.py Qwen3VLVisionModel, conversion/base.py TextModel and MmprojModel, at
d32676d; re-implemented here, not copied; the text tensors through qwen3_hybrid_tiny.write_tensors), and every
output is checked by a second, independent computation (see "Checks").

Usage: tools/oracle/qwen35v_tiny.py OUT_DIR [bench]
       (/work/oracle-venv/bin/python tools/oracle/qwen35v_tiny.py tests/data; needs torch, transformers, gguf, Pillow,
       regex; about 6 s on one core). Reads OUT_DIR/vision/<image file> (the test images vision_tiny.py draws; not
       rewritten) and writes, little-endian, 1 499 791 bytes in all:
         qwen35v_tiny.gguf            527 392   the text model
         qwen35v_tiny_mmproj.gguf     224 448   the vision tower and merger
         qwen35v_tiny.embd              6 948   the image embeddings of rgb100x37 and photo120x90
         qwen35v_tiny.golden           56 504   tokens and logits of the two-image prompt
         qwen35v_tiny_img1.golden      38 528   tokens and logits of the one-image prompt
         qwen35v_tiny.rope                532   the two-image prompt's M-RoPE positions
         qwen35v_tiny.prompt               95   the two-image prompt's text, <__media__> for each image
         qwen35v_tiny_img1.prompt          84   the one-image prompt's text
         vision/<name>.qwen35.pixels  55 316 .. 147 476 (7 files, 645 260 in all)
       `bench` writes instead OUT_DIR/qwen35v_bench_mmproj.gguf (672 422 944 bytes), OUT_DIR/qwen35v_bench.gguf
       (444 199 680) and OUT_DIR/bench512.png: Qwen3.5-4B's shapes with random weights written straight from numpy
       (no HF model, no golden, no check; numpy default_rng(3030), vision_tiny.bench_rng_helpers), for speed runs of
       the image encoder (about 20 s, 2.7 GB of memory).

qwen35v_bench_mmproj.gguf: the keys, key order, tensor names and layouts of the tiny mmproj below (the same writer
code: write_mmproj_keys, mmproj_tensors), with Qwen3.5-4B's vision_config (its config.json as public code quotes
it: depth 24, hidden_size 1024, num_heads 16, intermediate_size 4096, patch_size 16, temporal_patch_size 2,
spatial_merge_size 2, num_position_embeddings 2304 (a 48 x 48 grid), out_hidden_size 2560, gelu_pytorch_tanh, no
deepstack layers; the transformers 5.24 class defaults are another model's: depth 27, hidden 1152, out 3584), so
image_size 768 (48 x 16), is_deepstack_layers 24 x false, mean / std 0.5 (the published preprocessor_config.json),
layer_norm_epsilon 1e-6, general.file_type 1 (MOSTLY_F16), and no clip.vision.image_min_pixels / image_max_pixels
(converter-made files have none).
Tensor types as the converter writes them with --outtype f16 (mmproj_f16_type; conversion/base.py prepare_tensors and
MmprojModel.tensor_force_quant): both patch kernels v.patch_embd.weight, .weight.1 (16,16,3,1024) F16
N(0, 4/1536); v.position_embd.weight (1024,2304) F32 0.5 N(0,1); the blocks' matrices (attn_qkv (1024,3072),
attn_out (1024,1024), ffn_up (1024,4096), ffn_down (4096,1024)) and the merger's mm.0.weight (4096,4096),
mm.2.weight (4096,2560) F16 N(0, 1/fan_in); biases F32 0.1 N(0,1); LayerNorm weights F32 1 + 0.1 N(0,1).
qwen35v_bench.gguf: the tiny text file's keys, key order, tokenizer (the 320-token vocabulary below) and tensor names
(the same writers: write_text_keys, qwen3_hybrid_tiny.write_tensors with f16), with Qwen3.5-4B's text_config widths
but 2 layers, gated delta net then full attention (full_attention_interval 2): context 262144, embedding_length 2560,
feed_forward_length 9216, 16 heads, 4 KV heads, key/value_length 256, rope freq_base 1e7, partial_rotary_factor 0.25
(dimension_count 64), dimension_sections [11, 11, 10, 0], linear attention 16 key heads / 32 value heads of 128
(ssm.state_size 128, group_count 16, time_step_rank 32, inner_size 4096), conv kernel 4, file_type 1; an untied
output.weight as in the tiny file (the published 4B ties it to token_embd). Matrices F16 (token_embd (2560,320)
N(0,1), the others N(0, 1/fan_in)), ssm_conv1d (4,8192) F32 0.5 N(0,1) (the converter keeps SSM_CONV1D F32),
ssm_dt.bias F32 0.5 N(0,1), ssm_a F32 -linspace(0.3, 1.5, 32) (before the value-head reorder), ssm_norm F32
1 + 0.1 N(0,1), the RMSNorm factors 1 + w F32 with w 0.1 N(0,1). Activations are O(1): the float64 numpy tower
(vision_numpy) on bench512.png gives image rows of rms 0.67, and qwen35_numpy_logits on a chat prompt with them
logits of rms 1.04 (max 4.6).
bench512.png: 512 x 512 RGB, smooth gradients, soft blobs and noise (write_bench_image); unchanged by HF's
smart_resize (factor 32, min 65536 / max 16777216 pixels) and by llama.cpp's (8 to 4096 merged tokens): 32 x 32 =
1024 patches, 256 tokens in both. Both files load in llama.cpp (d32676d): llama-mtmd-cli -m qwen35v_bench.gguf
--mmproj qwen35v_bench_mmproj.gguf --image bench512.png -p describe -n 1 --chat-template chatml --no-warmup -c 4096
(no tokenizer.chat_template in the file; --no-warmup skips clip's 1472 x 1472 warmup encode) reports 256 image
tokens (16 x 16) and a 270-token prompt.

Shapes below are GGUF ne order (ne[0] first = the contiguous dimension; a torch/numpy [rows, cols] matrix is ne
[cols, rows]). All tensors of both tiny files are F32.

The model (HF config; transformers' Qwen3_5Config, Qwen3_5TextConfig, Qwen3_5VisionConfig)
  text: vocab 320, hidden 64, 3 layers, layer_types linear_attention, linear_attention, full_attention
    (full_attention_interval 3: layer il is full attention iff (il + 1) % 3 == 0), FFN 64 (SwiGLU, silu), rms eps
    1e-6, max_position_embeddings 4096, untied lm_head.
    full attention: 2 query heads, 1 KV head, head_dim 32; q_proj gives per head [q (32), gate (32)]; q_norm / k_norm
      per head (RMSNorm, weight 1 + w); output * sigmoid(gate) before o_proj; scale 1/sqrt(32).
    rope_parameters: rope_type default, rope_theta 10000, partial_rotary_factor 0.5 (the first 16 dims of each
      32-dim head rotate, NeoX halves: pairs (i, i + 8), i = 0..7; dims 16..31 pass through), mrope_section [3, 3, 2],
      mrope_interleaved true. Rotary pair i (angle pos * 10000^(-2i/16)) takes its position from
      row h if i % 3 == 1 and i < 3*3, row w if i % 3 == 2 and i < 3*2, else row t (HF Qwen3_5TextRotaryEmbedding
      .recomposition_frequencies, modeling_qwen3_5.py:190-200; llama.cpp's imrope sectors, ggml-cpu ops.cpp
      ggml_mrope_cache_init, the same assignment here): pairs 0, 3, 6 -> t; 1, 4, 7 -> h; 2, 5 -> w.
    gated delta net: 2 key heads of 16, 4 value heads of 16 (each key head serves 2 value heads), conv kernel 4.
  vision (Qwen3_5VisionConfig): depth 2, hidden 32, 2 heads of 16, intermediate 64 (gelu_pytorch_tanh), patch 8,
    temporal_patch_size 2 (a Conv3d kernel [32, 3, 2, 8, 8], stride = kernel; a still image is its frame twice),
    spatial_merge_size 2, out_hidden_size 64 (= the text hidden), num_position_embeddings 36 (a learned 6 x 6 grid,
    bilinearly resampled, align corners, to each image's patch grid), rope_parameters {axial, theta 10000}, no
    deepstack layers. LayerNorm eps 1e-6 everywhere (hard-coded by HF, modeling_qwen3_5.py:979, 1090-1091). The
    merger: LayerNorm(32) per patch, 4 patches (a 2 x 2 block) concatenated to 128, linear_fc1 128 -> 128, GELU
    (nn.GELU(): the erf form, modeling_qwen3_5.py:981), linear_fc2 128 -> 64.
  token ids (the HF config's): image_token_id 318 (<|image_pad|>), video_token_id 319 (<|video_pad|>),
    vision_start_token_id 315 (<|vision_start|>), vision_end_token_id 316 (<|vision_end|>); eos 314, pad 312, no bos.
  init (torch.manual_seed(3030), then a torch.Generator seeded 3030 over named_parameters()): text as
    qwen3_hybrid_tiny.py make_model (matrices N(0, 1/fan_in), embed_tokens N(0, 1), conv1d 0.5 N(0,1), dt_bias
    0.5 N(0,1), RMSNorm w (factor 1 + w) 0.2 N(0,1), the gated norm's weight 1 + 0.2 N(0,1)) except A_log = log(0.3,
    0.7, 1.1, 1.5) (moderate decay in every head; qwen3_hybrid_tiny's A = 30 in half the heads makes tiny delta-rule
    outputs whose float32 rounding the gated RMSNorm amplifies: its logits were 8.3e-5 from the float64 numpy forward
    here, against 1.3e-5 now). Vision: patch kernel N(0, 1/384), pos_embed 0.5 N(0,1), matrices N(0, 1/fan_in),
    biases 0.3 N(0,1), LayerNorm weights 1 + 0.2 N(0,1).

Tokenizer (byte-level BPE in the text GGUF; what lockstep tokenizes prompts with)
  tokenizer.ggml.model "gpt2", tokenizer.ggml.pre "qwen35" (what the converter's pre-tokenizer hash gives for
    Qwen3.5, conversion/base.py:1655-1657; its split regex: transformers tokenization_qwen3_5.py PRETOKENIZE_REGEX,
    llama.cpp LLAMA_VOCAB_PRE_TYPE_QWEN35). tokens: ids 0..255 GPT-2's 256 byte symbols in GPT-2's order ("!" = 0,
    "\u010a" (newline) = 198, "\u0120" (space) = 220; families_tiny.py bytes_to_unicode), 256..295 the products of
    the 40 merges in rank order (families_tiny.py's 20 BPE_MERGES, then u s, us er, \u0120t h, \u0120th is,
    \u0120th at, \u0120a n, \u0120an d, D e, De s, c r, i b, ib e, cr ibe, Des cribe, s s, a ss, is t, an t, ass ist,
    assist ant: 277 user, 279 \u0120this, 280 \u0120that, 282 \u0120and, 289 Describe, 295 assistant), 296..311
    "[PAD296]".."[PAD311]" (token_type 5 UNUSED: ids the HF vocabulary lacks), then the control tokens (type 3)
    <|endoftext|> 312, <|im_start|> 313, <|im_end|> 314, <|vision_start|> 315, <|vision_end|> 316,
    <|vision_pad|> 317, <|image_pad|> 318, <|video_pad|> 319 (Qwen3.5's order, without its box/quad/object
    tokens); bytes and merges type 1. tokenizer.ggml.merges: the 40 "a b" strings. bos 312, eos 314, padding 312,
    add_bos_token false (as families_tiny.py's qwen3 files; the converter writes bos and add_bos only when the
    checkpoint's tokenizer files carry them). No chat template.

qwen35v_tiny.gguf (the text model; general.architecture "qwen35")
  keys, in this order (the converter's for Qwen3_5ForConditionalGeneration: ModelBase.prepare_metadata's general.*,
  TextModel.set_gguf_parameters (base.py:1195-1300), Qwen3NextModel's (qwen.py:368-378), quantization version, then
  the tokenizer, written by TextModel.prepare_metadata's set_vocab after them):
    general.architecture "qwen35", general.type "model", general.name "lockstep tiny qwen35v",
    qwen35.block_count u32 3, qwen35.context_length u32 4096, qwen35.embedding_length u32 64,
    qwen35.feed_forward_length u32 64, qwen35.attention.head_count u32 2, qwen35.attention.head_count_kv u32 1,
    qwen35.rope.dimension_sections i32[4] [3, 3, 2, 0] (mrope_section padded with zeros to 4, base.py:1258-1263; an
    INT32 array), qwen35.rope.freq_base f32 10000, qwen35.attention.layer_norm_rms_epsilon f32 1e-6,
    qwen35.attention.key_length u32 32, qwen35.attention.value_length u32 32, general.file_type u32 0,
    qwen35.ssm.conv_kernel u32 4, qwen35.ssm.state_size u32 16 (key head dim), qwen35.ssm.group_count u32 2 (key
    heads), qwen35.ssm.time_step_rank u32 4 (value heads), qwen35.ssm.inner_size u32 64 (4 x 16),
    qwen35.full_attention_interval u32 3, qwen35.rope.dimension_count u32 16 (= 32 x partial_rotary_factor: the
    rotary dims), general.quantization_version u32 2, then tokenizer.ggml.model, .pre, .tokens, .token_type,
    .merges, .bos_token_id, .eos_token_id, .padding_token_id, .add_bos_token.
    No key says "interleaved": llama.cpp's qwen35 always ropes IMROPE (llama-model.cpp:2696-2699).
  tensors (F32): token_embd.weight [64,320], output_norm.weight [64], output.weight [64,320]; per layer blk.N.:
    attn_norm.weight [64], post_attention_norm.weight [64], ffn_gate.weight [64,64], ffn_up.weight [64,64],
    ffn_down.weight [64,64]; layers 0, 1 (gated delta net): attn_qkv.weight [64,128] (rows q 0..31, k 32..63,
    v 64..127), attn_gate.weight [64,64] (in_proj_z), ssm_beta.weight [64,4] (in_proj_b), ssm_alpha.weight [64,4]
    (in_proj_a), ssm_conv1d.weight [4,128], ssm_dt.bias [4], ssm_a [4], ssm_norm.weight [16], ssm_out.weight [64,64];
    layer 2 (full attention): attn_q.weight [64,128] (per head 32 q rows then 32 gate rows), attn_k.weight [64,32],
    attn_v.weight [64,32], attn_output.weight [64,64], attn_q_norm.weight [32], attn_k_norm.weight [32].
  transforms (qwen3_hybrid_tiny.write_tensors, the converter's qwen.py:380-420, 554-603): + 1 on every RMSNorm weight
    except ssm_norm (the gated norm multiplies by w); ssm_a = -exp(A_log); conv1d [128,1,4] squeezed; value heads
    reordered from HF's grouped order (value head kh * 2 + r serves key head kh) to tiled (GGUF value head
    r * 2 + kh) in the v rows of attn_qkv and ssm_conv1d, the rows of attn_gate, ssm_beta, ssm_alpha, ssm_dt.bias,
    ssm_a and the columns of ssm_out: GGUF value head j reads key head j % 2.

qwen35v_tiny_mmproj.gguf (the vision tower and merger; general.architecture "clip")
  keys, in this order (MmprojModel.set_gguf_parameters, base.py:2431-2460; Qwen3VLVisionModel.set_gguf_parameters,
  qwen3vl.py:42-59; two keys of this oracle; general.quantization_version):
    general.architecture "clip", general.type "mmproj", general.name "lockstep tiny qwen35v mmproj",
    general.file_type u32 0, clip.has_vision_encoder bool true, clip.vision.projection_dim u32 64 (the text hidden),
    clip.vision.image_size u32 48 (sqrt(num_position_embeddings) x patch_size = 6 x 8, qwen3vl.py:24-32: the
    learned grid's extent, not an input size), clip.vision.patch_size u32 8, clip.vision.embedding_length u32 32,
    clip.vision.feed_forward_length u32 64, clip.vision.block_count u32 2, clip.vision.attention.head_count u32 2,
    clip.vision.image_mean f32[3] [0.48145466, 0.4578275, 0.40821073], clip.vision.image_std f32[3] [0.26862954,
    0.26130258, 0.27577711], clip.projector_type "qwen3vl_merger", clip.use_gelu bool true,
    clip.vision.spatial_merge_size u32 2, clip.vision.attention.layer_norm_epsilon f32 1e-6 (the TEXT config's
    rms_norm_eps, qwen3vl.py:54-56: HF's vision LayerNorms hard-code 1e-6, equal only because Qwen3.5's text eps is
    1e-6 too), clip.vision.is_deepstack_layers bool[2] [false, false] (the converter's list of per-layer flags is
    truthy whenever the tower has layers, so it is written for a model without deepstack too, qwen3vl.py:38, 58-59),
    clip.vision.image_min_pixels u32 1024, clip.vision.image_max_pixels u32 4800 (the processor's min/max pixels
    below; names from gguf constants.py Keys.ClipVision.IMAGE_MIN_PIXELS / IMAGE_MAX_PIXELS. NOT written by the
    converter for Qwen3-VL / Qwen3.5, and llama.cpp ignores them for qwen3vl_merger: it uses its own limits, 8 to
    4096 merged tokens, clip.cpp:1546-1561), general.quantization_version u32 2.
    No head_dim or head_count_kv key (head dim = 32 / 2 = 16), no rope theta key (10000 in HF's config and
    hard-coded in llama.cpp, models/qwen3vl.cpp:104-109), no temporal patch size key (llama.cpp's converter
    accepts only 2).
  tensors (F32; HF name under model.visual. -> GGUF name, shape):
    patch_embed.proj.weight [32,3,2,8,8] -> v.patch_embd.weight (8,8,3,32) = [:, :, 0] (the kernel's frame 0 as a
      conv2d kernel: element [o][c][ky][kx] at ((o*3 + c)*8 + ky)*8 + kx) and v.patch_embd.weight.1 (8,8,3,32) =
      [:, :, 1] (frame 1; qwen3vl.py:128-137); patch_embed.proj.bias [32] -> v.patch_embd.bias (32)
    pos_embed.weight [36,32] -> v.position_embd.weight (32,36) (row gy * 6 + gx of the 6 x 6 grid)
    blocks.N.norm1.{weight,bias} -> v.blk.N.ln1.{weight,bias} (32)   (N = 0, 1)
    blocks.N.attn.qkv.weight [96,32] -> v.blk.N.attn_qkv.weight (32,96) (rows q 0..31, k 32..63, v 64..95; head h of
      each = 16 rows from 16 h), .bias (96)
    blocks.N.attn.proj -> v.blk.N.attn_out.weight (32,32), .bias (32)
    blocks.N.norm2 -> v.blk.N.ln2.{weight,bias} (32)
    blocks.N.mlp.linear_fc1 [64,32] -> v.blk.N.ffn_up.weight (32,64), .bias (64)
    blocks.N.mlp.linear_fc2 [32,64] -> v.blk.N.ffn_down.weight (64,32), .bias (32)
    merger.norm -> v.post_ln.{weight,bias} (32) (the merger's per-patch LayerNorm)
    merger.linear_fc1 [128,128] -> mm.0.weight (128,128), .bias (128)
    merger.linear_fc2 [64,128] -> mm.2.weight (128,64), .bias (64)
    No other transform (no +1: these are LayerNorms). The converter writes the tensors in the checkpoint's sorted
    name order; this file in the order above (tensors are looked up by name).
  how llama.cpp runs them (tools/mtmd/models/qwen3vl.cpp, clip.cpp): the image (ne (W, H, 3)) convolved by both
    kernels (stride 8) and the results added (the temporal merge), the raster patch order permuted to merge-block
    order (for each 2 x 2 block, row-major over blocks, its 4 patches row-major), + bias, + the position grid
    resized bilinearly with align corners and permuted the same way; per block: LayerNorm (eps from the key), fused
    qkv, 2D rope (ggml_rope_multi, vision mode, sections [4, 4, 4, 4] over 16-dim heads: pair (i, i + 8), i < 4
    turns by the patch row, i >= 4 by its column, angle pos * 10000^(-2 (i % 4) / 8); positions set at clip.cpp:
    4328-4347), attention over the whole image, LayerNorm, FFN with ggml's tanh GELU; post_ln; every 4 rows
    concatenated (4 x 32); mm.0, GELU, mm.2 (build_ffn FFN_GELU: ggml_gelu, the TANH approximation, clip.cpp:652-657,
    where HF's merger uses the erf GELU: 4.8e-4 on these embeddings). Merged tokens in block order = HF's order.

HF preprocessing (what the .pixels files hold)
  The class: transformers 5.24's Qwen2VLImageProcessorPil (models/qwen2_vl/image_processing_pil_qwen2_vl.py; the
  "pil" backend AutoImageProcessor maps qwen3_5 to, image_processing_auto.py:147; the "torchvision" one,
  Qwen2VLImageProcessor, is not used, and torchvision is not installed in the oracle venv), constructed with
  min_pixels 1024, max_pixels 4800, patch_size 8, temporal_patch_size 2, merge_size 2, image_mean / image_std
  OPENAI_CLIP's (the class defaults; published Qwen3.5 checkpoints use 0.5 / 0.5, which would hide a channel mix-up),
  resample BICUBIC (the class default), rescale 1/255, convert_to_rgb on.
  1. convert to RGB exactly as vision_tiny.py describes (transformers convert_to_rgb: alpha and tRNS composited onto
     white).
  2. smart_resize (image_processing_pil_qwen2_vl.py:58-84), factor = patch x merge = 16, on (h, w):
     hb = round(h/16)*16, wb = round(w/16)*16 (Python's round: HALF TO EVEN, round(2.5) = 2, where C's round() gives
     3; the one tie here, 120/16 = 7.5, rounds to 8 either way, and max_pixels then replaces it); if hb*wb > 4800: beta = sqrt(h*w/4800), hb = max(16,
     floor(h/beta/16)*16), wb likewise; elif hb*wb < 1024: beta = sqrt(1024/(h*w)), hb = ceil(h*beta/16)*16, wb
     likewise.
  3. resize the uint8 RGB image to (wb, hb) with Pillow's BICUBIC (image_transforms.py resize: Image.resize, no
     reducing_gap) -- bytes, not floats; an unchanged size is a copy. Pillow's bicubic (libImaging/Resample.c;
     re-implemented in pil_resample_numpy, byte-exact for every image here): vision_tiny.py's bilinear description
     with the filter Keys a = -0.5 (|x| < 1: (a + 2)|x|^3 - (a + 3)|x|^2 + 1; 1 <= |x| < 2: a(|x|^3 - 5|x|^2 + 8|x|
     - 4)), support 2 x max(scale, 1); negative weights make the clamp to 0..255 matter.
  4. rescale then normalize (image_transforms.py:92-127, 387-445): x = float32(double(byte) * (1/255)); then in
     float32 (x - float32(mean[c])) / float32(std[c]). A C++ runtime doing the same gets the same bits.
  5. patchify (image_processing_pil_qwen2_vl.py:164-199): gh = hb/8, gw = wb/8; pixel_values row n (of gh*gw) = the
     patch at (2*by + dy, 2*bx + dx), n = ((by * gw/2 + bx) * 2 + dy) * 2 + dx (merge-block order); each row is
     [c][t][y][x] (3 x 2 x 8 x 8 = 384 floats), the frame t = 0, 1 the same pixels; image_grid_thw (1, gh, gw).
  The image's tokens: (gh/2) * (gw/2) (Qwen3VLProcessor.replace_image_token, processing_qwen3_vl.py:70-73).
  llama.cpp preprocesses differently: stb_image (alpha dropped), its own bilinear resize and its own token limits.

Test images (OUT_DIR/vision/, drawn by vision_tiny.py), resized size (w x h), patch grid gh x gw, merged grid:
  rgb64        RGB 64x64    -> 64x64  same  8x8   4x4  16 tokens
  rgb100x37    RGB 100x37   -> 96x32  down  4x12  2x6  12 tokens   (image A of the goldens)
  gray23x31    L 23x31      -> 32x48  up    6x4   3x2   6 tokens
  rgba50       RGBA 50x50   -> 48x48  down  6x6   3x3   9 tokens   (6 x 6 = the learned grid: interpolation is exact)
  photo120x90  JPEG 120x90  -> 80x48  down  6x10  3x5  15 tokens   (image B; max_pixels: beta 1.5)
  pal7x5       P 7x5        -> 48x32  up    4x6   2x3   6 tokens   (min_pixels)
  paltrns9x6   P 9x6 + tRNS -> 48x32  up    4x6   2x3   6 tokens

Prompts, M-RoPE positions and goldens
  qwen35v_tiny.prompt (UTF-8, no trailing newline beyond the text's own):
    "<|im_start|>user\n<__media__>Describe this and<__media__> that.<|im_end|>\n<|im_start|>assistant\n"
    with image A (rgb100x37) at the first <__media__>, image B (photo120x90) at the second; each <__media__> becomes
    "<|vision_start|>" + n x "<|image_pad|>" + "<|vision_end|>" (n = 12, 15), then the text is tokenized with
    special tokens parsed, no BOS (bpe_encode = llama.cpp's BPE algorithm; equal to transformers' Qwen3_5Tokenizer
    over the same vocabulary):
    313 <|im_start|>, 277 user, 198 \n, 315 <|vision_start|>, 318 x 12 (positions 4..15), 316 <|vision_end|>,
    289 Describe, 279 " this", 282 " and", 315, 318 x 15 (positions 21..35), 316, 280 " that", 13 ".", 314
    <|im_end|>, 198 \n, 313 <|im_start|>, 295 assistant, 198 \n: 44 tokens, 27 image tokens.
  qwen35v_tiny_img1.prompt: the same text without its first <__media__> (image B only):
    "<|im_start|>user\nDescribe this and<__media__> that.<|im_end|>\n<|im_start|>assistant\n": 313, 277, 198, 289,
    279, 282, 315, 318 x 15 (positions 7..21), 316, 280, 13, 314, 198, 313, 295, 198: 30 tokens.
  M-RoPE positions (HF get_rope_index, modeling_qwen3_5.py:1361-1455, mm_token_type_ids 1 at the <|image_pad|>
    tokens, 0 elsewhere, as the processor makes them, processing_utils.py:996): a running position p starts at 0;
    a text token (vision_start / vision_end included) gets (t, h, w) = (p, p, p), p += 1; an image of merged grid
    gh x gw whose first token comes at running position s: its token k (row r = k / gw, column c = k % gw, row-major
    = the merger's order) gets (s, s + r, s + c); after it p = s + max(gh, gw). llama.cpp's mtmd does the same
    (mtmd.cpp:2308-2316, 2368-2370; a 4th position row, 0, that no section of [3, 3, 2, 0] reads).
    qwen35v_tiny.golden: t = 0 1 2 3 | 4 (x12) | 10 11 12 13 14 | 15 (x15) | 20 21 .. 27; h = .. 4 (x6) 5 (x6) ..
    15 (x5) 16 (x5) 17 (x5) ..; w = .. 4..9 4..9 .. 15..19 (x3) ..; the last position is 27 for 44 tokens.
  qwen35v_tiny.golden / qwen35v_tiny_img1.golden: golden.py's format (tests/support/golden.h read_golden): int32 n,
    int32 n_vocab (320), n int32 tokens (the image tokens as 318), n x 320 float32 logits (row t: after tokens 0..t),
    the whole prompt in one forward of Qwen3_5ForConditionalGeneration(input_ids, pixel_values (both images' rows,
    in order), image_grid_thw, mm_token_type_ids): HF computes the image rows itself and puts them, in order, in place
    of the <|image_pad|> embeddings (masked_scatter; no scaling), and the positions above.
  text forward (as the numpy check computes it from the GGUF, llama.cpp's semantics): x = token_embd rows, image
    rows at the 318 positions; per layer il: h = RMSNorm(x) * attn_norm; if (il + 1) % 3 == 0: q|gate = attn_q h
    per head, q = RMSNorm(q) * attn_q_norm, k = RMSNorm(attn_k h) * attn_k_norm, both imroped (above), causal
    softmax(q.k / sqrt(32)) v (query head h reads KV head 0), * sigmoid(gate), attn_output; else: c = silu(causal
    depthwise conv4(attn_qkv h)), q, k (2 heads of 16) L2-normalized (x / sqrt(sum x^2 + 1e-6)), q / 4, v (4 heads),
    beta = sigmoid(ssm_beta h), g = ssm_a * softplus(ssm_alpha h + ssm_dt.bias); per value head j (key head j % 2):
    S = S exp(g); S += k (x) (v - S^T k) beta; o = S^T q; o = RMSNorm(o) * ssm_norm * silu(attn_gate h); ssm_out;
    x += that; h = RMSNorm(x) * post_attention_norm; x += ffn_down(silu(ffn_gate h) * ffn_up h); logits = output .
    (RMSNorm(x) * output_norm). RMSNorm eps 1e-6.

Output formats (besides the GGUFs, goldens and prompts)
  vision/<name>.qwen35.pixels: int32 h, int32 w (the resized size, multiples of 16); int32 grid_t (1), grid_h (h/8),
    grid_w (w/8) (the patch grid, before merging); 3*h*w float32: the resized and normalized image, CHW (channel,
    row, column; recovered from pixel_values by undoing the patch order); grid_h*grid_w x 384 float32: HF's
    pixel_values as they are (row order and layout: step 5 above).
  qwen35v_tiny.embd: int32 n_images (2); per image (rgb100x37, then photo120x90): int32 n_tokens, int32 n_embd (64),
    int32 llm_grid_h, int32 llm_grid_w (the merged grid: 2, 6 and 3, 5), then n_tokens x 64 float32 (row k = merged
    token (k / llm_grid_w, k % llm_grid_w)): get_image_features(...).pooler_output of the image alone (the same bits
    as both in one call).
  qwen35v_tiny.rope: int32 T (44), then int32 [3][T]: the t row, the h row, the w row of the positions the text model
    of qwen35v_tiny.golden's forward received (captured from HF).

Checks (all run on every invocation; the numbers are this file's)
  - GGUF files re-read with gguf-py: key lists and order as above; every tensor F32 and bit-equal to the HF
    parameter under the transform inverted independently (the value-head permutation by index arithmetic; ssm_a
    against torch's float32 -exp); the two patch kernels stacked give the Conv3d kernel back.
  - preprocessing, all 7 images: the resized size equals smart_resize restated; Pillow's bicubic re-implemented
    byte-exact; the CHW image recovered from pixel_values bit-equal to rescale/normalize of those bytes, and both
    temporal frames equal; the set covers no resize, downscaling and upscaling.
  - vision: a float64 numpy tower read from the mmproj GGUF alone (vision_numpy: raster-order patches through both
    kernels, bilinear align-corners grid, 2D rope, LayerNorm, tanh-GELU MLP, post_ln, 2 x 2 merge, erf-GELU merger)
    from the CHW image: within 1.6e-6 of HF for all 7 images (required < 1e-5). Variants, photo120x90: the tanh GELU
    in the merger 4.8e-4, half-pixel grid interpolation 0.12, no rope 0.32, merging 4 consecutive raster patches 1.45.
  - positions: recomputed independently (mrope_positions) and equal to what HF's text model received, both prompts.
  - text: a float64 numpy qwen35 read from the text GGUF alone (qwen35_numpy_logits, llama.cpp's imrope sector rule,
    tiled value heads, the image rows from .embd) gives the goldens within 1.3e-5 and 9.5e-6 (required < 1e-4, no
    argmax differing); HF's cached path (the prompt through the last image in one call, then one token at a time,
    positions from HF's rope_deltas) within 3.5e-6 and 6.4e-6.
  - the goldens depend on what they should: plain 1-D positions 0..T-1 move the logits by 0.45 / 0.32; the t row on
    all three rows (no 2-D image positions) by 0.059 / 0.047; the <|image_pad|> embedding instead of the image rows
    by 4.96 / 4.90.
  - statistics: smallest top-1 margin 0.028 (golden) and 0.0047 (img1), max |logit| 5.0 / 3.9; activation rms: patch
    embeddings 1.10, vision blocks 1.70 / 2.10, merger output (image rows) 0.89 (rows of image A 0.86, B 0.92), text
    embeddings 1.01, text layers 1.16 / 1.40 / 1.53.
  - llama.cpp's converter (d32676d, gguf-py of the same tree; run once by hand on save_pretrained of this model, with
    the tokenizer and preprocessor_config.json saved beside it and its pre-tokenizer hash lookup answered "qwen35"):
    --mmproj writes the same keys, values, types and order (plus general.size_label, its own general.name, and not
    the two pixel keys) and bit-identical tensors; the text file the same keys (plus size_label; without bos_token_id
    and add_bos_token) and bit-identical tensors, once two things are given to it: --no-mtp (without it the
    converter asserts on a checkpoint without MTP layers, qwen.py:290-297) and "full_attention_interval": 3 in
    config.json's text_config (transformers 5.24 turns that key into layer_types and save_pretrained drops it; the
    converter then writes its default 4, qwen.py:375; published Qwen3.5 configs carry the key).
"""
import math
import os
import struct
import sys

import numpy as np
import torch
import gguf
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from families_tiny import BPE_MERGES, bytes_to_unicode  # noqa: E402
from qwen3_hybrid_tiny import write_tensors  # noqa: E402
from vision_tiny import (bench_rng_helpers, gelu_tanh_np, gguf_tensors, hf_rgb, layer_norm_np,  # noqa: E402
                         rms_norm_np, softmax_np, write_golden_file)

SEED = 3030

# text model (Qwen3_5TextConfig)
VOCAB = 320
N_EMBD = 64
N_FF = 64
N_LAYER = 3
FULL_EVERY = 3            # full_attention_interval: layers 0, 1 gated delta net, layer 2 full attention
N_HEAD = 2
N_HEAD_KV = 1
HEAD_DIM = 32
PARTIAL_ROTARY = 0.5      # 16 rotary dims = 8 pairs
MROPE_SECTION = [3, 3, 2]
ROPE_THETA = 10000.0
LIN_K_HEADS, LIN_V_HEADS, LIN_K_DIM, LIN_V_DIM, CONV_K = 2, 4, 16, 16, 4
RMS_EPS = 1e-6
N_CTX = 4096

# vision tower (Qwen3_5VisionConfig)
V_DEPTH = 2
V_EMBD = 32
V_HEADS = 2
V_FF = 64
PATCH = 8
T_PATCH = 2
MERGE = 2
N_POS_EMBD = 36           # a 6 x 6 learned grid
V_ACT = "gelu_pytorch_tanh"

# preprocessing (Qwen2VLImageProcessorPil)
MIN_PIXELS = 1024
MAX_PIXELS = 4800
FACTOR = PATCH * MERGE    # 16
IMAGE_MEAN = [0.48145466, 0.4578275, 0.40821073]  # OPENAI_CLIP_MEAN, the processor class's default
IMAGE_STD = [0.26862954, 0.26130258, 0.27577711]  # OPENAI_CLIP_STD

# the test images of tests/data/vision (drawn by vision_tiny.py make_images)
IMAGES = [("rgb64", "rgb64.png"), ("rgb100x37", "rgb100x37.png"), ("gray23x31", "gray23x31.png"),
          ("rgba50", "rgba50.png"), ("photo120x90", "photo120x90.jpg"), ("pal7x5", "pal7x5.png"),
          ("paltrns9x6", "paltrns9x6.png")]
GOLDEN_IMAGES = ["rgb100x37", "photo120x90"]   # image A, image B of the two-image prompt

MEDIA = "<__media__>"
PROMPT = "<|im_start|>user\n" + MEDIA + "Describe this and" + MEDIA + " that.<|im_end|>\n<|im_start|>assistant\n"
PROMPT_IMG1 = PROMPT.replace(MEDIA, "", 1)  # the same prompt without its first image

# ----------------------------------------------------------------------------------------------
# the tokenizer: byte-level BPE (families_tiny.py's bytes and merges, then the prompt's words), Qwen's special
# tokens at the end of the vocabulary

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
            "<|image_pad|>", "<|video_pad|>"]
EXTRA_MERGES = [("u", "s"), ("us", "er"), ("Ġt", "h"), ("Ġth", "is"), ("Ġth", "at"), ("Ġa", "n"), ("Ġan", "d"),
                ("D", "e"), ("De", "s"), ("c", "r"), ("i", "b"), ("ib", "e"), ("cr", "ibe"), ("Des", "cribe"),
                ("s", "s"), ("a", "ss"), ("is", "t"), ("an", "t"), ("ass", "ist"), ("assist", "ant")]
MERGES = list(BPE_MERGES) + EXTRA_MERGES
PRE = "qwen35"
# Qwen3.5's pre-tokenizer split (transformers tokenization_qwen3_5.py PRETOKENIZE_REGEX; llama.cpp's
# LLAMA_VOCAB_PRE_TYPE_QWEN35, src/llama-vocab.cpp:382-387)
QWEN35_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def vocab():
    """(tokens, types) of the tiny vocabulary."""
    syms, _ = bytes_to_unicode()
    toks = list(syms)
    types = [1] * 256
    for a, b in MERGES:
        assert a in toks and b in toks and a + b not in toks, (a, b)
        toks.append(a + b)
        types.append(1)
    n_pad = VOCAB - len(toks) - len(SPECIALS)
    toks += [f"[PAD{len(toks) + i}]" for i in range(n_pad)]
    types += [5] * n_pad
    toks += SPECIALS
    types += [3] * len(SPECIALS)
    assert len(toks) == VOCAB
    return toks, types


def tok_id(t):
    return vocab()[0].index(t)


def bpe_encode(text):
    """Token ids of `text` as llama.cpp tokenizes it (parse_special, no BOS added; llm_tokenizer_bpe, re-implemented):
    control tokens matched literally first; each remaining fragment split by QWEN35_SPLIT, each piece's UTF-8
    bytes mapped to GPT-2's byte symbols, then the adjacent pair of lowest merge rank merged until none is left
    (ties: the leftmost)."""
    import regex
    toks, types = vocab()
    index = {t: i for i, t in enumerate(toks)}
    rank = {(a, b): r for r, (a, b) in enumerate(MERGES)}
    byte_sym = bytes_to_unicode()[0]
    order = bytes_to_unicode()[1]  # the byte each symbol stands for
    sym_of_byte = {b: s for s, b in zip(byte_sym, order)}
    special = sorted((t for t, ty in zip(toks, types) if ty == 3), key=len, reverse=True)
    out = []

    def flush(s):
        for piece in regex.findall(QWEN35_SPLIT, s):
            sym = [sym_of_byte[b] for b in piece.encode("utf-8")]
            while len(sym) > 1:
                best = min(range(len(sym) - 1), key=lambda k: (rank.get((sym[k], sym[k + 1]), 1 << 30), k))
                if (sym[best], sym[best + 1]) not in rank:
                    break
                sym[best:best + 2] = [sym[best] + sym[best + 1]]
            out.extend(index[x] for x in sym)

    i, frag = 0, ""
    while i < len(text):
        m = next((t for t in special if text.startswith(t, i)), None)
        if m is not None:
            flush(frag)
            frag = ""
            out.append(index[m])
            i += len(m)
        else:
            frag += text[i]
            i += 1
    flush(frag)
    return out


def hf_tokenizer():
    """transformers' Qwen3_5Tokenizer over the same vocabulary and merges (the cross-check of bpe_encode)."""
    from transformers.models.qwen3_5.tokenization_qwen3_5 import Qwen3_5Tokenizer
    toks, types = vocab()
    tk = Qwen3_5Tokenizer(vocab={t: i for i, t in enumerate(toks) if types[i] != 5},  # no [PADn]: ids unused
                          merges=[(a, b) for a, b in MERGES], unk_token=None, pad_token=None, eos_token=None)
    tk.add_special_tokens({"additional_special_tokens": SPECIALS})
    assert all(tk.convert_tokens_to_ids(t) == toks.index(t) for t in SPECIALS)
    return tk


def write_tokenizer(w):
    """tokenizer.* keys in the converter's order (_set_vocab_gpt2, then gguf.SpecialVocab.add_to_gguf)."""
    toks, types = vocab()
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(PRE)
    w.add_token_list(toks)
    w.add_token_types(types)
    w.add_token_merges([f"{a} {b}" for a, b in MERGES])
    w.add_bos_token_id(toks.index("<|endoftext|>"))
    w.add_eos_token_id(toks.index("<|im_end|>"))
    w.add_pad_token_id(toks.index("<|endoftext|>"))
    w.add_add_bos_token(False)


def expand_media(text, n_tokens):
    """`text` with its i-th MEDIA marker replaced by <|vision_start|> + n_tokens[i] x <|image_pad|> + <|vision_end|>
    (what the Qwen3-VL processor makes of "<|vision_start|><|image_pad|><|vision_end|>")."""
    parts = text.split(MEDIA)
    assert len(parts) == len(n_tokens) + 1
    out = parts[0]
    for n, p in zip(n_tokens, parts[1:]):
        out += "<|vision_start|>" + "<|image_pad|>" * n + "<|vision_end|>" + p
    return out


# ----------------------------------------------------------------------------------------------
# the model


def make_config():
    from transformers import Qwen3_5Config, Qwen3_5TextConfig, Qwen3_5VisionConfig
    tc = Qwen3_5TextConfig(
        vocab_size=VOCAB, hidden_size=N_EMBD, intermediate_size=N_FF, num_hidden_layers=N_LAYER,
        num_attention_heads=N_HEAD, num_key_value_heads=N_HEAD_KV, head_dim=HEAD_DIM,
        linear_num_key_heads=LIN_K_HEADS, linear_num_value_heads=LIN_V_HEADS, linear_key_head_dim=LIN_K_DIM,
        linear_value_head_dim=LIN_V_DIM, linear_conv_kernel_dim=CONV_K, full_attention_interval=FULL_EVERY,
        rms_norm_eps=RMS_EPS, max_position_embeddings=N_CTX, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": ROPE_THETA, "partial_rotary_factor": PARTIAL_ROTARY,
                         "mrope_section": list(MROPE_SECTION), "mrope_interleaved": True},
        bos_token_id=None, eos_token_id=tok_id("<|im_end|>"), pad_token_id=tok_id("<|endoftext|>"))
    vc = Qwen3_5VisionConfig(depth=V_DEPTH, hidden_size=V_EMBD, num_heads=V_HEADS, intermediate_size=V_FF,
                             patch_size=PATCH, temporal_patch_size=T_PATCH, spatial_merge_size=MERGE,
                             out_hidden_size=N_EMBD, num_position_embeddings=N_POS_EMBD, hidden_act=V_ACT,
                             in_channels=3)
    cfg = Qwen3_5Config(text_config=tc.to_dict(), vision_config=vc.to_dict(), image_token_id=tok_id("<|image_pad|>"),
                        video_token_id=tok_id("<|video_pad|>"), vision_start_token_id=tok_id("<|vision_start|>"),
                        vision_end_token_id=tok_id("<|vision_end|>"), tie_word_embeddings=False)
    cfg._attn_implementation = "eager"
    return cfg


def init_weight(name, p, g):
    """Random weights for O(1) activations (checked by describe()). Text: qwen3_hybrid_tiny.py make_model's rules."""
    if ".visual." in name:
        if name.endswith("patch_embed.proj.weight"):  # [32, 3, 2, 8, 8]: pixels ~[-2, 2] -> O(1) patch vectors
            p.copy_(torch.randn(p.shape, generator=g) * 1.0 / math.sqrt(p[0].numel()))
        elif name.endswith("pos_embed.weight"):
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
        elif p.dim() == 2:
            p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[1]))
        elif name.endswith("bias"):
            p.copy_(0.3 * torch.randn(p.shape, generator=g))
        elif "norm" in name:  # LayerNorm weights (multiply by w)
            p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
        else:
            raise RuntimeError(f"no init rule for {name} {tuple(p.shape)}")
    elif p.dim() == 2:  # linear weights N(0, 1/fan_in); embeddings N(0, 1)
        fan_in = p.shape[1]
        p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(fan_in) * (1.0 if "embed" not in name else np.sqrt(fan_in)))
    elif "conv1d" in name:
        p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    elif name.endswith("A_log"):  # moderate decay in every head (qwen3_hybrid_tiny.py: A = 30 in half the heads)
        p.copy_(torch.log(torch.tensor([0.3 + 0.4 * i for i in range(p.shape[0])])))
    elif name.endswith("dt_bias"):
        p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    elif "norm" in name:  # Qwen3_5RMSNorm multiplies by 1 + w; the gated norm (linear_attn.norm) by w
        p.copy_(torch.randn(p.shape, generator=g) * 0.2 + (1.0 if name.endswith("linear_attn.norm.weight") else 0.0))
    else:
        raise RuntimeError(f"no init rule for {name} {tuple(p.shape)}")


def make_model():
    from transformers import Qwen3_5ForConditionalGeneration
    cfg = make_config()
    torch.manual_seed(SEED)
    m = Qwen3_5ForConditionalGeneration(cfg).float().eval()
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in m.named_parameters():
            init_weight(name, p, g)
    assert m.config.text_config.layer_types == ["linear_attention"] * (FULL_EVERY - 1) + ["full_attention"]
    return cfg, m


# ----------------------------------------------------------------------------------------------
# GGUF export


def f32(t):
    return t.detach().float().contiguous().numpy().astype(np.float32)


def finish_gguf(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def add_decoder_sizes(w, tc):
    """The first keys of TextModel.set_gguf_parameters (conversion/base.py:1195-1300), in its order."""
    w.add_block_count(tc.num_hidden_layers)
    w.add_context_length(tc.max_position_embeddings)
    w.add_embedding_length(tc.hidden_size)
    w.add_feed_forward_length(tc.intermediate_size)
    w.add_head_count(tc.num_attention_heads)
    w.add_head_count_kv(tc.num_key_value_heads)


def write_text_keys(w, name, tc, file_type):
    """The text file's keys (after general.architecture), in the converter's order for
    Qwen3_5ForConditionalGeneration, the tokenizer last."""
    rp = tc.rope_parameters
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name(name)
    add_decoder_sizes(w, tc)
    w.add_rope_dimension_sections(list(rp["mrope_section"]) + [0] * (4 - len(rp["mrope_section"])))  # int32 x 4
    w.add_rope_freq_base(rp["rope_theta"])
    w.add_layer_norm_rms_eps(tc.rms_norm_eps)
    w.add_key_length(tc.head_dim)
    w.add_value_length(tc.head_dim)
    w.add_file_type(file_type)
    # Qwen3NextModel.set_gguf_parameters (conversion/qwen.py:368-378)
    w.add_ssm_conv_kernel(tc.linear_conv_kernel_dim)
    w.add_ssm_state_size(tc.linear_key_head_dim)
    w.add_ssm_group_count(tc.linear_num_key_heads)
    w.add_ssm_time_step_rank(tc.linear_num_value_heads)
    w.add_ssm_inner_size(tc.linear_value_head_dim * tc.linear_num_value_heads)
    w.add_full_attention_interval(tc.layer_types.index("full_attention") + 1)  # the config's full_attention_interval
    w.add_rope_dimension_count(int(tc.head_dim * rp["partial_rotary_factor"]))
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    write_tokenizer(w)


def export_text(cfg, m, path):
    """The text model as the converter writes Qwen3_5ForConditionalGeneration (conversion/qwen.py Qwen3_5TextModel):
    keys in its order, the tensors through qwen3_hybrid_tiny.write_tensors (its qwen35 transforms)."""
    tc = cfg.text_config
    A = "qwen35"
    w = gguf.GGUFWriter(path, A)
    write_text_keys(w, "lockstep tiny qwen35v", tc, gguf.LlamaFileType.ALL_F32)
    sd = {k.replace("model.language_model.", "model."): v for k, v in m.named_parameters()
          if k.startswith("model.language_model.") or k == "lm_head.weight"}
    write_tensors(w, tc, sd, A)
    finish_gguf(w)


def write_mmproj_keys(w, name, vc, n_embd_text, eps, file_type=gguf.LlamaFileType.ALL_F32, mean=IMAGE_MEAN,
                      std=IMAGE_STD, pixel_limits=(MIN_PIXELS, MAX_PIXELS), deepstack=None):
    """The mmproj's keys (after general.architecture): MmprojModel.set_gguf_parameters (conversion/base.py:2431-2460),
    Qwen3VLVisionModel's (conversion/qwen3vl.py:43-61), then the two pixel limits (written by no converter for this
    projector; not written if pixel_limits is None), then general.quantization_version
    (ModelBase.prepare_metadata)."""
    w.add_type(gguf.GGUFType.MMPROJ)
    w.add_name(name)
    w.add_file_type(file_type)
    w.add_clip_has_vision_encoder(True)
    w.add_vision_projection_dim(n_embd_text)
    w.add_vision_image_size(int(vc.num_position_embeddings ** 0.5 * vc.patch_size))  # qwen3vl.py:24-32
    w.add_vision_patch_size(vc.patch_size)
    w.add_vision_embedding_length(vc.hidden_size)
    w.add_vision_feed_forward_length(vc.intermediate_size)
    w.add_vision_block_count(vc.depth)
    w.add_vision_head_count(vc.num_heads)
    w.add_vision_image_mean(mean)
    w.add_vision_image_std(std)
    w.add_clip_projector_type(gguf.VisionProjectorType.QWEN3VL)
    w.add_vision_use_gelu(True)
    w.add_vision_spatial_merge_size(vc.spatial_merge_size)
    w.add_vision_attention_layernorm_eps(eps)
    # (a non-empty list of False is truthy: written; qwen3vl_tiny.py passes Qwen3-VL's flags)
    w.add_vision_is_deepstack_layers(list(deepstack) if deepstack is not None else [False] * vc.depth)
    if pixel_limits is not None:
        w.add_vision_min_pixels(pixel_limits[0])
        w.add_vision_max_pixels(pixel_limits[1])
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)


# the vision tensors of one block: (GGUF name, HF name under model.visual.blocks.N.)
VIT_LAYER_TENSORS = [(f"{dst}.{wb}", f"{src}.{wb}")
                     for src, dst in (("norm1", "ln1"), ("attn.qkv", "attn_qkv"), ("attn.proj", "attn_out"),
                                      ("norm2", "ln2"), ("mlp.linear_fc1", "ffn_up"), ("mlp.linear_fc2", "ffn_down"))
                     for wb in ("weight", "bias")]


def mmproj_tensors(depth, get):
    """GGUF tensor name -> numpy array (numpy order = GGUF ne reversed), in the file's order; get(HF name under
    model.visual.) gives the array (the Conv3d kernel patch_embed.proj.weight [E, 3, 2, P, P] is split here)."""
    out = {}
    pw = get("patch_embed.proj.weight")  # (out, in, t, kh, kw)
    out["v.patch_embd.weight"] = np.ascontiguousarray(pw[:, :, 0])  # the kernel's frame 0 as a conv2d kernel
    out["v.patch_embd.weight.1"] = np.ascontiguousarray(pw[:, :, 1])  # frame 1
    out["v.patch_embd.bias"] = get("patch_embed.proj.bias")
    out["v.position_embd.weight"] = get("pos_embed.weight")
    for i in range(depth):
        for dst, src in VIT_LAYER_TENSORS:
            out[f"v.blk.{i}.{dst}"] = get(f"blocks.{i}.{src}")
    out["v.post_ln.weight"] = get("merger.norm.weight")
    out["v.post_ln.bias"] = get("merger.norm.bias")
    out["mm.0.weight"] = get("merger.linear_fc1.weight")
    out["mm.0.bias"] = get("merger.linear_fc1.bias")
    out["mm.2.weight"] = get("merger.linear_fc2.weight")
    out["mm.2.bias"] = get("merger.linear_fc2.bias")
    return out


def mmproj_expected(m):
    """GGUF tensor name -> numpy float32 array, from the HF model."""
    sd = {k.replace("model.visual.", "", 1): v for k, v in m.named_parameters() if k.startswith("model.visual.")}
    return mmproj_tensors(len(m.model.visual.blocks), lambda n: f32(sd[n]))


def mmproj_f16_type(name, a):
    """The type llama.cpp's converter gives an mmproj tensor with --outtype f16 (conversion/base.py prepare_tensors and
    MmprojModel.tensor_force_quant): names holding ".patch_embd.weight" (both temporal kernels) F16; then 1-D tensors,
    *_norm.weight, v.position_embd.weight (V_ENC_EMBD_POS) and names not ending in .weight F32; other matrices F16."""
    if ".patch_embd.weight" in name:
        return np.float16
    if a.ndim <= 1 or name.endswith("_norm.weight") or name == "v.position_embd.weight" or not name.endswith(".weight"):
        return np.float32
    return np.float16


def write_mmproj_tensors(w, tensors, f16=False):
    for name, a in tensors.items():
        w.add_tensor(name, a.astype(mmproj_f16_type(name, a), copy=False) if f16 else a)


def export_mmproj(cfg, m, path):
    vc = cfg.vision_config
    w = gguf.GGUFWriter(path, "clip")
    write_mmproj_keys(w, "lockstep tiny qwen35v mmproj", vc, cfg.text_config.hidden_size, cfg.text_config.rms_norm_eps)
    write_mmproj_tensors(w, mmproj_expected(m))
    finish_gguf(w)


# ----------------------------------------------------------------------------------------------
# preprocessing


def smart_resize_ref(h, w):
    """Qwen2-VL's smart_resize (image_processing_pil_qwen2_vl.py), restated: Python's round() (half to even)."""
    hb, wb = round(h / FACTOR) * FACTOR, round(w / FACTOR) * FACTOR
    if hb * wb > MAX_PIXELS:
        beta = math.sqrt(h * w / MAX_PIXELS)
        hb = max(FACTOR, math.floor(h / beta / FACTOR) * FACTOR)
        wb = max(FACTOR, math.floor(w / beta / FACTOR) * FACTOR)
    elif hb * wb < MIN_PIXELS:
        beta = math.sqrt(MIN_PIXELS / (h * w))
        hb = math.ceil(h * beta / FACTOR) * FACTOR
        wb = math.ceil(w * beta / FACTOR) * FACTOR
    return hb, wb


def image_processor():
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
    return Qwen2VLImageProcessorPil(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS, patch_size=PATCH,
                                    temporal_patch_size=T_PATCH, merge_size=MERGE, image_mean=IMAGE_MEAN,
                                    image_std=IMAGE_STD, resample=Image.Resampling.BICUBIC, do_resize=True,
                                    do_rescale=True, rescale_factor=1 / 255, do_normalize=True, do_convert_rgb=True)


def pil_resample_numpy(src, out_h, out_w, kind):
    """Pillow's BICUBIC / BILINEAR resize of an 8-bit RGB image (libImaging/Resample.c, re-implemented): separable,
    antialiased (support scaled by the shrink factor), 22-bit fixed-point coefficients, a horizontal pass into uint8
    rows (only the rows the vertical pass reads), then a vertical pass; each output (2^21 + sum) >> 22 clamped to
    0..255. bicubic: Keys' kernel with a = -0.5, support 2; bilinear: the triangle, support 1."""
    PREC = 22

    def bicubic(x):
        a = -0.5
        x = abs(x)
        if x < 1.0:
            return ((a + 2.0) * x - (a + 3.0)) * x * x + 1
        if x < 2.0:
            return (((x - 5) * x + 8) * x - 4) * a
        return 0.0

    def bilinear(x):
        x = abs(x)
        return 1.0 - x if x < 1.0 else 0.0

    filt, support0 = {"bicubic": (bicubic, 2.0), "bilinear": (bilinear, 1.0)}[kind]

    def coeffs(in_size, out_size):
        scale = in_size / out_size
        filterscale = max(scale, 1.0)
        support = support0 * filterscale
        ss = 1.0 / filterscale
        rows = []
        for xx in range(out_size):
            center = (xx + 0.5) * scale
            xmin = max(int(center - support + 0.5), 0)  # C casts truncate toward zero
            xmax = min(int(center + support + 0.5), in_size) - xmin
            k = [filt((x + xmin - center + 0.5) * ss) for x in range(xmax)]
            ww = 0.0
            for v in k:
                ww += v
            k = [v / ww if ww != 0.0 else v for v in k]
            kf = [int(-0.5 + v * (1 << PREC)) if v < 0 else int(0.5 + v * (1 << PREC)) for v in k]
            rows.append((xmin, np.array(kf, dtype=np.int64)))
        return rows

    def clip8(v):
        return np.clip(v >> PREC, 0, 255).astype(np.uint8)

    img = src.astype(np.int64)
    in_h, in_w = src.shape[:2]
    if (in_h, in_w) == (out_h, out_w):
        return src.copy()
    vert = coeffs(in_h, out_h)
    if in_w != out_w:
        y0 = vert[0][0] if in_h != out_h else 0
        y1 = vert[-1][0] + len(vert[-1][1]) if in_h != out_h else in_h
        tmp = np.empty((y1 - y0, out_w, 3), dtype=np.int64)
        for xx, (xmin, k) in enumerate(coeffs(in_w, out_w)):
            tmp[:, xx] = clip8((1 << (PREC - 1)) + np.einsum("yxc,x->yc", img[y0:y1, xmin:xmin + len(k)], k))
        img = tmp
        vert = [(ymin - y0, k) for ymin, k in vert]
    if in_h != out_h:
        out = np.empty((out_h, img.shape[1], 3), dtype=np.int64)
        for yy, (ymin, k) in enumerate(vert):
            out[yy] = clip8((1 << (PREC - 1)) + np.einsum("yxc,y->xc", img[ymin:ymin + len(k)], k))
        img = out
    return img.astype(np.uint8)


def normalize_numpy(resized):
    """HF's rescale (float64 byte * (1/255), cast to float32) then normalize ((x - mean) / std, float32 mean and std),
    channels first."""
    x = (resized.astype(np.float64) * (1 / 255)).astype(np.float32)
    x = (x - np.array(IMAGE_MEAN, np.float32)) / np.array(IMAGE_STD, np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1))


def unpatchify(pv, gh, gw):
    """HF's pixel_values [gh * gw, 3 * 2 * 8 * 8] back to the image [3, gh*8, gw*8]: row n = patch n in merge-block
    order (block row, block col, row in block, col in block), each row (channel, frame, y, x); both frames must be
    equal."""
    a = pv.reshape(gh // MERGE, gw // MERGE, MERGE, MERGE, 3, T_PATCH, PATCH, PATCH)
    assert np.array_equal(a[:, :, :, :, :, 0], a[:, :, :, :, :, 1])
    a = a[:, :, :, :, :, 0]  # (by, bx, dy, dx, c, py, px)
    return np.ascontiguousarray(a.transpose(4, 0, 2, 5, 1, 3, 6).reshape(3, gh * PATCH, gw * PATCH))


def preprocess(vdir):
    """Per image: (h, w, grid (t, h, w), CHW image, pixel_values); every step checked."""
    proc = image_processor()
    out = {}
    for name, fname in IMAGES:
        img = Image.open(f"{vdir}/{fname}")
        res = proc.preprocess([img], return_tensors="np")
        pv, thw = res["pixel_values"], res["image_grid_thw"]
        assert pv.dtype == np.float32 and thw.shape == (1, 3)
        gt, gh, gw = (int(v) for v in thw[0])
        h, w = gh * PATCH, gw * PATCH
        assert gt == 1 and pv.shape == (gh * gw, 3 * T_PATCH * PATCH * PATCH)
        rgb = hf_rgb(img)
        assert (h, w) == smart_resize_ref(rgb.shape[0], rgb.shape[1]), name
        resized = np.array(Image.fromarray(rgb, "RGB").resize((w, h), Image.Resampling.BICUBIC))
        assert np.array_equal(pil_resample_numpy(rgb, h, w, "bicubic"), resized), name  # byte for byte
        chw = unpatchify(pv, gh, gw)
        assert np.array_equal(normalize_numpy(resized), chw), name  # bit for bit
        kind = ("same" if (h, w) == rgb.shape[:2] else "up" if h * w > rgb.shape[0] * rgb.shape[1] else "down")
        print(f"  {name}: {img.format} mode {img.mode} {rgb.shape[1]}x{rgb.shape[0]} -> {w}x{h} ({kind}); "
              f"grid {gt}x{gh}x{gw}, merged {gh // MERGE}x{gw // MERGE} = {gh * gw // MERGE ** 2} tokens")
        out[name] = dict(h=h, w=w, grid=(gt, gh, gw), chw=chw, pv=pv, kind=kind)
    kinds = {v["kind"] for v in out.values()}
    assert {"same", "up", "down"} <= kinds, kinds
    return out


def write_pixels(path, p):
    with open(path, "wb") as f:
        f.write(struct.pack("<ii", p["h"], p["w"]))
        f.write(struct.pack("<iii", *p["grid"]))
        f.write(np.ascontiguousarray(p["chw"], dtype="<f4").tobytes())
        f.write(np.ascontiguousarray(p["pv"], dtype="<f4").tobytes())


# ----------------------------------------------------------------------------------------------
# the vision tower: HF's, and an independent numpy one read from the mmproj GGUF


def hf_image_features(m, pvs, grids):
    with torch.no_grad():
        out = m.model.get_image_features(torch.from_numpy(np.concatenate(pvs)), torch.tensor(grids),
                                         return_dict=True)
    return [x.float().numpy() for x in out.pooler_output]


def erf_gelu_np(x):
    v = np.vectorize(math.erf)
    return 0.5 * x * (1.0 + v(x / math.sqrt(2.0)))


def vision_numpy(mmproj_path, chw, variant=()):
    """The vision tower and merger from the mmproj GGUF alone (float64), in raster patch order, from the normalized
    CHW image (not from HF's pixel_values): conv2d by both temporal kernels (the two frames are the same image),
    + bias, + the learned 6 x 6 position grid bilinearly interpolated (align corners) to the patch grid; per block
    LayerNorm, fused qkv, 2D rope (pairs (i, i + 8) of each 16-dim head: i < 4 rotate by the patch row, i >= 4 by
    its column, angle pos * 10000^(-2 (i % 4) / 8)), attention over the whole image, LayerNorm, tanh-GELU MLP; then
    post_ln, each 2 x 2 block of patches concatenated (row-major within the block), mm.0, erf GELU, mm.2.
    `variant` (diagnostics only): "tanh_merger" (ggml_gelu in the merger, as llama.cpp's qwen3vl graph),
    "half_pixel" (position grid interpolated without align corners), "no_rope", "raster_merge" (4 consecutive
    raster-order patches merged instead of each 2 x 2 block)."""
    kv, t, _ = gguf_tensors(mmproj_path)
    P = int(kv["clip.vision.patch_size"])
    E = int(kv["clip.vision.embedding_length"])
    nh = int(kv["clip.vision.attention.head_count"])
    eps = float(kv["clip.vision.attention.layer_norm_epsilon"])
    mg = int(kv["clip.vision.spatial_merge_size"])
    hd = E // nh
    C, H, W = chw.shape
    gh, gw = H // P, W // P
    patches = chw.astype(np.float64).reshape(C, gh, P, gw, P).transpose(1, 3, 0, 2, 4).reshape(gh * gw, C * P * P)
    x = (patches @ t["v.patch_embd.weight"].reshape(E, -1).T + patches @ t["v.patch_embd.weight.1"].reshape(E, -1).T
         + t["v.patch_embd.bias"])
    # bilinear, align corners: the table's row r of side S = sqrt(rows) sits at r * (gh - 1) / (S - 1) of the grid
    pe = t["v.position_embd.weight"]
    S = int(round(math.sqrt(pe.shape[0])))
    pe = pe.reshape(S, S, E)

    def axis(n):
        src = np.arange(n) * (S - 1) / max(n - 1, 1)
        if "half_pixel" in variant:
            src = np.clip((np.arange(n) + 0.5) * S / n - 0.5, 0, S - 1)
        i0 = np.minimum(np.floor(src).astype(int), S - 1)
        i1 = np.minimum(i0 + 1, S - 1)
        f = src - i0
        return i0, i1, f
    r0, r1, fr = axis(gh)
    c0, c1, fc = axis(gw)
    rows = pe[r0] * (1 - fr)[:, None, None] + pe[r1] * fr[:, None, None]  # [gh, S, E]
    grid = rows[:, c0] * (1 - fc)[None, :, None] + rows[:, c1] * fc[None, :, None]  # [gh, gw, E]
    x = x + grid.reshape(gh * gw, E)
    # 2D rope
    prow, pcol = np.divmod(np.arange(gh * gw), gw)
    inv = 10000.0 ** (-np.arange(0, hd // 2, 2, dtype=np.float64) / (hd // 2))  # 4 frequencies
    ang = np.concatenate([prow[:, None] * inv[None], pcol[:, None] * inv[None]], 1)  # [n, 8]
    if "no_rope" in variant:
        ang = 0 * ang
    cos, sin = np.cos(ang)[:, None], np.sin(ang)[:, None]

    def rope(q):  # [n, heads, 16]: pairs (i, i + 8)
        a, b = q[..., :hd // 2], q[..., hd // 2:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin], -1)
    for i in range(int(kv["clip.vision.block_count"])):
        b = f"v.blk.{i}."
        h = layer_norm_np(x, t[b + "ln1.weight"], t[b + "ln1.bias"], eps)
        qkv = h @ t[b + "attn_qkv.weight"].T + t[b + "attn_qkv.bias"]  # [n, 3E]: q, k, v
        q, k, v = (qkv[:, j * E:(j + 1) * E].reshape(-1, nh, hd) for j in range(3))
        q, k = rope(q), rope(k)
        o = np.empty_like(q)
        for hh in range(nh):
            o[:, hh] = softmax_np(q[:, hh] @ k[:, hh].T / math.sqrt(hd)) @ v[:, hh]
        x = x + o.reshape(-1, E) @ t[b + "attn_out.weight"].T + t[b + "attn_out.bias"]
        h = layer_norm_np(x, t[b + "ln2.weight"], t[b + "ln2.bias"], eps)
        h = gelu_tanh_np(h @ t[b + "ffn_up.weight"].T + t[b + "ffn_up.bias"])
        x = x + h @ t[b + "ffn_down.weight"].T + t[b + "ffn_down.bias"]
    x = layer_norm_np(x, t["v.post_ln.weight"], t["v.post_ln.bias"], eps)
    if "raster_merge" in variant:
        x = x.reshape(-1, mg * mg * E)
    else:
        x = x.reshape(gh // mg, mg, gw // mg, mg, E).transpose(0, 2, 1, 3, 4).reshape(-1, mg * mg * E)  # by*gw/2+bx
    x = x @ t["mm.0.weight"].T + t["mm.0.bias"]
    x = gelu_tanh_np(x) if "tanh_merger" in variant else erf_gelu_np(x)
    return x @ t["mm.2.weight"].T + t["mm.2.bias"]


# ----------------------------------------------------------------------------------------------
# prompts, M-RoPE positions, logits, and an independent numpy qwen35 forward read from the text GGUF


def prompt_ids(text, n_tokens):
    ids = bpe_encode(expand_media(text, n_tokens))
    assert ids == hf_tokenizer().encode(expand_media(text, n_tokens), add_special_tokens=False), "tokenizer mismatch"
    return np.array(ids, dtype=np.int64)


def mrope_positions(ids, merged_grids):
    """[3, T] (t, h, w): text tokens p, p, p (p = the running position); an image of merged grid gh x gw starting at
    position s: token (r, c) -> (s, s + r, s + c), row-major; after it the running position is s + max(gh, gw)."""
    img = tok_id("<|image_pad|>")
    pos = np.zeros((3, len(ids)), dtype=np.int64)
    p, i, k = 0, 0, 0
    while i < len(ids):
        if ids[i] == img:
            gh, gw = merged_grids[k]
            k += 1
            r, c = np.divmod(np.arange(gh * gw), gw)
            assert all(ids[i:i + gh * gw] == img)
            pos[0, i:i + gh * gw] = p
            pos[1, i:i + gh * gw] = p + r
            pos[2, i:i + gh * gw] = p + c
            i += gh * gw
            p += max(gh, gw)
        else:
            pos[:, i] = p
            p += 1
            i += 1
    assert k == len(merged_grids)
    return pos


def hf_forward(m, ids, pvs, grids, position_ids=None, inputs_embeds=None):
    """The full model as a processor's output would be fed to it; returns (logits, the position_ids the text model
    got)."""
    seen = {}

    def grab(mod, args, kwargs):
        seen["pos"] = kwargs.get("position_ids")
    h = m.model.language_model.register_forward_pre_hook(grab, with_kwargs=True)
    mm = (ids == tok_id("<|image_pad|>")).astype(np.int64)
    m.model.rope_deltas = None
    with torch.no_grad():
        kw = dict(mm_token_type_ids=torch.from_numpy(mm[None]))
        if inputs_embeds is None:
            kw.update(input_ids=torch.from_numpy(ids[None]))
        else:
            kw.update(inputs_embeds=torch.from_numpy(inputs_embeds[None]).float())
        if pvs:
            kw.update(pixel_values=torch.from_numpy(np.concatenate(pvs)), image_grid_thw=torch.tensor(grids))
        if position_ids is not None:
            kw.update(position_ids=torch.from_numpy(position_ids))
        out = m(**kw)
    h.remove()
    return out.logits[0].float().numpy(), seen["pos"]


def hf_chunked_logits(m, ids, pvs, grids):
    """HF's cached path as a runtime runs it: the prompt up to and including the last image block in one call, then
    one token at a time through the cache (positions from the rope_deltas HF keeps)."""
    img = tok_id("<|image_pad|>")
    end = int(np.nonzero(ids == img)[0][-1]) + 2  # through <|vision_end|>
    mm = (ids == img).astype(np.int64)
    m.model.rope_deltas = None
    with torch.no_grad():
        out = m(input_ids=torch.from_numpy(ids[None, :end]), pixel_values=torch.from_numpy(np.concatenate(pvs)),
                image_grid_thw=torch.tensor(grids), mm_token_type_ids=torch.from_numpy(mm[None, :end]), use_cache=True)
        rows = [out.logits[0]]
        cache = out.cache
        for t in range(end, len(ids)):
            out = m(input_ids=torch.from_numpy(ids[None, t:t + 1]), cache=cache, use_cache=True,
                    mm_token_type_ids=torch.from_numpy(mm[None, t:t + 1]))
            cache = out.cache
            rows.append(out.logits[0])
    return torch.cat(rows).float().numpy()


def silu_np(x):
    return x / (1.0 + np.exp(-x))


def softplus_np(x):
    return np.logaddexp(0.0, x)


def imrope_sector_rows(n_pairs, sections):
    """llama.cpp's interleaved M-RoPE (ggml-cpu ops.cpp ggml_mrope_cache_init, is_imrope): rotary pair i takes the
    position row 1 (h) if i % 3 == 1 and i < 3 * s1, row 2 (w) if i % 3 == 2 and i < 3 * s2, row 0 (t) if
    i % 3 == 0 and i < 3 * s0, else row 3 (e, 0 for text)."""
    rows = []
    for i in range(n_pairs):
        sec = i % sum(sections)
        if sec % 3 == 1 and sec < 3 * sections[1]:
            rows.append(1)
        elif sec % 3 == 2 and sec < 3 * sections[2]:
            rows.append(2)
        elif sec % 3 == 0 and sec < 3 * sections[0]:
            rows.append(0)
        else:
            rows.append(3)
    return rows


def qwen35_numpy_logits(path, ids, image_rows, pos):
    """qwen35 from the text GGUF alone (float64), as llama.cpp runs it, with image_rows in place of the
    <|image_pad|> tokens' embeddings and pos ([3, T]) the M-RoPE positions."""
    kv, t, _ = gguf_tensors(path)
    A = "qwen35."
    E = int(kv[A + "embedding_length"])
    L = int(kv[A + "block_count"])
    nh, nkv = int(kv[A + "attention.head_count"]), int(kv[A + "attention.head_count_kv"])
    hd = int(kv[A + "attention.key_length"])
    eps = float(kv[A + "attention.layer_norm_rms_epsilon"])
    n_rot = int(kv[A + "rope.dimension_count"])
    sections = [int(v) for v in kv[A + "rope.dimension_sections"]]
    base = float(kv[A + "rope.freq_base"])
    every = int(kv[A + "full_attention_interval"])
    hk, dk = int(kv[A + "ssm.group_count"]), int(kv[A + "ssm.state_size"])
    hv = int(kv[A + "ssm.time_step_rank"])
    dv = int(kv[A + "ssm.inner_size"]) // hv
    K = int(kv[A + "ssm.conv_kernel"])
    T = len(ids)
    x = t["token_embd.weight"][ids].copy()
    x[ids == tok_id("<|image_pad|>")] = image_rows
    # rope angles per token and rotary pair
    pos4 = np.concatenate([pos, np.zeros((1, T), pos.dtype)], 0).astype(np.float64)
    rows = imrope_sector_rows(n_rot // 2, sections)
    inv = base ** (-np.arange(0, n_rot, 2, dtype=np.float64) / n_rot)
    ang = np.stack([pos4[rows[i]] * inv[i] for i in range(n_rot // 2)], 1)  # [T, n_rot/2]
    cos, sin = np.cos(ang)[:, None], np.sin(ang)[:, None]

    def rope(q):  # NeoX pairs (i, i + n_rot/2) over the first n_rot dims, the rest passed through
        a, b, rest = q[..., :n_rot // 2], q[..., n_rot // 2:n_rot], q[..., n_rot:]
        return np.concatenate([a * cos - b * sin, b * cos + a * sin, rest], -1)

    def l2n(v):
        return v / np.sqrt((v * v).sum(-1, keepdims=True) + eps)
    causal = np.tril(np.ones((T, T), bool))
    for il in range(L):
        b = f"blk.{il}."
        h = rms_norm_np(x, t[b + "attn_norm.weight"], eps)
        if (il + 1) % every == 0:  # full attention: per head [q (hd), gate (hd)]
            qg = (h @ t[b + "attn_q.weight"].T).reshape(T, nh, 2 * hd)
            q = rope(rms_norm_np(qg[..., :hd], t[b + "attn_q_norm.weight"], eps))
            gate = qg[..., hd:].reshape(T, nh * hd)
            k = rope(rms_norm_np((h @ t[b + "attn_k.weight"].T).reshape(T, nkv, hd), t[b + "attn_k_norm.weight"], eps))
            v = (h @ t[b + "attn_v.weight"].T).reshape(T, nkv, hd)
            o = np.empty((T, nh, hd))
            for hh in range(nh):
                kh = hh // (nh // nkv)
                s = np.where(causal, q[:, hh] @ k[:, kh].T / math.sqrt(hd), -np.inf)
                o[:, hh] = softmax_np(s) @ v[:, kh]
            y = (o.reshape(T, nh * hd) / (1.0 + np.exp(-gate))) @ t[b + "attn_output.weight"].T
        else:  # gated delta net; value head j reads key head j % hk (the converter's tiled order)
            qkv = h @ t[b + "attn_qkv.weight"].T  # [T, C]
            w = t[b + "ssm_conv1d.weight"]  # numpy [C, K]
            pad = np.concatenate([np.zeros((K - 1, qkv.shape[1])), qkv], 0)
            conv = silu_np(sum(pad[j:j + T] * w[:, j] for j in range(K)))
            q = l2n(conv[:, :hk * dk].reshape(T, hk, dk)) / math.sqrt(dk)
            k = l2n(conv[:, hk * dk:2 * hk * dk].reshape(T, hk, dk))
            v = conv[:, 2 * hk * dk:].reshape(T, hv, dv)
            z = (h @ t[b + "attn_gate.weight"].T).reshape(T, hv, dv)
            beta = 1.0 / (1.0 + np.exp(-(h @ t[b + "ssm_beta.weight"].T)))
            g = t[b + "ssm_a"] * softplus_np(h @ t[b + "ssm_alpha.weight"].T + t[b + "ssm_dt.bias"])  # [T, hv]
            o = np.empty((T, hv, dv))
            for j in range(hv):
                S = np.zeros((dk, dv))
                for tt in range(T):
                    kk, qq = k[tt, j % hk], q[tt, j % hk]
                    S = S * math.exp(g[tt, j])
                    S = S + np.outer(kk, (v[tt, j] - kk @ S) * beta[tt, j])
                    o[tt, j] = qq @ S
            o = rms_norm_np(o, t[b + "ssm_norm.weight"], eps) * silu_np(z)
            y = o.reshape(T, hv * dv) @ t[b + "ssm_out.weight"].T
        x = x + y
        h = rms_norm_np(x, t[b + "post_attention_norm.weight"], eps)
        x = x + (silu_np(h @ t[b + "ffn_gate.weight"].T) * (h @ t[b + "ffn_up.weight"].T)) @ t[b + "ffn_down.weight"].T
    return rms_norm_np(x, t["output_norm.weight"], eps) @ t["output.weight"].T


# ----------------------------------------------------------------------------------------------
# checks of the GGUF files against the HF model


def gguf_keys(path):
    r = gguf.GGUFReader(path)
    return r, [k for k in r.fields if not k.startswith("GGUF.")]


def check_mmproj(m, path):
    r, keys = gguf_keys(path)
    want = ["general.architecture", "general.type", "general.name", "general.file_type", "clip.has_vision_encoder",
            "clip.vision.projection_dim", "clip.vision.image_size", "clip.vision.patch_size",
            "clip.vision.embedding_length", "clip.vision.feed_forward_length", "clip.vision.block_count",
            "clip.vision.attention.head_count", "clip.vision.image_mean", "clip.vision.image_std",
            "clip.projector_type", "clip.use_gelu", "clip.vision.spatial_merge_size",
            "clip.vision.attention.layer_norm_epsilon", "clip.vision.is_deepstack_layers",
            "clip.vision.image_min_pixels", "clip.vision.image_max_pixels", "general.quantization_version"]
    assert keys == want, keys
    f = r.fields
    assert f["clip.projector_type"].contents() == "qwen3vl_merger"
    assert f["clip.vision.is_deepstack_layers"].contents() == [False] * V_DEPTH
    assert f["clip.vision.image_size"].contents() == 48
    assert np.array_equal(np.float32(f["clip.vision.image_mean"].contents()), np.float32(IMAGE_MEAN))
    exp = mmproj_expected(m)
    assert [x.name for x in r.tensors] == list(exp)
    for x in r.tensors:
        assert x.tensor_type == gguf.GGMLQuantizationType.F32, x.name
        a = np.array(x.data)
        assert a.shape == exp[x.name].shape and np.array_equal(a, exp[x.name]), x.name
    # the two kernels are the Conv3d's frames
    pw = m.model.visual.patch_embed.proj.weight.detach().numpy()
    assert np.array_equal(np.stack([exp["v.patch_embd.weight"], exp["v.patch_embd.weight.1"]], 2), pw)
    return keys, r


def check_text(m, path):
    """Every tensor of the text GGUF against HF's, the transforms inverted independently."""
    r, keys = gguf_keys(path)
    t = {x.name: np.array(x.data) for x in r.tensors}
    for x in r.tensors:
        assert x.tensor_type == gguf.GGMLQuantizationType.F32, x.name
    sd = {k.replace("model.language_model.", ""): v.detach().numpy() for k, v in m.named_parameters()
          if k.startswith("model.language_model.")}
    hk, hv, dk, dv = LIN_K_HEADS, LIN_V_HEADS, LIN_K_DIM, LIN_V_DIM
    r_ = hv // hk
    # GGUF value head j = rr * hk + kh (tiled) holds HF value head kh * r_ + rr (grouped)
    head_of = np.array([(j % hk) * r_ + j // hk for j in range(hv)])
    vrows = (head_of[:, None] * dv + np.arange(dv)[None]).reshape(-1)
    n = 0

    def eq(name, want):
        nonlocal n
        assert t[name].shape == want.shape and np.array_equal(t[name], want.astype(np.float32)), name
        n += 1
    eq("token_embd.weight", sd["embed_tokens.weight"])
    eq("output.weight", m.lm_head.weight.detach().numpy())
    eq("output_norm.weight", sd["norm.weight"] + np.float32(1))
    for il in range(N_LAYER):
        p, b = f"layers.{il}.", f"blk.{il}."
        eq(b + "attn_norm.weight", sd[p + "input_layernorm.weight"] + np.float32(1))
        eq(b + "post_attention_norm.weight", sd[p + "post_attention_layernorm.weight"] + np.float32(1))
        for nm in ("gate", "up", "down"):
            eq(f"{b}ffn_{nm}.weight", sd[f"{p}mlp.{nm}_proj.weight"])
        if (il + 1) % FULL_EVERY == 0:
            for g_, h_ in (("q", "q"), ("k", "k"), ("v", "v"), ("output", "o")):
                eq(f"{b}attn_{g_}.weight", sd[f"{p}self_attn.{h_}_proj.weight"])
            eq(b + "attn_q_norm.weight", sd[p + "self_attn.q_norm.weight"] + np.float32(1))
            eq(b + "attn_k_norm.weight", sd[p + "self_attn.k_norm.weight"] + np.float32(1))
        else:
            la = p + "linear_attn."
            qkv = sd[la + "in_proj_qkv.weight"]
            kd = hk * dk
            eq(b + "attn_qkv.weight", np.concatenate([qkv[:2 * kd], qkv[2 * kd:][vrows]]))
            eq(b + "attn_gate.weight", sd[la + "in_proj_z.weight"][vrows])
            eq(b + "ssm_beta.weight", sd[la + "in_proj_b.weight"][head_of])
            eq(b + "ssm_alpha.weight", sd[la + "in_proj_a.weight"][head_of])
            conv = sd[la + "conv1d.weight"][:, 0]
            eq(b + "ssm_conv1d.weight", np.concatenate([conv[:2 * kd], conv[2 * kd:][vrows]]))
            eq(b + "ssm_dt.bias", sd[la + "dt_bias"][head_of])
            eq(b + "ssm_a", -torch.exp(torch.from_numpy(sd[la + "A_log"])).numpy()[head_of])  # torch's float32 exp
            eq(b + "ssm_norm.weight", sd[la + "norm.weight"])
            eq(b + "ssm_out.weight", sd[la + "out_proj.weight"][:, vrows])
    assert n == len(t), (n, len(t))
    f = r.fields
    assert f["qwen35.rope.dimension_sections"].types == [gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.INT32]
    assert f["qwen35.rope.dimension_sections"].contents() == MROPE_SECTION + [0]
    assert f["qwen35.rope.dimension_count"].contents() == int(HEAD_DIM * PARTIAL_ROTARY)
    assert f["tokenizer.ggml.tokens"].contents() == vocab()[0]
    return keys, r


# ----------------------------------------------------------------------------------------------
# diagnostics


def describe(m, ids, pvs, grids):
    rows = []
    hooks = []

    def rms(name):
        def f(mod, args, out):
            o = out[0] if isinstance(out, tuple) else out
            if hasattr(o, "pooler_output"):
                o = o.pooler_output
            rows.append((name, float(o.float().pow(2).mean().sqrt())))
        return f
    vt = m.model.visual
    hooks.append(vt.patch_embed.register_forward_hook(rms("vit patch embd")))
    for i, blk in enumerate(vt.blocks):
        hooks.append(blk.attn.register_forward_hook(rms(f"vit {i} attn out")))
        hooks.append(blk.mlp.register_forward_hook(rms(f"vit {i} mlp out")))
        hooks.append(blk.register_forward_hook(rms(f"vit {i} out")))
    hooks.append(vt.merger.register_forward_hook(rms("merger out (image rows)")))
    lm = m.model.language_model
    hooks.append(lm.embed_tokens.register_forward_hook(rms("text embd")))
    for i, layer in enumerate(lm.layers):
        hooks.append(layer.register_forward_hook(rms(f"text {i} ({m.config.text_config.layer_types[i]}) out")))
    hf_forward(m, ids, pvs, grids)
    for h in hooks:
        h.remove()
    print("activation rms:", ", ".join(f"{n} {v:.3f}" for n, v in rows))


def margin_stats(logits):
    top2 = np.sort(logits, axis=1)[:, -2:]
    return float((top2[:, 1] - top2[:, 0]).min()), float(np.abs(logits).max())


# ----------------------------------------------------------------------------------------------
# bench: Qwen3.5-4B's shapes (its vision tower at F16 and a 2-layer qwen35 of its width), random weights written
# straight from numpy (no HF model, no golden, no check), through the tiny files' writers


def bench_configs():
    """Qwen3.5-4B's published config (Qwen/Qwen3.5-4B config.json) with 2 text layers and the tiny vocabulary."""
    from transformers import Qwen3_5TextConfig, Qwen3_5VisionConfig
    tc = Qwen3_5TextConfig(
        vocab_size=VOCAB, hidden_size=2560, intermediate_size=9216, num_hidden_layers=2, num_attention_heads=16,
        num_key_value_heads=4, head_dim=256, linear_num_key_heads=16, linear_num_value_heads=32,
        linear_key_head_dim=128, linear_value_head_dim=128, linear_conv_kernel_dim=4, full_attention_interval=2,
        rms_norm_eps=1e-6, max_position_embeddings=262144, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0, "partial_rotary_factor": 0.25,
                         "mrope_section": [11, 11, 10], "mrope_interleaved": True},
        bos_token_id=None, eos_token_id=tok_id("<|im_end|>"), pad_token_id=tok_id("<|endoftext|>"))
    assert tc.layer_types == ["linear_attention", "full_attention"]
    vc = Qwen3_5VisionConfig(depth=24, hidden_size=1024, num_heads=16, intermediate_size=4096, patch_size=16,
                             temporal_patch_size=2, spatial_merge_size=2, out_hidden_size=2560,
                             num_position_embeddings=2304, hidden_act="gelu_pytorch_tanh", in_channels=3)
    return tc, vc


def export_mmproj_bench(path, tc, vc):
    E, FF, P, T, M = vc.hidden_size, vc.intermediate_size, vc.patch_size, vc.temporal_patch_size, vc.spatial_merge_size
    mat, vec = bench_rng_helpers()
    shapes = {"attn_qkv": (3 * E, E), "attn_out": (E, E), "ffn_up": (FF, E), "ffn_down": (E, FF)}

    def get(name):  # HF name under model.visual. -> a random array of its shape, in the file's tensor order
        kind, wb = name.rsplit(".", 1)
        kind = kind.split(".", 2)[-1] if kind.startswith("blocks.") else kind
        if name == "patch_embed.proj.weight":  # [E, 3, 2, P, P]; pixels in [-1, 1] -> O(1) patch vectors
            return mat((E, 3, T, P, P), 2.0 / math.sqrt(3 * T * P * P), np.float32)
        if name == "pos_embed.weight":
            return mat((vc.num_position_embeddings, E), 0.5, np.float32)
        if kind in ("norm1", "norm2", "merger.norm"):  # LayerNorms: weight 1 + 0.1 N(0,1), bias 0.1 N(0,1)
            return vec(E, 1.0 if wb == "weight" else 0.0, 0.1)
        rows, cols = {"attn.qkv": shapes["attn_qkv"], "attn.proj": shapes["attn_out"],
                      "mlp.linear_fc1": shapes["ffn_up"], "mlp.linear_fc2": shapes["ffn_down"],
                      "merger.linear_fc1": (M * M * E, M * M * E), "merger.linear_fc2": (vc.out_hidden_size, M * M * E),
                      "patch_embed.proj": (E, 0)}[kind]
        if wb == "bias":
            return vec(rows, 0.0, 0.1)
        return mat((rows, cols), cols ** -0.5, np.float32)

    w = gguf.GGUFWriter(path, "clip")
    write_mmproj_keys(w, "lockstep bench qwen35v 4B-shaped mmproj random", vc, tc.hidden_size, tc.rms_norm_eps,
                      gguf.LlamaFileType.MOSTLY_F16, [0.5, 0.5, 0.5], [0.5, 0.5, 0.5], None)
    write_mmproj_tensors(w, mmproj_tensors(vc.depth, get), f16=True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()


def export_text_bench(path, tc):
    E, FF, V = tc.hidden_size, tc.intermediate_size, tc.vocab_size
    nh, nkv, hd = tc.num_attention_heads, tc.num_key_value_heads, tc.head_dim
    hk, hv = tc.linear_num_key_heads, tc.linear_num_value_heads
    dk, dv = tc.linear_key_head_dim, tc.linear_value_head_dim
    conv_ch = 2 * hk * dk + hv * dv
    mat, vec = bench_rng_helpers()

    def lin(rows, cols):
        return torch.from_numpy(mat((rows, cols), cols ** -0.5, np.float32))

    def vn(n, mean, std):
        return torch.from_numpy(vec(n, mean, std))
    # HF parameters (Qwen3_5ForCausalLM names), drawn in this order; the init rules of make_model's text half
    sd = {"model.embed_tokens.weight": torch.from_numpy(mat((V, E), 1.0, np.float32)),
          "lm_head.weight": lin(V, E), "model.norm.weight": vn(E, 0.0, 0.1)}
    for il, kind in enumerate(tc.layer_types):
        p = f"model.layers.{il}."
        sd[p + "input_layernorm.weight"] = vn(E, 0.0, 0.1)  # RMSNorm w: the factor 1 + w
        sd[p + "post_attention_layernorm.weight"] = vn(E, 0.0, 0.1)
        sd[p + "mlp.gate_proj.weight"] = lin(FF, E)
        sd[p + "mlp.up_proj.weight"] = lin(FF, E)
        sd[p + "mlp.down_proj.weight"] = lin(E, FF)
        if kind == "full_attention":
            sd[p + "self_attn.q_proj.weight"] = lin(2 * nh * hd, E)  # per head q then gate
            sd[p + "self_attn.k_proj.weight"] = lin(nkv * hd, E)
            sd[p + "self_attn.v_proj.weight"] = lin(nkv * hd, E)
            sd[p + "self_attn.o_proj.weight"] = lin(E, nh * hd)
            sd[p + "self_attn.q_norm.weight"] = vn(hd, 0.0, 0.1)
            sd[p + "self_attn.k_norm.weight"] = vn(hd, 0.0, 0.1)
        else:
            la = p + "linear_attn."
            sd[la + "in_proj_qkv.weight"] = lin(conv_ch, E)
            sd[la + "in_proj_z.weight"] = lin(hv * dv, E)
            sd[la + "in_proj_b.weight"] = lin(hv, E)
            sd[la + "in_proj_a.weight"] = lin(hv, E)
            sd[la + "conv1d.weight"] = torch.from_numpy(mat((conv_ch, 1, tc.linear_conv_kernel_dim), 0.5, np.float32))
            sd[la + "dt_bias"] = vn(hv, 0.0, 0.5)
            sd[la + "A_log"] = torch.log(torch.linspace(0.3, 1.5, hv))  # moderate decay in every head
            sd[la + "norm.weight"] = vn(dv, 1.0, 0.1)  # the gated norm multiplies by w
            sd[la + "out_proj.weight"] = lin(E, hv * dv)
    w = gguf.GGUFWriter(path, "qwen35")
    write_text_keys(w, "lockstep bench qwen35v 4B-shaped 2-layer random", tc, gguf.LlamaFileType.MOSTLY_F16)
    write_tensors(w, tc, sd, "qwen35", f16=True)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()


def write_bench_image(path, size=512):
    """A natural-looking RGB test image: smooth colour gradients, soft blobs, a low-frequency ripple and pixel noise
    (numpy default_rng(SEED)), as PNG."""
    rng = np.random.default_rng(SEED)
    y, x = np.mgrid[0:size, 0:size].astype(np.float64) / size
    img = np.stack([0.25 + 0.5 * y, 0.45 + 0.3 * x * (1 - y), 0.85 - 0.5 * y], -1)  # sky-to-ground gradient
    for _ in range(12):
        cy, cx, r = rng.uniform(0, 1), rng.uniform(0, 1), rng.uniform(0.04, 0.2)
        col = rng.uniform(0, 1, 3)
        a = np.exp(-((y - cy) ** 2 + (x - cx) ** 2) / (2 * r * r))[..., None]
        img = img * (1 - 0.8 * a) + 0.8 * a * col
    img += 0.05 * np.sin(2 * math.pi * (3 * x + 2 * y))[..., None] * np.array([1.0, 0.6, 0.3])
    img = img * 255 + rng.normal(0, 6, img.shape)
    Image.fromarray(np.clip(np.round(img), 0, 255).astype(np.uint8), "RGB").save(path)


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "bench"):
        raise SystemExit("usage: " + __doc__.split("Usage: ", 1)[1].split("\n", 1)[0])
    out = sys.argv[1]
    if len(sys.argv) == 3:
        os.makedirs(out, exist_ok=True)
        tc, vc = bench_configs()
        export_mmproj_bench(f"{out}/qwen35v_bench_mmproj.gguf", tc, vc)
        export_text_bench(f"{out}/qwen35v_bench.gguf", tc)
        write_bench_image(f"{out}/bench512.png")
        for fn in ("qwen35v_bench_mmproj.gguf", "qwen35v_bench.gguf", "bench512.png"):
            print(f"{out}/{fn}: {os.path.getsize(f'{out}/{fn}')} bytes")
        return
    vdir = f"{out}/vision"
    torch.set_num_threads(1)
    cfg, m = make_model()
    text_path, mmproj_path = f"{out}/qwen35v_tiny.gguf", f"{out}/qwen35v_tiny_mmproj.gguf"
    export_text(cfg, m, text_path)
    export_mmproj(cfg, m, mmproj_path)
    keys, _ = check_mmproj(m, mmproj_path)
    print("mmproj keys:", ", ".join(keys))
    tkeys, _ = check_text(m, text_path)
    print("text keys:", ", ".join(tkeys))
    toks = vocab()[0]
    print("special ids:", {s: toks.index(s) for s in SPECIALS})

    print("images:")
    pre = preprocess(vdir)
    for name, _ in IMAGES:
        write_pixels(f"{vdir}/{name}.qwen35.pixels", pre[name])

    # image embeddings: HF (each image alone, and the golden pair in one call) vs numpy from the GGUF
    worst = 0.0
    feats = {}
    for name, _ in IMAGES:
        p = pre[name]
        f = hf_image_features(m, [p["pv"]], [list(p["grid"])])[0]
        feats[name] = f
        worst = max(worst, float(np.abs(vision_numpy(mmproj_path, p["chw"]) - f).max()))
    print(f"numpy vision tower (from the mmproj GGUF and the CHW image) vs HF, all 7 images: max |diff| {worst:.2e}")
    assert worst < 1e-5
    f = feats["photo120x90"]
    for v in ("tanh_merger", "half_pixel", "no_rope", "raster_merge"):
        print(f"  variant {v} (photo120x90): max |diff| {np.abs(vision_numpy(mmproj_path, pre['photo120x90']['chw'], (v,)) - f).max():.2e}")
    pair = hf_image_features(m, [pre[n]["pv"] for n in GOLDEN_IMAGES], [list(pre[n]["grid"]) for n in GOLDEN_IMAGES])
    d = max(float(np.abs(a - feats[n]).max()) for a, n in zip(pair, GOLDEN_IMAGES))
    print(f"HF, the two golden images in one call vs each alone: max |diff| {d:.2e}")
    with open(f"{out}/qwen35v_tiny.embd", "wb") as fh:
        fh.write(struct.pack("<i", len(GOLDEN_IMAGES)))
        for name in GOLDEN_IMAGES:
            _, gh, gw = pre[name]["grid"]
            f = feats[name]
            fh.write(struct.pack("<iiii", f.shape[0], f.shape[1], gh // MERGE, gw // MERGE))
            fh.write(np.ascontiguousarray(f, dtype="<f4").tobytes())
            print(f"  embd {name}: {f.shape[0]} tokens x {f.shape[1]}, merged grid {gh // MERGE}x{gw // MERGE}, "
                  f"rms {np.sqrt((f * f).mean()):.3f}")

    # goldens
    for tag, text, names in (("qwen35v_tiny", PROMPT, GOLDEN_IMAGES), ("qwen35v_tiny_img1", PROMPT_IMG1,
                                                                       GOLDEN_IMAGES[1:])):
        grids = [list(pre[n]["grid"]) for n in names]
        merged = [(g[1] // MERGE, g[2] // MERGE) for g in grids]
        ids = prompt_ids(text, [a * b for a, b in merged])
        pvs = [pre[n]["pv"] for n in names]
        logits, hpos = hf_forward(m, ids, pvs, grids)
        write_golden_file(f"{out}/{tag}.golden", ids.astype(np.int32), logits)
        with open(f"{out}/{tag}.prompt", "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        pos = mrope_positions(ids, merged)
        hp = hpos.numpy()
        assert hp.shape == (3, 1, len(ids)) and np.array_equal(hp[:, 0], pos), "M-RoPE positions"
        if tag == "qwen35v_tiny":
            with open(f"{out}/qwen35v_tiny.rope", "wb") as fh:
                fh.write(struct.pack("<i", len(ids)))
                fh.write(np.ascontiguousarray(pos, dtype="<i4").tobytes())
            describe(m, ids, pvs, grids)
        print(f"{tag}.golden ({', '.join(names)}): {len(ids)} tokens")
        print("  tokens:", " ".join(f"{i}:{toks[i]!r}" for i in ids if i != tok_id("<|image_pad|>")),
              f"(+ {int((ids == tok_id('<|image_pad|>')).sum())} <|image_pad|>)")
        print("  positions t:", pos[0].tolist())
        print("  positions h:", pos[1].tolist())
        print("  positions w:", pos[2].tolist())
        mg, mx = margin_stats(logits)
        print(f"  smallest top-1 margin {mg:.4f}, max |logit| {mx:.3f}")
        rows = np.concatenate([feats[n] for n in names])
        npl = qwen35_numpy_logits(text_path, ids, rows, pos)
        print(f"  numpy qwen35 (from the text GGUF, llama.cpp's imrope, the image rows from .embd) vs golden: "
              f"max |diff| {np.abs(npl - logits).max():.2e}")
        assert np.abs(npl - logits).max() < 1e-4 and (npl.argmax(1) != logits.argmax(1)).sum() == 0
        ch = hf_chunked_logits(m, ids, pvs, grids)
        print(f"  HF cached (through the last image in one call, then token at a time) vs golden: max |diff| "
              f"{np.abs(ch - logits).max():.2e}")
        # what the goldens depend on
        flat = np.broadcast_to(np.arange(len(ids))[None, None], (3, 1, len(ids))).copy()
        l1, _ = hf_forward(m, ids, pvs, grids, position_ids=flat)
        print(f"  1-D positions 0..T-1 instead: max |diff| {np.abs(l1 - logits).max():.3f}")
        seq = np.broadcast_to(mrope_positions(ids, merged)[0][None, None], (3, 1, len(ids))).copy()
        l2, _ = hf_forward(m, ids, pvs, grids, position_ids=seq)
        print(f"  t position on all three rows (no 2-D image positions): max |diff| {np.abs(l2 - logits).max():.3f}")
        noimg = m.model.language_model.embed_tokens.weight.detach().numpy()[ids]
        l3, _ = hf_forward(m, ids, [], [], position_ids=pos[:, None], inputs_embeds=noimg)
        print(f"  <|image_pad|>'s own embedding instead of the image rows: max |diff| {np.abs(l3 - logits).max():.3f}")

    total = 0
    for root, _, files in os.walk(out):
        for fn in files:
            if fn.startswith("qwen35v_tiny") or fn.endswith(".qwen35.pixels"):
                p = os.path.join(root, fn)
                total += os.path.getsize(p)
                print(f"  {os.path.relpath(p, out)}: {os.path.getsize(p)} bytes")
    print(f"total size of the files written: {total} bytes")


if __name__ == "__main__":
    main()
