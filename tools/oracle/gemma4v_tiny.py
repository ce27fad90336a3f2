#!/usr/bin/env python3
r"""Tiny random-weight Gemma 4 vision-language oracle: Gemma4ForConditionalGeneration (Gemma 4's own vision tower: a
patch projection, learned 2-D position tables, RMSNorm blocks with clamped ("clippable") linears, 2-D axial rope,
3 x 3 average pooling, standardization, and the multimodal embedder) with two Gemma 4 text models over the same vision
tower: a 31B-like one ("dense": no per-layer embeddings, no KV sharing, use_bidirectional_attention "vision") and an
E2B-like one ("ple": per-layer embeddings (PLE) and KV sharing, use_bidirectional_attention null); the GGUF files
llama.cpp's converter makes of them (the two text models, arch gemma4, and one mmproj, arch clip, projector gemma4v),
HF's preprocessing of the 7 test images, the image embeddings, and each text model's logits of one chat prompt with
two images.

The models are built with `transformers` (5.24; float32, eager attention, random weights scaled for O(1)
activations, fixed seeds), exported with the tensor names, metadata keys and transforms of llama.cpp's converter
(conversion/gemma.py Gemma4Model for the text (through gemma4_tiny.export) and Gemma4VisionAudioModel for the mmproj,
conversion/base.py MmprojModel, gguf-py's tensor map, at d32676d; re-implemented here, not copied), and every output
is checked by a second, independent computation (see "Checks").

Usage: tools/oracle/gemma4v_tiny.py OUT_DIR
       (/work/oracle-venv/bin/python tools/oracle/gemma4v_tiny.py tests/data; needs torch, transformers, gguf, Pillow;
       about 15 s on one core). Reads OUT_DIR/vision/<image file> (the test images vision_tiny.py draws; not
       rewritten) and writes, little-endian, 1 516 270 bytes in all:
         gemma4v_tiny.gguf             226 720   the 31B-like text model ("dense")
         gemma4v_tiny_ple.gguf         297 568   the E2B-like text model ("ple")
         gemma4v_tiny_mmproj.gguf      251 744   the vision tower and embedder (the same for both)
         gemma4v_tiny.embd              16 420   the image embeddings of rgb100x37 and photo120x90
         gemma4v_tiny.golden           214 436   tokens and logits of the two-image prompt, dense model ("vision" mask)
         gemma4v_tiny_ple.golden       214 436   the same for the ple model (plain causal)
         gemma4v_tiny.prompt                82   the prompt's text, <__media__> for each image
         vision/<name>.gemma4.pixels  41 784 .. 42 324 (7 files, 294 864 in all)

Shapes below are GGUF ne order (ne[0] first = the contiguous dimension; a torch/numpy [rows, cols] matrix is ne
[cols, rows]). All tensors of all three files are F32.

Which attention over image tokens (HF's use_bidirectional_attention; the rule lockstep applies)
  The published checkpoints differ: E2B and E4B (per-layer embeddings, KV sharing) have use_bidirectional_attention
  null: image tokens plain causal like text; 26B-A4B and 31B (no per-layer embeddings, no KV sharing) have
  "vision": in the sliding layers an image token also sees its whole image, the full layers stay causal (see
  "Attention over image tokens" below). The converter writes no key for it (nor does the GGUF format have one), so
  lockstep decides by the file: a text model with per-layer embeddings (per_layer_token_embd present) is E2B/E4B-like
  -> causal; one without -> "vision". The two text models here are one of each, as the checkpoints combine them
  (gemma4v_tiny.gguf: no PLE, "vision"; gemma4v_tiny_ple.gguf: PLE, causal); both goldens are over the same prompt,
  images, mmproj and .embd rows.

The models (HF config; transformers' Gemma4Config, Gemma4TextConfig, Gemma4VisionConfig)
  text, both: vocab 320, hidden 32, 4 layers, layer_types sliding, full, sliding, full (layers 0 and 2 sliding,
    sliding_window 8; layers 1 and 3 full); 2 query heads; head_dim 16 (sliding) / global_head_dim 32 (full); FFN 64
    (GELU-tanh gated); max_position_embeddings 256; rms eps 1e-6; final_logit_softcapping 30; tied output;
    pad_token_id 0. rope_parameters: sliding {default, theta 10000} (head 16: all 8 pairs turn), full {proportional,
    partial_rotary_factor 0.25, theta 1e6} (head 32: pairs 0..3 turn at pos * 1e6^(-2i/32), pairs 4..15 do not).
  text "dense" (gemma4v_tiny.gguf; 31B-like: the 31B has 60 layers 5:1 sliding:full, window 1024, 32 query heads,
    16 KV heads of 256 in the sliding layers and 4 of 512 with V = K in the full ones): num_key_value_heads 2 (sliding
    layers), num_global_key_value_heads 1 (full layers), attention_k_eq_v true (full layers have no v_proj: V is the
    raw K projection, then the weightless v_norm), hidden_size_per_layer_input 0 (no PLE), num_kv_shared_layers 0
    (every layer its own K/V), use_double_wide_mlp false; use_bidirectional_attention "vision".
  text "ple" (gemma4v_tiny_ple.gguf; E2B-like): 1 KV head in every layer, the last layer KV-shared
    (num_kv_shared_layers 1: layer 3 reads the K/V of layer 1, the last full layer before it; layer 2 is the sliding
    "store" layer) with a double-wide MLP (128); PLE hidden_size_per_layer_input 8, vocab_size_per_layer_input 320;
    use_bidirectional_attention null.
  vision (Gemma4VisionConfig): hidden 48, 2 layers, 3 heads of 16 (num_key_value_heads 3), intermediate 96
    (gelu_pytorch_tanh, gated), patch_size 2, pooling_kernel_size 3 (Gemma 4's), position_embedding_size 128,
    rope_parameters {axial, theta 100}, rms_norm_eps 1e-6, use_clipped_linears true, standardize true.
  embedder (embed_vision): RMSNorm without a weight (eps 1e-6), then embedding_projection 48 -> 32, no bias.
  token ids (the HF config's): boi_token_id 313 (<|image>), image_token_id 315 (<|image|>), eoi_token_id 317
    (<image|>), boa 314 (<|audio>), audio 316 (<|audio|>), eoa 318 (<audio|>), video 319 (<|video|>); bos 2, eos 1,
    pad 0.
  init: the ple model first (torch.manual_seed(4040), then a torch.Generator seeded 4040 over all its
    named_parameters(), text and vision); then the dense model's text (a torch.Generator seeded 4042 over its language
    model's named_parameters(), the same rules), its vision tower and embedder (parameters and the calibrated buffers)
    copied from the ple model. Text as gemma4_tiny.py (matrices and embeddings N(0, 1/fan_in), RMSNorm weights 1 + 0.2
    N(0,1), the final norm's weight then x 4 (logits up to ~16, bent by the soft-cap), layer_scalar 0.6 + 0.8 U(0,1)
    from the same generator) except q_norm / k_norm weights 0.5 (1 + 0.2 N(0,1)) (attention has scale 1: q.k of std
    ~1 instead of ~sqrt(head)); vision: input_proj N(0, 3/12), position_embedding_table 0.5 N(0,1), matrices N(0,
    1/fan_in), RMSNorm weights (q_norm, k_norm included) 1 + 0.2 N(0,1). Then (calibrate(), a torch.Generator seeded
    4041) the buffers, from the two golden images: each clippable linear's input_min / input_max = the 1% / 99%
    quantiles of its input, output_min / output_max = the 0.5% / 99.5% of its output (rounded to 2 decimals; computed
    layer after layer with the earlier bounds in place: about 2% of the inputs and 0.2-1% of the outputs are
    clamped), then std_bias = per-channel mean + 0.3 std N(0,1) and std_scale = (1 + 0.2 N(0,1)) / std of the pooled,
    scaled features.

Tokenizer (in both text GGUFs; gemma4_tiny.vocab(320, TAIL): what lockstep tokenizes the prompt with)
  tokenizer.ggml.model "gemma4" (BPE merges by rank over "\u2581"-escaped text, byte fallback), tokens: <pad> 0,
  <eos> 1, <bos> 2, <unk> 3, <mask> 4, <|turn> 5, <turn|> 6 (control, 3), <0x00>..<0xFF> 7..262 (byte, 6), "\u2581"
  263, a..z 264..289, "\n" 290, "." 291, "," 292, "!" 293, "?" 294, merges' products "\u2581t" 295, he 296,
  "\u2581the" 297, "\u2581a" 298, in 299, er 300 (normal, 1), <|channel> .. <tool_response|> 301..306 (user-defined,
  4), <unused0>..<unused5> 307..312 (unused, 5), then Gemma 4's multimodal tokens in the real ids' order (boi
  255999, boa 256000, image 258880, audio 258881, eoi 258882, eoa 258883, video 258884): <|image> 313, <|audio> 314,
  <|image|> 315, <|audio|> 316, <image|> 317, <audio|> 318, <|video|> 319 (control, 3: what the converter types
  them, the tokenizer.json marking them special). merges: the 6 above. bos 2, eos 1, unknown 3, padding 0,
  add_bos_token true.

The text GGUFs (general.architecture "gemma4"): gemma4_tiny.export (the 7 tokens above as the vocabulary's tail;
  ple_key_always: embedding_length_per_layer_input written also when 0, as the converter does,
  conversion/gemma.py:661-663). Keys, in this order, the same in both files (values dense / ple where they differ):
  general.architecture, general.name "lockstep tiny gemma4v" / "lockstep tiny gemma4v ple", gemma4.block_count 4,
  context_length 256, embedding_length 32, feed_forward_length i32[4] [64, 64, 64, 64] / [64, 64, 64, 128],
  attention.head_count 2, attention.head_count_kv i32[4] [2, 1, 2, 1] / [1, 1, 1, 1],
  attention.sliding_window_pattern bool[4] [true, false, true, false], attention.sliding_window 8,
  attention.shared_kv_layers u32 0 / 1, attention.key_length 32, attention.value_length 32, attention.key_length_swa
  16, attention.value_length_swa 16, attention.layer_norm_rms_epsilon 1e-6, rope.freq_base 1e6, rope.freq_base_swa
  10000, rope.dimension_count 32, rope.dimension_count_swa 16, final_logit_softcapping 30,
  embedding_length_per_layer_input u32 0 / 8, then tokenizer.ggml.model, tokens, token_type, merges, bos_token_id,
  eos_token_id, unknown_token_id, padding_token_id, add_bos_token. No transform (Gemma 4's RMSNorm multiplies by w).
  gemma4v_tiny.gguf (dense), 57 tensors: token_embd [32,320], output_norm [32], rope_freqs [16] (1 x 4, 1e30 x 12);
    per layer blk.N.: attn_norm [32], attn_q [32, 2 x head] ([32,32] sliding, [32,64] full), attn_q_norm [head],
    attn_k [32, n_kv x head] ([32,32] in both: 2 x 16 sliding, 1 x 32 full), attn_k_norm [head], attn_v [32,32] in
    the sliding layers 0 and 2 only (the full layers' V is their raw K projection: attention_k_eq_v),
    attn_output [2 x head, 32], post_attention_norm, ffn_norm, ffn_gate / ffn_up [32,64], ffn_down [64,32],
    post_ffw_norm, layer_output_scale [1]. No per_layer_token_embd / per_layer_model_proj / per_layer_proj_norm, no
    inp_gate / proj / post_norm (the checkpoint has none; the converter writes none).
  gemma4v_tiny_ple.gguf (ple), 71 tensors: token_embd [32,320], output_norm [32], rope_freqs [16],
    per_layer_token_embd [32,320] (row t: layer l's 8 values at 8l..8l+7), per_layer_model_proj [32,32],
    per_layer_proj_norm [8]; per layer blk.N.: attn_norm, attn_q [32, 2 x head], attn_q_norm [head], attn_k / attn_v
    [32, head] and attn_k_norm [head] (not in layer 3), attn_output, post_attention_norm, ffn_norm, ffn_gate / ffn_up
    [32, 64 (128 in layer 3)], ffn_down, post_ffw_norm, inp_gate [32,8], proj [8,32], post_norm [32],
    layer_output_scale [1].

gemma4v_tiny_mmproj.gguf (the vision tower and embedder; general.architecture "clip")
  keys, in this order (MmprojModel.set_gguf_parameters, conversion/base.py:2431-2452, then Gemma4VisionAudioModel's,
  conversion/gemma.py:826-832, then general.quantization_version):
    general.architecture "clip", general.type "mmproj", general.name "lockstep tiny gemma4v mmproj",
    general.file_type u32 0, clip.has_vision_encoder bool true, clip.vision.projection_dim u32 32 (the text hidden),
    clip.vision.image_size u32 224 (a constant: gemma.py:816, "unused"), clip.vision.patch_size u32 2,
    clip.vision.embedding_length u32 48, clip.vision.feed_forward_length u32 96, clip.vision.block_count u32 2,
    clip.vision.attention.head_count u32 3, clip.vision.image_mean f32[3] [0, 0, 0], clip.vision.image_std f32[3]
    [1, 1, 1] (preprocessor_config.json's; the processor does not normalize), clip.vision.projector_type "gemma4v"
    (the mixed-modality key, add_clip_vision_projector_type: NOT clip.projector_type; llama.cpp reads
    clip.projector_type first, then clip.vision.projector_type, clip.cpp:1199-1215),
    clip.vision.attention.layer_norm_epsilon f32 1e-6 (hparams_vision.get("layer_norm_eps", 1e-6): Gemma 4 configs
    name theirs rms_norm_eps, so the converter always writes 1e-6), general.quantization_version u32 2.
    Not written: pooling kernel (llama.cpp takes 3, or clip.vision.projector.scale_factor if present,
    clip.cpp:1520-1526), rope theta (llama.cpp: 100), head_dim / head_count_kv, position_embedding_size (the
    table's shape), clip.use_gelu (see "llama.cpp and HF differ"), use_bidirectional_attention, any token budget.
  tensors (F32; written in the order of their HF names sorted, as save_pretrained's safetensors lists them; 87):
    model.embed_vision.embedding_projection.weight [32,48] -> mm.input_projection.weight (48,32) (a plain linear:
      ne[0] = 48 in, ne[1] = 32 out; clip_n_mmproj_embd = ne[1], clip.cpp:5385-5388)
    model.vision_tower.encoder.layers.N. (N = 0, 1) -> v.blk.N.:
      input_layernorm -> ln1.weight (48); post_attention_layernorm -> attn_post_norm.weight (48);
      pre_feedforward_layernorm -> ln2.weight (48); post_feedforward_layernorm -> ffn_post_norm.weight (48);
      self_attn.q_norm / k_norm -> attn_q_norm / attn_k_norm.weight (16) (per head); (v_norm has no weight)
      self_attn.{q,k,v,o}_proj.linear.weight -> attn_q / attn_k / attn_v / attn_out.weight (48,48);
      mlp.gate_proj / up_proj .linear.weight -> ffn_gate / ffn_up.weight (48,96); mlp.down_proj -> ffn_down (96,48);
      each of those 7 linears' 0-d buffers input_max, input_min, output_max, output_min -> v.blk.N.<name>.input_max
        (etc.), shape (1) (gemma.py:855-857 unsqueezes 0-d tensors; the map's try_suffixes, gemma.py:882).
    patch_embedder.input_proj.weight [48, 12] -> v.patch_embd.weight (2,2,3,48): HF's column (y*2 + x)*3 + c (a patch
      flattened (y, x, c)) reshaped [48, 2, 2, 3] and permuted to [48, 3, 2, 2] (gemma.py:877-881): a conv kernel
      [out][c][y][x], no bias.
    patch_embedder.position_embedding_table [2, 128, 48] -> v.position_embd.weight (48,128,2): table 0 (x) rows 0..127
      then table 1 (y); forced F32 (gemma.py:848-849).
    std_bias, std_scale [48] -> v.std_bias, v.std_scale (48).
  the clamp bounds (input_min, input_max; output_min, output_max; float32 of these decimals):
    blk.0: attn_q -2.58, 2.53; -2.86, 2.77   attn_k -2.58, 2.53; -2.54, 2.69   attn_v -2.58, 2.53; -2.56, 2.49
           attn_out -1.49, 1.49; -1.58, 1.7   ffn_gate -2.54, 2.44; -2.64, 2.56   ffn_up -2.54, 2.44; -2.78, 2.69
           ffn_down -2.13, 2.21; -1.7, 1.61
    blk.1: attn_q -2.59, 2.46; -3.22, 2.87   attn_k -2.59, 2.46; -2.81, 2.84   attn_v -2.59, 2.46; -2.84, 3.15
           attn_out -1.36, 1.53; -1.68, 1.49   ffn_gate -2.5, 2.31; -2.44, 2.46   ffn_up -2.5, 2.31; -2.44, 2.66
           ffn_down -1.88, 1.97; -1.57, 1.6

How the vision tower computes (HF modeling_gemma4.py; llama.cpp tools/mtmd/models/gemma4v.cpp the same except where
noted under "llama.cpp and HF differ"), for an image of ph x pw patches:
  x = 2 (pixel - 0.5) (pixel = the rescaled byte, float32; :612; llama.cpp scale_bias(2, -1), gemma4v.cpp:9: the
  same float32 bits for all 256 byte values); patch n = (py, px) raster order, its (y, x, c) values . input_proj (no
  bias) + table0[px] + table1[py] (:586-617; padding rows get no position embedding). Per layer (:962-1004): h =
  RMSNorm(x) * ln1; q = RMSNorm_head(clamp_lin_q(h)) * q_norm, k likewise, v = RMSNorm_head(clamp_lin_v(h)) (no
  weight, :939); 2-D rope per head (:703-889): dims 0..7 NeoX-rotated by px (pairs (i, i + 4), angle px *
  100^(-2i/8), i = 0..3), dims 8..15 by py; scores q.k (scaling 1.0, :902), softmax over the image's patches
  (padding keys masked); o = clamp_lin_o(attn); x += RMSNorm(o) * attn_post_norm; h = RMSNorm(x) * ln2; x +=
  RMSNorm(clamp_lin_down(gelu_tanh(clamp_lin_gate(h)) * clamp_lin_up(h))) * ffn_post_norm. clamp_lin(v) =
  clamp(clamp(v, input_min, input_max) . W, output_min, output_max) (:167-193). Pooling (:620-684): token (ty, tx) =
  the mean of patches (3ty + dy, 3tx + dx), row-major (kernel_idx = px/3 + (pw/3) (py/3), :654), times sqrt(48)
  (:631; float32); then (x - std_bias) * std_scale (:2110); then the embedder RMSNorm (no weight) and
  embedding_projection (:2116-2140). Result: (ph/3)(pw/3) rows of 32, row k = token (k / (pw/3), k % (pw/3)).

HF preprocessing (what the .gemma4.pixels files hold; transformers 5.24's PIL backend Gemma4ImageProcessorPil,
image_processing_pil_gemma4.py, patch_size 2, max_soft_tokens 70, pooling_kernel_size 3, resample BICUBIC,
rescale 1/255, do_normalize false, do_convert_rgb true. Gemma4ImageProcessor, the name save_pretrained writes into
preprocessor_config.json, is the torchvision backend (absent here); AutoImageProcessor would pick it when torchvision
is installed)
  1. convert to RGB as vision_tiny.py describes (alpha and tRNS composited onto white; L replicated; P through its
     palette).
  2. the size for the token budget (get_aspect_ratio_preserving_size, :36-87; restated in target_size_ref): with
     H, W the image's size, p = 2, k = 3, N = max_soft_tokens = 70 (the processor accepts only 70, 140, 280, 560 or
     1120, :33, :156-157; 280 by default; 70 is the smallest), in Python doubles:
       max_patches = N k^2 (630); target_px = max_patches p^2 (2520); factor = sqrt(target_px / (H W));
       s = k p (6); h' = floor(factor * H / s) * s; w' = floor(factor * W / s) * s (factor * H computed first,
       then divided by s);
       if h' = w' = 0: error; if h' = 0: h' = s, w' = min(floor(W / H) * s, N s); if w' = 0: w' = s,
       h' = min(floor(H / W) * s, N s); (h' w' > target_px: error, unreachable otherwise).
     So the image is scaled UP or down to fill the budget (the largest multiple-of-s size with at most max_patches
     patches at the image's aspect ratio, each side rounded down separately); tokens = (h'/p)(w'/p)/k^2 <= N.
     If (h', w') = (H, W) nothing is resized (:192-193; no test image here), else:
  3. resize to w' x h' with Pillow's BICUBIC on the 8-bit RGB image (image_transforms.py resize: Image.resize, no
     reducing_gap) -- bytes, not floats. Pillow's bicubic (libImaging/Resample.c; re-implemented in
     qwen35v_tiny.pil_resample_numpy, byte-exact for every image here, and described in qwen35v_tiny.py): separable,
     antialiased (support 2 x max(scale, 1)), Keys a = -0.5, 22-bit fixed-point coefficients, horizontal pass into
     uint8 rows first, each output clamped to 0..255.
  4. rescale: x = float32(double(byte) * (1/255)) (image_transforms.py:121; = byte / 255.0f in float32 for all
     256 values); no normalization (Gemma 4 scales in the model).
  5. patchify (convert_image_to_patches, :91-102): row n = patch (n / pw, n % pw) of the ph x pw grid (ph = h'/2,
     pw = w'/2), its 12 values ordered (y, x, c); positions (x, y) = (n % pw, n / pw) (:255-259); both padded to
     max_patches = 630 rows with zero rows and (-1, -1) positions (pad_along_first_dim, :106-117).
  The image's tokens: num_soft_tokens_per_image = ph pw / 9 (:253); Gemma4Processor.replace_image_token
  (processing_gemma4.py:199-201) turns each "<|image|>" of the text into "<|image>" + n x "<|image|>" + "<image|>"
  (nothing around them, unlike Gemma 3's "\n\n").

Test images (OUT_DIR/vision/, drawn by vision_tiny.py), resized size (w x h), patch grid ph x pw, token grid:
  rgb64        RGB 64x64    -> 48x48  down  24x24  8x8   64 tokens
  rgb100x37    RGB 100x37   -> 78x30  down  15x39  5x13  65 tokens   (image A of the goldens)
  gray23x31    L 23x31      -> 42x54  up    27x21  9x7   63 tokens
  rgba50       RGBA 50x50   -> 48x48  down  24x24  8x8   64 tokens
  photo120x90  JPEG 120x90  -> 54x42  down  21x27  7x9   63 tokens   (image B)
  pal7x5       P 7x5        -> 54x42  up    21x27  7x9   63 tokens
  paltrns9x6   P 9x6 + tRNS -> 60x36  up    18x30  6x10  60 tokens

The prompt, positions, attention, golden
  gemma4v_tiny.prompt (UTF-8, no trailing newline beyond the text's own):
    "<bos><|turn>user\n<__media__>Describe this and<__media__>that.<turn|>\n<|turn>model\n"
    (Gemma 4's chat template, models/templates/google-gemma-4-31B-it.jinja, for a user turn [image, "Describe this
    and", image, "that."] (text items trimmed) with the generation prompt; BOS written out: tokenize with special
    tokens parsed and no BOS added). Image A (rgb100x37) at the first <__media__>, image B (photo120x90) at the
    second; each becomes <|image> + n x <|image|> + <image|> (n = 65, 63; llama.cpp's mtmd uses the same tags,
    mtmd.cpp:856-862). HF's ids (Gemma4Processor over GemmaTokenizer; equal to gemma4_encode, llama.cpp's
    algorithm, on the expanded text):
    2 <bos>, 5 <|turn>, 284 u, 282 s, 300 er, 290 \n, 313 <|image>, 315 x 65 (positions 7..71), 317 <image|>,
    75 <0x44> ("D" by byte fallback), 268 e, 282 s, 266 c, 281 r, 272 i, 265 b, 268 e, 295 "\u2581t", 271 h, 272 i,
    282 s, 298 "\u2581a", 277 n, 267 d, 313 <|image>, 315 x 63 (positions 89..151), 317 <image|>, 283 t, 271 h,
    264 a, 283 t, 291 ., 6 <turn|>, 290 \n, 5 <|turn>, 276 m, 278 o, 267 d, 268 e, 275 l, 290 \n: 167 tokens.
  positions: 0..166, one per token, image tokens included (HF: arange, modeling_gemma4.py:2463; no M-RoPE).
  embeddings: text rows token_embd[id] * sqrt(32) (Gemma4TextScaledWordEmbedding; float32 sqrt); the image rows
    (the .embd rows, in order) replace the <|image|> rows AFTER that scaling: not scaled (masked_scatter, :2409;
    llama.cpp: ggml_scale(inpL, ubatch.token ? sqrtf(n_embd) : 1), src/models/gemma4.cpp:155).
  PLE at image positions (the ple model): the token-identity part uses the padding token's row (input ids replaced by
    text_config.pad_token_id = 0 at multimodal positions, :2381; llama.cpp: row 0, gemma4.cpp:430), scaled by
    sqrt(8); the projection part projects the merged embeddings (image rows included).
  Attention over image tokens (HF, :2476-2492 and create_masks_for_vision_model :2143-2203): only when
    text_config.use_bidirectional_attention == "vision" AND mm_token_type_ids is passed (the processor returns it:
    1 at <|image|>, 0 elsewhere; <|image> and <image|> are text). Image blocks = maximal runs of image tokens
    (get_block_sequence_ids_for_mask, :2206-2221; here tokens 7..71 and 89..151). Then:
      full (global) layers: causal only, k <= q -- NOT bidirectional;
      sliding layers: (k <= q OR q, k in the same image block) AND k > q - 8 (sliding_window_overlay: every later
        key passes, so an image token sees all later tokens of its own image, however far).
    With use_bidirectional_attention null (E2B, E4B), or without mm_token_type_ids: plain causal (+ window) in every
    layer: HF then ignores mm_token_type_ids. generate() passes mm_token_type_ids on the prefill only (:2746-2756).
    gemma4v_tiny.golden (dense) is under "vision" (attention_masks(ids, "vision")), gemma4v_tiny_ple.golden (ple)
    plain causal (attention_masks(ids, "causal")): the rule in "Which attention over image tokens".
  gemma4v_tiny.golden, gemma4v_tiny_ple.golden: golden.py's format (tests/support/golden.h read_golden): int32 n
    (167), int32 n_vocab (320), n int32 tokens (the image tokens as 315; the same in both), n x 320 float32 logits
    (row t: after tokens 0..t), the whole prompt in one forward of Gemma4ForConditionalGeneration(input_ids,
    attention_mask, mm_token_type_ids, pixel_values [2, 630, 12], image_position_ids [2, 630, 2]) as
    Gemma4Processor returns them.
  text forward (as the numpy check computes it from either text GGUF, llama.cpp's graph): x = the rows above; with
    PLE (per_layer_token_embd present) per-layer inputs ple[l] = (RMSNorm((x . per_layer_model_proj) / sqrt(32)) per
    8 * per_layer_proj_norm + sqrt(8) per_layer_token_embd[id or 0][l]) / sqrt(2); per layer (head 16, base 10000,
    no factors if sliding; head 32, base 1e6, rope_freqs if full; NeoX pairs (i, i + head/2)): h = RMSNorm(x) *
    attn_norm; q = rope(RMSNorm_head(attn_q h) * attn_q_norm); unless KV-shared: k = rope(RMSNorm_head(attn_k h) *
    attn_k_norm), v = RMSNorm_head(attn_v h) (no weight), or RMSNorm_head(attn_k h) (the raw K projection, no
    weight) where the layer has no attn_v (dense layers 1 and 3); in the ple model layer 3 uses layer 1's k, v;
    query head i reads KV head i / (2 / head_count_kv[l]); scores q.k (scale 1) with the variant's mask; x +=
    RMSNorm(attn_output o) * post_attention_norm; h = RMSNorm(x) * ffn_norm; x += RMSNorm(ffn_down(gelu_tanh(ffn_gate
    h) * ffn_up h)) * post_ffw_norm; with PLE x += RMSNorm(proj(gelu_tanh(inp_gate x) * ple[l])) * post_norm; x *=
    layer_output_scale; logits = 30 tanh(((RMSNorm(x) * output_norm) . token_embd) / 30). RMSNorm eps 1e-6.

Output formats (besides the GGUFs, goldens and prompt)
  vision/<name>.gemma4.pixels: int32 h, int32 w (the resized size, multiples of 6); int32 ph (h/2), int32 pw (w/2)
    (the patch grid); int32 n_tokens (ph pw / 9); int32 max_patches (630); h*w*3 uint8: the resized RGB bytes, HWC
    (step 3, before rescaling); max_patches x 12 float32: HF's pixel_values as they are (step 5: ph*pw real rows,
    then zero rows); max_patches x 2 int32: HF's image_position_ids (x, y) (int64 in HF; (-1, -1) on padding rows).
  gemma4v_tiny.embd: int32 n_images (2); per image (rgb100x37, then photo120x90): int32 n_tokens, int32 n_embd (32),
    int32 grid_h, int32 grid_w (the token grid: 5, 13 and 7, 9), then n_tokens x 32 float32 (row k = token (k /
    grid_w, k % grid_w)): get_image_features(...).pooler_output of the image alone (the same bits as both in one
    call).

llama.cpp and HF differ (d32676d against transformers 5.24)
  - preprocessing: llama.cpp decodes with stb_image (alpha dropped, not composited), sizes with its smart_resize
    (mtmd_image_preprocessor_dyn_size, mtmd-image.cpp:932-950; calc_size_preserved_ratio :167-190: multiples of
    p k rounded to NEAREST, kept as is between 40 and 280 tokens, clip.cpp:1533 set_limit_image_tokens(40, 280)),
    not HF's fill-the-budget floor rule, and resizes with its own BILINEAR (clip.cpp:1525), not Pillow's BICUBIC; no
    padding rows. rescale / 2x - 1: the same bits as HF.
  - the vision FFN activation: the converter writes no clip.use_gelu for gemma4v, so llama.cpp's ffn_op is
    GELU_QUICK (x sigmoid(1.702 x), clip.cpp:1306-1323) where HF uses gelu_pytorch_tanh: 3.9e-2 on photo120x90's
    embeddings here (variant gelu_quick).
  - attention over image tokens: llama.cpp decodes every gemma4v image chunk non-causally
    (mtmd_decode_use_non_causal, mtmd.cpp:2037-2049), in every layer (full layers too), for every checkpoint; HF does
    it only with use_bidirectional_attention "vision" (26B-A4B, 31B) and only in sliding layers; E2B / E4B are causal
    in HF. No GGUF key says which (the converter writes none). On this prompt, llama.cpp's mask: dense 7.94 from its
    golden (43 of 167 argmaxes differ), ple 23.3 (125 differ).
  - pooling kernel and vision rope theta are config values in HF, constants (3, 100) in llama.cpp; the vision and
    embedder RMSNorm eps is rms_norm_eps in HF, the constant 1e-6 the converter writes in llama.cpp.
  - transformers 5.24 cannot feed the converter as is: AutoConfig.from_pretrained(...).to_dict() (base.py:1053)
    has no text_config.global_head_dim nor num_global_key_value_heads (5.24 folds both into per_layer_config and
    save_pretrained drops them), so Gemma4Model.generate_extra_tensors raises KeyError (gemma.py:711), and without
    num_global_key_value_heads the converter would write head_count_kv as one u32 (2 for the dense model, wrong for
    its full layers, gemma.py:688-693); the check below read config.json directly, with "global_head_dim": 32 (and
    for the dense model "num_global_key_value_heads": 1) added.

Checks (all run on every invocation; the numbers are this file's)
  - GGUF files re-read with gguf-py: the mmproj's key list and order as above and every tensor F32, of its shape and
    bit-equal to the HF tensor under the transform inverted independently (the patch kernel by index arithmetic),
    against both models' vision towers; tensor order as the converter's; each text file's every tensor bit-equal to
    its HF language model (the ple model's KV-shared layer without attn_k / attn_v / attn_k_norm; the dense model's
    full layers without attn_v and HF's v_proj None; no per_layer tensors in the dense file), tokens and types as
    vocab(), the swa pattern, FFN lengths, head_count_kv, shared_kv_layers and embedding_length_per_layer_input.
  - preprocessing, all 7 images: the resized size equals target_size_ref; Pillow's bicubic re-implemented
    byte-exact; pixel_values' real rows bit-equal to patchify(rescale(those bytes)), padding rows zero, positions
    (x, y) and -1; token counts; downscaling and upscaling both covered (no image keeps its size).
  - vision: a float64 numpy tower read from the mmproj GGUF alone (vision_numpy, from the resized bytes): within
    3.2e-6 of HF for all 7 images (required < 1e-5); HF's features the same bits from both models. Variants,
    photo120x90: gelu_quick 3.9e-2, no clamps 1.02, no standardization 1.65, rope axes swapped 3.41, no v norm 0.60.
    HF with both golden images in one call: the same bits as each alone.
  - prompt: Gemma4Processor's input_ids equal gemma4_encode(expand_media(...)) (llama.cpp's tokenizer algorithm,
    re-implemented) and its mm_token_type_ids the <|image|> positions; its pixel_values / image_position_ids equal the
    .pixels files'; per model, the position_ids HF's text model received are 0..166 and the 4-D masks HF built for the
    full and sliding layers equal attention_masks(ids, "vision") (dense) / (ids, "causal") (ple) element for element.
  - text, per model: a float64 numpy Gemma 4 from the text GGUF alone (gemma4_numpy_logits, the image rows from
    .embd) gives the golden within 1.1e-5 (dense) / 7.2e-5 (ple) (required < 3e-4, no argmax differing) -- the
    models' float32 noise: HF's own text path run in float64 throughout (hf_float64_logits) is 1.1e-5 / 7.2e-5 from
    the float32 golden and 2.3e-13 / 2.3e-11 from the numpy forward (required < 1e-9); HF's cached path (through the
    last <image|> in one call, then one token at a time) 6.7e-6 / 4.7e-5. The other mask in HF against numpy: dense
    without mm_token_type_ids (plain causal; masks checked) vs numpy "causal" 1.4e-5; ple with
    use_bidirectional_attention switched to "vision" (masks checked) vs numpy "vision" 1.0e-4 (required < 3e-4); ple
    without mm_token_type_ids: the golden's bits.
  - each golden depends on what it should (max |logit diff|, argmaxes differing of 167): the other mask (HF): dense
    causal 16.4 (117), ple "vision" 23.5 (120); llama.cpp's all-layer mask: dense 7.94 (43), ple 23.3 (125);
    <|image|>'s own embedding instead of the image rows: 20.4 / 22.6; image rows scaled by sqrt(32): 18.0 / 20.1.
    The two goldens differ by 25.5 (165).
  - statistics: smallest top-1 margin dense 0.0042 / ple 0.0029, max |logit| 15.79 / 17.21; activation rms: vision
    patch embeddings 1.31, blocks 1.87 / 2.36, image rows 0.97 (A 0.975, B 0.967); dense text embeddings 1.07, layers
    2.08 / 2.97 / 3.01 / 3.22; ple text embeddings 0.97, layers 2.21 / 1.83 / 2.91 / 3.04.
  - llama.cpp's converter (d32676d, gguf-py of the same tree; run by hand on save_pretrained of the models with
    the processor's preprocessor_config.json and the tokenizer saved beside them, AutoConfig bypassed as said above):
    --mmproj writes the same keys, values, types and order (plus general.size_label, its own general.name) and the
    same 87 tensors, bit-identical, in the same order; the ple text file has the same 71 tensors bit-identical and the
    dense one the same 57 (no per_layer tensors; no attn_v in layers 1 and 3; embedding_length_per_layer_input u32 0
    and head_count_kv [2, 1, 2, 1] as here) (in its own order: rope_freqs, then the checkpoint's sorted names) and the
    image tokens typed control as here; its keys differ as gemma4_tiny.export's always have (key order; for the ple
    model head_count_kv a u32 1, not an array; for the dense one feed_forward_length a u32 64, not an array;
    general.type / size_label / file_type / quantization_version, tokenizer.ggml.scores, mask_token_id,
    add_space_prefix false added; <|turn> / <turn|> / <unusedN> typed normal).
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
import gemma4_tiny  # noqa: E402
from qwen35v_tiny import pil_resample_numpy  # noqa: E402
from vision_tiny import gelu_tanh_np, gguf_tensors, hf_rgb, rms_norm_np, softmax_np, write_golden_file  # noqa: E402

SEED = 4040

# text models (Gemma4TextConfig): what both share
VOCAB = 320
N_EMBD = 32
N_LAYER = 4
LAYER_TYPES = ["sliding_attention", "full_attention"] * 2
N_HEAD = 2
HEAD_SWA = 16             # head_dim (sliding layers)
HEAD_FULL = 32            # global_head_dim (full-attention layers)
N_FF = 64
WINDOW = 8
N_CTX = 256
SOFTCAP = 30.0
RMS_EPS = 1e-6
ROPE = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0}}
Q_K_NORM = 0.5          # text q_norm / k_norm weights around this (softmax not saturated)

# ... and what differs. "dense": a 31B-like text model (no per-layer embeddings, no KV sharing; full layers with fewer
# KV heads and V = K (attention_k_eq_v), as 26B-A4B / 31B), use_bidirectional_attention "vision"; "ple": an E2B-like
# one (per-layer embeddings, the last layer KV-shared with a double-wide MLP), use_bidirectional_attention None.
# "ple" is built first, from SEED over all of Gemma4ForConditionalGeneration's parameters: its vision tower and
# embedder are the ones the mmproj holds, and "dense" gets a copy of them (its text weights from SEED + 2).
VARIANTS = {
    "dense": dict(file="gemma4v_tiny", name="lockstep tiny gemma4v", n_head_kv=2, n_head_kv_full=1, k_eq_v=True,
                  n_ple=0, n_kv_shared=0, double_wide=False, bidir="vision", text_seed=SEED + 2),
    "ple": dict(file="gemma4v_tiny_ple", name="lockstep tiny gemma4v ple", n_head_kv=1, n_head_kv_full=None,
                k_eq_v=False, n_ple=8, n_kv_shared=1, double_wide=True, bidir=None, text_seed=None),
}
VARIANT_ORDER = ["ple", "dense"]  # build order (see above)


def mask_mode(var):
    """attention_masks' mode for HF's mask under the variant's use_bidirectional_attention."""
    return "vision" if var["bidir"] == "vision" else "causal"


# vision tower (Gemma4VisionConfig) and embedder
V_EMBD = 48
V_FF = 96
V_LAYER = 2
V_HEAD = 3
V_HEAD_DIM = 16
PATCH = 2
POOL = 3                  # pooling_kernel_size (Gemma 4's own; llama.cpp hard-codes 3)
POS_SIZE = 128            # position_embedding_size: patch coordinates 0..127
V_THETA = 100.0           # rope_parameters {"rope_type": "axial", "rope_theta": 100} (llama.cpp hard-codes 100)

# preprocessing (Gemma4ImageProcessorPil)
MAX_SOFT_TOKENS = 70      # the smallest budget the processor accepts (70, 140, 280, 560, 1120)
MAX_PATCHES = MAX_SOFT_TOKENS * POOL * POOL   # 630: pixel_values rows, padded
IMAGE_MEAN = [0.0, 0.0, 0.0]   # the processor's (unused: do_normalize False); what the converter writes
IMAGE_STD = [1.0, 1.0, 1.0]

IMAGES = [("rgb64", "rgb64.png"), ("rgb100x37", "rgb100x37.png"), ("gray23x31", "gray23x31.png"),
          ("rgba50", "rgba50.png"), ("photo120x90", "photo120x90.jpg"), ("pal7x5", "pal7x5.png"),
          ("paltrns9x6", "paltrns9x6.png")]
GOLDEN_IMAGES = ["rgb100x37", "photo120x90"]

# Gemma 4's multimodal control tokens, at the end of the vocabulary in the real ids' order (boi 255999, boa 256000,
# image 258880, audio 258881, eoi 258882, eoa 258883, video 258884)
TAIL = ["<|image>", "<|audio>", "<|image|>", "<|audio|>", "<image|>", "<audio|>", "<|video|>"]
BOI, IMG, EOI = "<|image>", "<|image|>", "<image|>"

MEDIA = "<__media__>"
# Gemma 4's chat template (models/templates/google-gemma-4-31B-it.jinja) for one user turn [image, "Describe this and",
# image, "that."] (text items trimmed), then the generation prompt
PROMPT = "<bos><|turn>user\n" + MEDIA + "Describe this and" + MEDIA + "that.<turn|>\n<|turn>model\n"


# ----------------------------------------------------------------------------------------------
# vocabulary and tokenizers


def vocab():
    return gemma4_tiny.vocab(VOCAB, TAIL)


def tok_id(t):
    return vocab()[0].index(t)


def gemma4_encode(text):
    """Token ids of `text` as llama.cpp tokenizes a "gemma4" vocabulary with parse_special and no added BOS
    (src/llama-vocab.cpp: llm_tokenizer_bpe_session with LLAMA_VOCAB_PRE_TYPE_GEMMA4, re-implemented): control
    tokens matched literally first; in each remaining fragment spaces become U+2581, the fragment is split into runs
    of newlines and runs of anything else ("[^\n]+|[\n]+", llama-vocab.cpp:512-520); a newline run that is a token is
    taken whole (:621-627); otherwise its UTF-8 characters are merged, the adjacent pair of lowest merge rank first
    (ties: the leftmost), and each final symbol missing from the vocabulary falls back to its <0xXX> byte tokens."""
    toks, types, merges = vocab()
    index = {t: i for i, t in enumerate(toks)}
    rank = {m: r for r, m in enumerate(merges)}
    special = sorted((t for t, ty in zip(toks, types) if ty in (3, 4)), key=len, reverse=True)
    out = []

    def word(w):
        if w.startswith("\n") and w in index:
            out.append(index[w])
            return
        sym = list(w)
        while len(sym) > 1:
            best = min(range(len(sym) - 1), key=lambda k: (rank.get((sym[k], sym[k + 1]), 1 << 30), k))
            if (sym[best], sym[best + 1]) not in rank:
                break
            sym[best:best + 2] = [sym[best] + sym[best + 1]]
        for s in sym:
            if s in index:
                out.append(index[s])
            else:
                out.extend(index[f"<0x{b:02X}>"] for b in s.encode("utf-8"))

    def flush(frag):
        frag = frag.replace(" ", "\u2581")
        i = 0
        while i < len(frag):
            j = i
            nl = frag[i] == "\n"
            while j < len(frag) and (frag[j] == "\n") == nl:
                j += 1
            word(frag[i:j])
            i = j

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
    """transformers' GemmaTokenizer (the class Gemma 4 checkpoints name) over the same vocabulary and merges, with
    Gemma 4's named multimodal tokens."""
    from transformers.models.gemma.tokenization_gemma import GemmaTokenizer
    toks, types, merges = vocab()
    tk = GemmaTokenizer(vocab={t: i for i, t in enumerate(toks)}, merges=list(merges),
                        extra_special_tokens={"image_token": IMG, "boi_token": BOI, "eoi_token": EOI,
                                              "audio_token": "<|audio|>", "boa_token": "<|audio>",
                                              "eoa_token": "<audio|>"})
    tk.add_special_tokens({"additional_special_tokens": [t for t, ty in zip(toks, types) if ty in (3, 4)
                                                         and t not in ("<pad>", "<eos>", "<bos>", "<unk>", "<mask>")]})
    assert len(tk) == VOCAB and tk.image_token_id == tok_id(IMG) and tk.convert_tokens_to_ids(BOI) == tok_id(BOI)
    return tk


def image_processor():
    from transformers.models.gemma4.image_processing_pil_gemma4 import Gemma4ImageProcessorPil
    return Gemma4ImageProcessorPil(patch_size=PATCH, max_soft_tokens=MAX_SOFT_TOKENS, pooling_kernel_size=POOL,
                                   do_resize=True, resample=Image.Resampling.BICUBIC, do_rescale=True,
                                   rescale_factor=1 / 255, do_normalize=False, image_mean=IMAGE_MEAN,
                                   image_std=IMAGE_STD, do_convert_rgb=True)


def hf_processor():
    """Gemma4Processor with the PIL image processor, the tokenizer above and an audio feature extractor; no video
    processor (its class needs torchvision, absent here; the processor's argument check is relaxed for it alone)."""
    from transformers.models.gemma4.processing_gemma4 import Gemma4Processor
    from transformers.models.gemma4.feature_extraction_gemma4 import Gemma4AudioFeatureExtractor

    class Proc(Gemma4Processor):
        def check_argument_for_proper_class(self, argument_name, argument):
            if argument is None and argument_name == "video_processor":
                return None
            return super().check_argument_for_proper_class(argument_name, argument)
    return Proc(feature_extractor=Gemma4AudioFeatureExtractor(), image_processor=image_processor(),
                tokenizer=hf_tokenizer(), video_processor=None, image_seq_length=MAX_SOFT_TOKENS)


def expand_media(text, n_tokens):
    """`text` with its i-th MEDIA marker replaced by <|image> + n_tokens[i] x <|image|> + <image|> (what
    Gemma4Processor.replace_image_token makes of each "<|image|>", processing_gemma4.py:199-201)."""
    parts = text.split(MEDIA)
    assert len(parts) == len(n_tokens) + 1
    out = parts[0]
    for n, p in zip(n_tokens, parts[1:]):
        out += BOI + IMG * n + EOI + p
    return out


# ----------------------------------------------------------------------------------------------
# the model


def make_config(var):
    from transformers import Gemma4Config, Gemma4TextConfig, Gemma4VisionConfig
    extra = {}
    if var["n_head_kv_full"] is not None:
        extra["num_global_key_value_heads"] = var["n_head_kv_full"]
    tc = Gemma4TextConfig(vocab_size=VOCAB, hidden_size=N_EMBD, num_hidden_layers=N_LAYER, layer_types=LAYER_TYPES,
                          num_attention_heads=N_HEAD, num_key_value_heads=var["n_head_kv"], head_dim=HEAD_SWA,
                          global_head_dim=HEAD_FULL, attention_k_eq_v=var["k_eq_v"], intermediate_size=N_FF,
                          hidden_size_per_layer_input=var["n_ple"], vocab_size_per_layer_input=VOCAB,
                          num_kv_shared_layers=var["n_kv_shared"], use_double_wide_mlp=var["double_wide"],
                          sliding_window=WINDOW, max_position_embeddings=N_CTX, rms_norm_eps=RMS_EPS,
                          final_logit_softcapping=SOFTCAP, rope_parameters=ROPE, tie_word_embeddings=True,
                          use_bidirectional_attention=var["bidir"], pad_token_id=0, bos_token_id=2, eos_token_id=1,
                          **extra)
    vc = Gemma4VisionConfig(hidden_size=V_EMBD, intermediate_size=V_FF, num_hidden_layers=V_LAYER,
                            num_attention_heads=V_HEAD, num_key_value_heads=V_HEAD, head_dim=V_HEAD_DIM,
                            patch_size=PATCH, pooling_kernel_size=POOL, position_embedding_size=POS_SIZE,
                            rope_parameters={"rope_type": "axial", "rope_theta": V_THETA}, rms_norm_eps=RMS_EPS,
                            hidden_activation="gelu_pytorch_tanh", use_clipped_linears=True, standardize=True)
    cfg = Gemma4Config(text_config=tc.to_dict(), vision_config=vc.to_dict(), audio_config=None,
                       boi_token_id=tok_id(BOI), eoi_token_id=tok_id(EOI), image_token_id=tok_id(IMG),
                       video_token_id=tok_id("<|video|>"), boa_token_id=tok_id("<|audio>"),
                       eoa_token_index=tok_id("<audio|>"), audio_token_id=tok_id("<|audio|>"),
                       tie_word_embeddings=True)
    cfg._attn_implementation = "eager"
    return cfg


def init_weight(name, p, g):
    """Random weights for O(1) activations (checked by describe()); the text model by gemma4_tiny.py's rules."""
    if ".vision_tower." in name or ".embed_vision." in name:
        if name.endswith("patch_embedder.input_proj.weight"):  # pixels 2x - 1 in [-1, 1] -> O(1) patch vectors
            p.copy_(torch.randn(p.shape, generator=g) * math.sqrt(3.0 / p.shape[1]))
        elif name.endswith("position_embedding_table"):
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
        elif p.dim() == 2:
            p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[1]))
        elif "norm" in name:  # Gemma4RMSNorm multiplies by w
            p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
        else:
            raise RuntimeError(f"no init rule for {name} {tuple(p.shape)}")
    elif p.dim() == 2:  # linear weights and embeddings N(0, 1/fan_in) (embeddings are scaled up by the model)
        p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[1]))
    elif name.endswith(("q_norm.weight", "k_norm.weight")):  # attention scale 1: q.k of std ~1, not ~sqrt(head)
        p.copy_(Q_K_NORM * (1.0 + 0.2 * torch.randn(p.shape, generator=g)))
    elif "norm" in name:
        p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
    else:
        raise RuntimeError(f"no init rule for {name} {tuple(p.shape)}")


def clippable_linears(m):
    return [(n, mod) for n, mod in m.model.vision_tower.named_modules() if hasattr(mod, "use_clipped_linears")]


def calibrate(m, calib):
    """The buffers: clamp bounds of every Gemma4ClippableLinear from the activations of the calibration images
    (input bounds the 1% and 99% quantiles of its input, output bounds the 0.5% and 99.5% of its output, rounded to
    2 decimals; computed with the earlier layers' bounds in place), then std_bias / std_scale from the pooled
    features (per channel: mean + 0.3 std N(0,1), and (1 + 0.2 N(0,1)) / std)."""
    g = torch.Generator().manual_seed(SEED + 1)
    vt = m.model.vision_tower
    for name, mod in clippable_linears(m):
        seen = {}

        def grab(module, args, out):
            seen["in"], seen["out"] = args[0].detach(), out.detach()
        h = mod.linear.register_forward_hook(grab)
        with torch.no_grad():
            ins, outs = [], []
            for pv, pos in calib:
                vt(pixel_values=torch.from_numpy(pv[None]), pixel_position_ids=torch.from_numpy(pos[None]))
                n = int((pos[:, 0] >= 0).sum())
                ins.append(seen["in"][0, :n].reshape(-1))
                outs.append(seen["out"][0, :n].reshape(-1))
        h.remove()
        x, y = torch.cat(ins).double(), torch.cat(outs).double()
        q = lambda t, f: round(float(torch.quantile(t, f)), 2)  # noqa: E731
        with torch.no_grad():
            mod.input_min.fill_(q(x, 0.01))
            mod.input_max.fill_(q(x, 0.99))
            mod.output_min.fill_(q(y, 0.005))
            mod.output_max.fill_(q(y, 0.995))
    pooled = []

    def grab_pool(module, args, out):
        pooled.append(out[0].detach()[out[1]])
    h = vt.pooler.register_forward_hook(grab_pool)
    with torch.no_grad():
        vt.std_bias.zero_()
        vt.std_scale.fill_(1.0)
        for pv, pos in calib:
            vt(pixel_values=torch.from_numpy(pv[None]), pixel_position_ids=torch.from_numpy(pos[None]))
        h.remove()
        f = torch.cat(pooled).double()
        mu, sd = f.mean(0), f.std(0)
        vt.std_bias.copy_((mu + 0.3 * sd * torch.randn(mu.shape, generator=g, dtype=torch.float64)).float())
        vt.std_scale.copy_(((1.0 + 0.2 * torch.randn(mu.shape, generator=g, dtype=torch.float64)) / sd).float())


def init_text_extras(lm, g):
    """After the parameters: the final norm's weight x 4 (logits up to ~15, so that the final soft-cap (30) bends
    them; gemma4_tiny.py), layer_scalar 0.6 + 0.8 U(0,1)."""
    lm.norm.weight.mul_(4.0)
    for name, b in lm.named_buffers():
        if name.endswith("layer_scalar"):
            b.copy_(0.6 + 0.8 * torch.rand(b.shape, generator=g))


def make_model(var, calib=None, vision_from=None):
    """Gemma4ForConditionalGeneration for the variant: with calib (the "ple" model) every parameter from SEED, then
    the calibrated buffers; with vision_from (the "dense" model) the text from var["text_seed"] and the vision tower
    and embedder (parameters and buffers) copied from that model."""
    from transformers import Gemma4ForConditionalGeneration
    cfg = make_config(var)
    torch.manual_seed(SEED)
    m = Gemma4ForConditionalGeneration(cfg).float().eval()
    lm = m.model.language_model
    with torch.no_grad():
        if vision_from is None:
            g = torch.Generator().manual_seed(SEED)
            for name, p in m.named_parameters():
                init_weight(name, p, g)
            init_text_extras(lm, g)
        else:
            g = torch.Generator().manual_seed(var["text_seed"])
            for name, p in lm.named_parameters():
                init_weight("model.language_model." + name, p, g)
            init_text_extras(lm, g)
            m.model.vision_tower.load_state_dict(vision_from.model.vision_tower.state_dict(), strict=True)
            m.model.embed_vision.load_state_dict(vision_from.model.embed_vision.state_dict(), strict=True)
            names = {n for n, _ in m.named_parameters()}
            assert all(n.startswith(("model.language_model.", "model.vision_tower.", "model.embed_vision."))
                       for n in names), names
    if vision_from is None:
        calibrate(m, calib)
    tc = m.config.text_config
    n_store = N_LAYER - var["n_kv_shared"]
    # the last layer of each type before the shared ones "store"s its K/V (also with none shared: HF keeps them for
    # assistant models; no effect on the logits)
    want = [None] * (n_store - 2) + ["store", "store"] + ["reuse"] * var["n_kv_shared"]
    assert tc.kv_sharing_modes == want, tc.kv_sharing_modes
    for il, layer in enumerate(lm.layers):
        a = layer.self_attn
        full = LAYER_TYPES[il] == "full_attention"
        nkv = var["n_head_kv_full"] if full and var["n_head_kv_full"] is not None else var["n_head_kv"]
        assert a.head_dim == (HEAD_FULL if full else HEAD_SWA)
        if not a.is_kv_shared_layer:
            assert a.k_proj.out_features == nkv * a.head_dim
            assert (a.v_proj is None) == (full and var["k_eq_v"])
    return cfg, m


# ----------------------------------------------------------------------------------------------
# GGUF export


def f32(t):
    return t.detach().float().contiguous().numpy().astype(np.float32)


def text_view(cfg, m):
    """A Gemma4ForCausalLM whose .model is m's language model (the parameter names gemma4_tiny.export reads)."""
    from transformers import Gemma4ForCausalLM
    v = Gemma4ForCausalLM(cfg.text_config)
    v.model = m.model.language_model
    return v


def export_text(var, cfg, m, path):
    gemma4_tiny.export(cfg.text_config, text_view(cfg, m), path, name=var["name"], tail_tokens=TAIL,
                       ple_key_always=True)


# HF module under model.vision_tower.encoder.layers.N. -> GGUF name under v.blk.N. (the converter's rename to
# vision_model.model.layers.N. then gguf-py's tensor map: tensor_mapping.py V_ENC_* "gemma4" entries)
VIT_LINEARS = [("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"), ("self_attn.v_proj", "attn_v"),
               ("self_attn.o_proj", "attn_out"), ("mlp.gate_proj", "ffn_gate"), ("mlp.up_proj", "ffn_up"),
               ("mlp.down_proj", "ffn_down")]
VIT_NORMS = [("input_layernorm", "ln1"), ("post_attention_layernorm", "attn_post_norm"),
             ("pre_feedforward_layernorm", "ln2"), ("post_feedforward_layernorm", "ffn_post_norm"),
             ("self_attn.q_norm", "attn_q_norm"), ("self_attn.k_norm", "attn_k_norm")]
CLAMPS = ["input_max", "input_min", "output_max", "output_min"]


def mmproj_expected(m):
    """GGUF tensor name -> numpy array (numpy order = GGUF ne reversed), from the HF model, in the order the
    converter writes them (its order is the checkpoint's: save_pretrained's safetensors file lists tensors sorted by
    name; see the converter check in the docstring)."""
    sd = {k: v for k, v in m.state_dict().items() if k.startswith("model.vision_tower.") or
          k.startswith("model.embed_vision.")}
    sd = {k: v for k, v in sd.items() if "rotary_emb" not in k}
    out = {}
    for k in sorted(sd):
        v = sd[k]
        name = k.replace("model.vision_tower.", "", 1)
        if k == "model.embed_vision.embedding_projection.weight":
            out["mm.input_projection.weight"] = f32(v)
        elif name == "patch_embedder.input_proj.weight":  # [E, p*p*3] per patch (y, x, c) -> conv kernel [E, 3, p, p]
            E = v.shape[0]
            out["v.patch_embd.weight"] = f32(v.reshape(E, PATCH, PATCH, 3).permute(0, 3, 1, 2))
        elif name == "patch_embedder.position_embedding_table":
            out["v.position_embd.weight"] = f32(v)
        elif name in ("std_bias", "std_scale"):
            out[f"v.{name}"] = f32(v)
        else:
            assert name.startswith("encoder.layers."), k
            rest = name[len("encoder.layers."):]
            il, rest = rest.split(".", 1)
            done = False
            for src, dst in VIT_LINEARS:
                if rest == src + ".linear.weight":
                    out[f"v.blk.{il}.{dst}.weight"] = f32(v)
                    done = True
                for c in CLAMPS:
                    if rest == f"{src}.{c}":
                        out[f"v.blk.{il}.{dst}.{c}"] = f32(v.reshape(1))  # 0-d -> [1] (gemma.py:855-857)
                        done = True
            for src, dst in VIT_NORMS:
                if rest == src + ".weight":
                    out[f"v.blk.{il}.{dst}.weight"] = f32(v)
                    done = True
            assert done, k
    return out


def write_mmproj_keys(w, name, n_embd_text):
    """MmprojModel.set_gguf_parameters (conversion/base.py:2431-2452) then Gemma4VisionAudioModel's
    (conversion/gemma.py:826-832), then general.quantization_version."""
    w.add_type(gguf.GGUFType.MMPROJ)
    w.add_name(name)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_clip_has_vision_encoder(True)
    w.add_vision_projection_dim(n_embd_text)
    w.add_vision_image_size(224)  # gemma.py:816: "unused, but set to avoid error"
    w.add_vision_patch_size(PATCH)
    w.add_vision_embedding_length(V_EMBD)
    w.add_vision_feed_forward_length(V_FF)
    w.add_vision_block_count(V_LAYER)
    w.add_vision_head_count(V_HEAD)
    w.add_vision_image_mean(IMAGE_MEAN)
    w.add_vision_image_std(IMAGE_STD)
    w.add_clip_vision_projector_type(gguf.VisionProjectorType.GEMMA4V)  # clip.vision.projector_type (mixed modality)
    w.add_vision_attention_layernorm_eps(1e-6)  # hparams_vision.get("layer_norm_eps", 1e-6): Gemma 4 has no such key
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)


def finish_gguf(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def export_mmproj(cfg, m, path):
    w = gguf.GGUFWriter(path, "clip")
    write_mmproj_keys(w, "lockstep tiny gemma4v mmproj", cfg.text_config.hidden_size)
    for name, a in mmproj_expected(m).items():
        w.add_tensor(name, a)
    finish_gguf(w)


MMPROJ_KEYS = ["general.architecture", "general.type", "general.name", "general.file_type", "clip.has_vision_encoder",
               "clip.vision.projection_dim", "clip.vision.image_size", "clip.vision.patch_size",
               "clip.vision.embedding_length", "clip.vision.feed_forward_length", "clip.vision.block_count",
               "clip.vision.attention.head_count", "clip.vision.image_mean", "clip.vision.image_std",
               "clip.vision.projector_type", "clip.vision.attention.layer_norm_epsilon", "general.quantization_version"]


def check_mmproj(m, path):
    """Every key and tensor of the mmproj against the HF model, the converter's transforms inverted independently."""
    r = gguf.GGUFReader(path)
    keys = [k for k in r.fields if not k.startswith("GGUF.")]
    assert keys == MMPROJ_KEYS, keys
    f = r.fields
    assert f["clip.vision.projector_type"].contents() == "gemma4v"
    assert f["clip.vision.patch_size"].contents() == PATCH and f["clip.vision.projection_dim"].contents() == N_EMBD
    t = {x.name: x for x in r.tensors}
    for x in r.tensors:
        assert x.tensor_type == gguf.GGMLQuantizationType.F32, x.name
    sd = {k: v.detach().numpy() for k, v in m.state_dict().items()}
    n = 0

    def eq(name, want, ne):
        nonlocal n
        a = np.array(t[name].data)
        assert [int(v) for v in t[name].shape] == ne, (name, t[name].shape, ne)
        assert a.shape == want.shape and np.array_equal(a, want.astype(np.float32)), name
        n += 1
    V = "model.vision_tower."
    pw = sd[V + "patch_embedder.input_proj.weight"]  # [E, 12]: column (y * p + x) * 3 + c
    kern = np.empty((V_EMBD, 3, PATCH, PATCH), np.float32)
    for c in range(3):
        for y in range(PATCH):
            for x in range(PATCH):
                kern[:, c, y, x] = pw[:, (y * PATCH + x) * 3 + c]
    eq("v.patch_embd.weight", kern, [PATCH, PATCH, 3, V_EMBD])
    eq("v.position_embd.weight", sd[V + "patch_embedder.position_embedding_table"], [V_EMBD, POS_SIZE, 2])
    eq("v.std_bias", sd[V + "std_bias"], [V_EMBD])
    eq("v.std_scale", sd[V + "std_scale"], [V_EMBD])
    eq("mm.input_projection.weight", sd["model.embed_vision.embedding_projection.weight"], [V_EMBD, N_EMBD])
    for il in range(V_LAYER):
        p = f"{V}encoder.layers.{il}."
        for src, dst in VIT_LINEARS:
            W = sd[p + src + ".linear.weight"]
            eq(f"v.blk.{il}.{dst}.weight", W, [W.shape[1], W.shape[0]])
            for c in CLAMPS:
                eq(f"v.blk.{il}.{dst}.{c}", np.array([sd[p + src + "." + c]]), [1])
        for src, dst in VIT_NORMS:
            W = sd[p + src + ".weight"]
            eq(f"v.blk.{il}.{dst}.weight", W, [W.shape[0]])
    assert n == len(t), (n, len(t))
    assert [x.name for x in r.tensors] == list(mmproj_expected(m))
    return keys, r


def check_text(var, m, path):
    """Every tensor of the text GGUF against the HF language model (names as gemma4_tiny.export writes them), and the
    keys that differ between the variants."""
    r = gguf.GGUFReader(path)
    t = {x.name: np.array(x.data) for x in r.tensors}
    for x in r.tensors:
        assert x.tensor_type == gguf.GGMLQuantizationType.F32, x.name
    sd = {k.replace("model.language_model.", ""): v.detach().numpy() for k, v in m.state_dict().items()
          if k.startswith("model.language_model.")}
    n = 0

    def eq(name, want):
        nonlocal n
        assert t[name].shape == want.shape and np.array_equal(t[name], want.astype(np.float32)), name
        n += 1
    eq("token_embd.weight", sd["embed_tokens.weight"])
    eq("output_norm.weight", sd["norm.weight"])
    if var["n_ple"]:
        eq("per_layer_token_embd.weight", sd["embed_tokens_per_layer.weight"])
        eq("per_layer_model_proj.weight", sd["per_layer_model_projection.weight"])
        eq("per_layer_proj_norm.weight", sd["per_layer_projection_norm.weight"])
    else:
        assert not any("per_layer" in k for k in sd), [k for k in sd if "per_layer" in k]
        assert not any(k.startswith("per_layer_") or k.split(".")[-2] in ("inp_gate", "proj", "post_norm") for k in t)
    nrot = int(ROPE["full_attention"]["partial_rotary_factor"] * HEAD_FULL / 2)
    eq("rope_freqs.weight", np.array([1.0] * nrot + [1e30] * (HEAD_FULL // 2 - nrot)))
    n_ff, n_kv = [], []
    for il in range(N_LAYER):
        p, b = f"layers.{il}.", f"blk.{il}."
        full = LAYER_TYPES[il] == "full_attention"
        pairs = [("attn_norm", "input_layernorm"), ("attn_q", "self_attn.q_proj"), ("attn_q_norm", "self_attn.q_norm"),
                 ("attn_output", "self_attn.o_proj"), ("post_attention_norm", "post_attention_layernorm"),
                 ("ffn_norm", "pre_feedforward_layernorm"), ("ffn_gate", "mlp.gate_proj"), ("ffn_up", "mlp.up_proj"),
                 ("ffn_down", "mlp.down_proj"), ("post_ffw_norm", "post_feedforward_layernorm")]
        if var["n_ple"]:
            pairs += [("inp_gate", "per_layer_input_gate"), ("proj", "per_layer_projection"),
                      ("post_norm", "post_per_layer_input_norm")]
        shared = il >= N_LAYER - var["n_kv_shared"]
        if not shared:
            pairs += [("attn_k", "self_attn.k_proj"), ("attn_k_norm", "self_attn.k_norm")]
            if full and var["k_eq_v"]:
                assert b + "attn_v.weight" not in t and p + "self_attn.v_proj.weight" not in sd
            else:
                pairs.append(("attn_v", "self_attn.v_proj"))
        else:
            assert b + "attn_k.weight" not in t and b + "attn_v.weight" not in t
        for dst, src in pairs:
            eq(f"{b}{dst}.weight", sd[p + src + ".weight"])
        eq(b + "layer_output_scale.weight", sd[p + "layer_scalar"])
        n_ff.append(2 * N_FF if shared and var["double_wide"] else N_FF)
        n_kv.append(var["n_head_kv_full"] if full and var["n_head_kv_full"] is not None else var["n_head_kv"])
    assert n == len(t), (n, len(t))
    f = r.fields
    assert f["tokenizer.ggml.tokens"].contents() == vocab()[0]
    assert f["tokenizer.ggml.token_type"].contents() == vocab()[1]
    assert f["gemma4.attention.sliding_window_pattern"].contents() == [lt == "sliding_attention" for lt in LAYER_TYPES]
    assert f["gemma4.feed_forward_length"].contents() == n_ff
    assert f["gemma4.attention.head_count_kv"].contents() == n_kv
    assert f["gemma4.attention.shared_kv_layers"].contents() == var["n_kv_shared"]
    assert f["gemma4.embedding_length_per_layer_input"].contents() == var["n_ple"]
    return [k for k in r.fields if not k.startswith("GGUF.")], r, len(t)


# ----------------------------------------------------------------------------------------------
# preprocessing


def target_size_ref(h, w):
    """Gemma 4's aspect-ratio-preserving size for the token budget (image_processing_pil_gemma4.py:36-87), restated."""
    max_patches = MAX_SOFT_TOKENS * POOL * POOL
    target_px = max_patches * PATCH * PATCH
    factor = math.sqrt(target_px / (h * w))
    side = POOL * PATCH
    th = math.floor(factor * h / side) * side
    tw = math.floor(factor * w / side) * side
    assert th or tw
    if th == 0:
        th, tw = side, min(math.floor(w / h) * side, MAX_SOFT_TOKENS * side)
    elif tw == 0:
        th, tw = min(math.floor(h / w) * side, MAX_SOFT_TOKENS * side), side
    assert th * tw <= target_px
    return th, tw


def rescale_numpy(resized):
    """HF's rescale: float32(double(byte) * (1/255)), channels first; no normalization."""
    return np.ascontiguousarray((resized.astype(np.float64) * (1 / 255)).astype(np.float32).transpose(2, 0, 1))


def patchify_numpy(chw):
    """[n_patches, p*p*3]: patch (py, px) row-major, each (y, x, c) within the patch; positions (x, y)."""
    C, H, W = chw.shape
    ph, pw = H // PATCH, W // PATCH
    pv = chw.reshape(C, ph, PATCH, pw, PATCH).transpose(1, 3, 2, 4, 0).reshape(ph * pw, PATCH * PATCH * C)
    py, px = np.divmod(np.arange(ph * pw), pw)
    return pv, np.stack([px, py], 1)


def preprocess(vdir):
    """Per image: the resized size, patch grid, soft tokens, resized bytes, HF's pixel_values and positions (both
    padded to MAX_PATCHES rows); every step checked."""
    proc = image_processor()
    out = {}
    for name, fname in IMAGES:
        img = Image.open(f"{vdir}/{fname}")
        res = proc.preprocess([img], return_tensors="np")
        pv, pos, nsoft = res["pixel_values"][0], res["image_position_ids"][0], res["num_soft_tokens_per_image"]
        assert pv.dtype == np.float32 and pv.shape == (MAX_PATCHES, PATCH * PATCH * 3) and pos.shape == (MAX_PATCHES, 2)
        rgb = hf_rgb(img)
        h, w = target_size_ref(rgb.shape[0], rgb.shape[1])
        ph, pw = h // PATCH, w // PATCH
        n = ph * pw
        assert list(nsoft) == [n // (POOL * POOL)], (name, nsoft)
        resized = np.array(Image.fromarray(rgb, "RGB").resize((w, h), Image.Resampling.BICUBIC))
        assert np.array_equal(pil_resample_numpy(rgb, h, w, "bicubic"), resized), name  # byte for byte
        want_pv, want_pos = patchify_numpy(rescale_numpy(resized))
        assert np.array_equal(pv[:n], want_pv), name  # bit for bit
        assert np.array_equal(pos[:n], want_pos), name
        assert not pv[n:].any() and (pos[n:] == -1).all(), name
        kind = ("same" if (h, w) == rgb.shape[:2] else "up" if h * w > rgb.shape[0] * rgb.shape[1] else "down")
        print(f"  {name}: {img.format} mode {img.mode} {rgb.shape[1]}x{rgb.shape[0]} -> {w}x{h} ({kind}); patches "
              f"{ph}x{pw} = {n} (+ {MAX_PATCHES - n} padding), soft tokens {ph // POOL}x{pw // POOL} = "
              f"{n // POOL ** 2}")
        out[name] = dict(h=h, w=w, ph=ph, pw=pw, n_tok=n // POOL ** 2, resized=resized, pv=pv, pos=pos, kind=kind)
    return out


def write_pixels(path, p):
    with open(path, "wb") as f:
        f.write(struct.pack("<6i", p["h"], p["w"], p["ph"], p["pw"], p["n_tok"], MAX_PATCHES))
        f.write(np.ascontiguousarray(p["resized"], dtype=np.uint8).tobytes())
        f.write(np.ascontiguousarray(p["pv"], dtype="<f4").tobytes())
        f.write(np.ascontiguousarray(p["pos"], dtype="<i4").tobytes())


# ----------------------------------------------------------------------------------------------
# the vision tower: HF's, and an independent numpy one read from the mmproj GGUF


def hf_image_features(m, pvs, poss):
    with torch.no_grad():
        out = m.model.get_image_features(torch.from_numpy(np.stack(pvs)), torch.from_numpy(np.stack(poss)),
                                         return_dict=True)
    return [x.float().numpy() for x in out.pooler_output]


def gelu_quick_np(x):
    return x / (1.0 + np.exp(-1.702 * x))


def vision_numpy(mmproj_path, resized, variant=()):
    """The vision tower and embedder from the mmproj GGUF alone (float64), from the resized RGB bytes: x = 2 (b/255)
    - 1 (b/255 rounded to float32 first, as HF's rescale); each p x p patch (raster order) through v.patch_embd as a
    conv kernel (no bias), + row px of position table 0 + row py of table 1; per block: RMSNorm * ln1, q / k / v by
    clamped matmuls (x clamped to [input_min, input_max], the product to [output_min, output_max]), q and k
    RMS-normed per head times attn_q_norm / attn_k_norm, v RMS-normed per head without a weight; 2D rope per head:
    dims 0..7 NeoX-rotated by the patch column (pairs (i, i + 4), angle px * 100^(-2i/8)), dims 8..15 by the row;
    scores q.k (scale 1), softmax over all patches; clamped attn_out; RMSNorm * attn_post_norm; residual; RMSNorm *
    ln2; clamped ffn_down(gelu_tanh(clamped ffn_gate h) * clamped ffn_up h); RMSNorm * ffn_post_norm; residual.
    Then the 3 x 3 average pool (token (ty, tx) = patches (3ty + dy, 3tx + dx)), x sqrt(32), (x - v.std_bias) *
    v.std_scale, RMSNorm without a weight, mm.input_projection. `variant` (diagnostics only): "gelu_quick" (the FFN
    activation llama.cpp picks for an mmproj without clip.use_gelu), "no_clamp", "no_std", "rope_yx" (the halves'
    axes swapped), "no_v_norm"."""
    kv, t, _ = gguf_tensors(mmproj_path)
    P = int(kv["clip.vision.patch_size"])
    E = int(kv["clip.vision.embedding_length"])
    nh = int(kv["clip.vision.attention.head_count"])
    eps = float(kv["clip.vision.attention.layer_norm_epsilon"])
    hd = E // nh
    k = POOL  # no key carries it (llama.cpp: 3, or clip.vision.projector.scale_factor when present)
    H, W = resized.shape[:2]
    ph, pw = H // P, W // P
    x01 = (resized.astype(np.float64) * (1 / 255)).astype(np.float32).astype(np.float64)
    chw = (2.0 * x01 - 1.0).transpose(2, 0, 1)
    patches = chw.reshape(3, ph, P, pw, P).transpose(1, 3, 0, 2, 4).reshape(ph * pw, 3 * P * P)  # (c, y, x)
    x = patches @ t["v.patch_embd.weight"].reshape(E, -1).T
    py, px = np.divmod(np.arange(ph * pw), pw)
    tab = t["v.position_embd.weight"]  # numpy [2, POS, E]
    x = x + tab[0][px] + tab[1][py]

    def mm(name, v):
        w = t[name + ".weight"]
        if "no_clamp" not in variant:
            v = np.clip(v, t[name + ".input_min"][0], t[name + ".input_max"][0])
        y = v @ w.T
        if "no_clamp" not in variant:
            y = np.clip(y, t[name + ".output_min"][0], t[name + ".output_max"][0])
        return y
    inv = V_THETA ** (-np.arange(0, hd // 2, 2, dtype=np.float64) / (hd // 2))  # 4 frequencies
    pa, pb = (py, px) if "rope_yx" in variant else (px, py)
    ang_a, ang_b = pa[:, None] * inv[None], pb[:, None] * inv[None]

    def rope_half(q, ang):  # q [n, heads, 8], NeoX pairs (i, i + 4)
        c, s = np.cos(ang)[:, None], np.sin(ang)[:, None]
        a, b = q[..., :hd // 4], q[..., hd // 4:]
        return np.concatenate([a * c - b * s, b * c + a * s], -1)

    def rope(q):
        return np.concatenate([rope_half(q[..., :hd // 2], ang_a), rope_half(q[..., hd // 2:], ang_b)], -1)
    act = gelu_quick_np if "gelu_quick" in variant else gelu_tanh_np
    for il in range(int(kv["clip.vision.block_count"])):
        b = f"v.blk.{il}."
        h = rms_norm_np(x, t[b + "ln1.weight"], eps)
        q = rms_norm_np(mm(b + "attn_q", h).reshape(-1, nh, hd), t[b + "attn_q_norm.weight"], eps)
        kk = rms_norm_np(mm(b + "attn_k", h).reshape(-1, nh, hd), t[b + "attn_k_norm.weight"], eps)
        v = mm(b + "attn_v", h).reshape(-1, nh, hd)
        if "no_v_norm" not in variant:
            v = rms_norm_np(v, 1.0, eps)
        q, kk = rope(q), rope(kk)
        o = np.empty_like(q)
        for hh in range(nh):
            o[:, hh] = softmax_np(q[:, hh] @ kk[:, hh].T) @ v[:, hh]
        x = x + rms_norm_np(mm(b + "attn_out", o.reshape(-1, E)), t[b + "attn_post_norm.weight"], eps)
        h = rms_norm_np(x, t[b + "ln2.weight"], eps)
        f = mm(b + "ffn_down", act(mm(b + "ffn_gate", h)) * mm(b + "ffn_up", h))
        x = x + rms_norm_np(f, t[b + "ffn_post_norm.weight"], eps)
    x = x.reshape(ph // k, k, pw // k, k, E).mean((1, 3)).reshape(-1, E) * math.sqrt(E)
    if "no_std" not in variant:
        x = (x - t["v.std_bias"]) * t["v.std_scale"]
    x = rms_norm_np(x, 1.0, eps)
    return x @ t["mm.input_projection.weight"].T


# ----------------------------------------------------------------------------------------------
# the prompt, logits, and an independent numpy Gemma 4 forward read from the text GGUF


def hf_inputs(proc, pre_images, text):
    """Gemma4Processor's output for `text` (with "<|image|>" where each image goes) and the PIL images."""
    out = proc(text=[text], images=[pre_images], return_tensors="pt", add_special_tokens=False)
    return out


def hf_forward(m, inp, mm=True, capture=False):
    """The full model on a processor output; with mm=False without mm_token_type_ids (HF's plain causal mask).
    Returns (logits, what the language model received)."""
    seen = {}

    def grab(mod, args, kwargs):
        seen.update(kwargs)
    h = m.model.language_model.register_forward_pre_hook(grab, with_kwargs=True)
    kw = dict(input_ids=inp["input_ids"], attention_mask=inp["attention_mask"], pixel_values=inp["pixel_values"],
              image_position_ids=inp["image_position_ids"])
    if mm:
        kw["mm_token_type_ids"] = inp["mm_token_type_ids"]
    with torch.no_grad():
        out = m(**kw)
    h.remove()
    return out.logits[0].float().numpy(), seen


def hf_chunked_logits(m, inp):
    """HF's cached path as a runtime runs it: the prompt up to and including the last <image|> in one call (with
    mm_token_type_ids: the bidirectional image blocks), then one token at a time through the cache."""
    ids = inp["input_ids"][0].numpy()
    end = int(np.nonzero(ids == tok_id(EOI))[0][-1]) + 1
    with torch.no_grad():
        out = m(input_ids=inp["input_ids"][:, :end], attention_mask=inp["attention_mask"][:, :end],
                pixel_values=inp["pixel_values"], image_position_ids=inp["image_position_ids"],
                mm_token_type_ids=inp["mm_token_type_ids"][:, :end], use_cache=True)
        rows = [out.logits[0]]
        cache = out.cache
        for t in range(end, len(ids)):
            out = m(input_ids=inp["input_ids"][:, t:t + 1], attention_mask=inp["attention_mask"][:, :t + 1],
                    cache=cache, use_cache=True)
            cache = out.cache
            rows.append(out.logits[0])
    return torch.cat(rows).float().numpy()


def hf_float64_logits(m, inp, rows):
    """HF's text path (Gemma4ForConditionalGeneration with the image rows given as mm_encoder_outputs, the processor's
    mm_token_type_ids) in float64 throughout: a float64 copy of the model, with the places where HF computes in
    float32 whatever the model's dtype patched for the call (Gemma4RMSNorm's .float(), the rotary angles' float32
    inv_freq and product, eager attention's float32 softmax) and the float32-rounded constants (the embedding
    scales, inv_freq) set exactly. What it shows: the numpy forward computes HF's function, not just something
    within float32 noise of it."""
    import copy
    from transformers.models.gemma4 import modeling_gemma4 as M
    from transformers.modeling_outputs import BaseModelOutputWithPooling
    m64 = copy.deepcopy(m).double()
    lm = m64.model.language_model
    with torch.no_grad():
        lm.embed_tokens.embed_scale.fill_(math.sqrt(N_EMBD))
        if m.config.text_config.hidden_size_per_layer_input:
            lm.embed_tokens_per_layer.embed_scale.fill_(math.sqrt(m.config.text_config.hidden_size_per_layer_input))
        for lt, rp in ROPE.items():
            hd = HEAD_SWA if lt == "sliding_attention" else HEAD_FULL
            n = hd // 2 if rp["rope_type"] == "default" else int(rp["partial_rotary_factor"] * hd // 2)
            inv = torch.zeros(hd // 2, dtype=torch.float64)
            inv[:n] = rp["rope_theta"] ** (-torch.arange(0, 2 * n, 2, dtype=torch.float64) / hd)
            getattr(lm.rotary_emb, f"{lt}_inv_freq").copy_(inv)

    def rms_forward(self, x):
        y = self._norm(x)
        return y * self.weight if self.with_scale else y

    def rotary_forward(self, x, position_ids, layer_type):
        f = position_ids[..., None].to(torch.float64) * getattr(self, f"{layer_type}_inv_freq")
        e = torch.cat((f, f), dim=-1)
        return e.cos().to(x.dtype), e.sin().to(x.dtype)

    def eager64(module, query, key, value, attention_mask, dropout=0.0, scaling=None, softcap=None, **kwargs):
        k = M.repeat_kv(key, module.num_key_value_groups)
        v = M.repeat_kv(value, module.num_key_value_groups)
        w = torch.matmul(query, k.transpose(2, 3)) * scaling
        if attention_mask is not None:
            w = w + attention_mask
        w = torch.softmax(w, dim=-1)
        return torch.matmul(w, v).transpose(1, 2).contiguous(), w
    saved = (M.Gemma4RMSNorm.forward, M.Gemma4TextRotaryEmbedding.forward, M.eager_attention_forward)
    M.Gemma4RMSNorm.forward, M.Gemma4TextRotaryEmbedding.forward, M.eager_attention_forward = \
        rms_forward, rotary_forward, eager64
    try:
        enc = {"image": BaseModelOutputWithPooling(pooler_output=(torch.from_numpy(rows.astype(np.float64)),))}
        with torch.no_grad():
            out = m64(input_ids=inp["input_ids"], attention_mask=inp["attention_mask"],
                      mm_token_type_ids=inp["mm_token_type_ids"], mm_encoder_outputs=enc)
    finally:
        M.Gemma4RMSNorm.forward, M.Gemma4TextRotaryEmbedding.forward, M.eager_attention_forward = saved
    assert out.logits.dtype == torch.float64
    return out.logits[0].numpy()


def image_blocks(ids):
    """block id per token: k for the tokens of the k-th run of <|image|> tokens, -1 elsewhere."""
    img = ids == tok_id(IMG)
    start = img & ~np.concatenate([[False], img[:-1]])
    blk = np.cumsum(start) - 1
    return np.where(img, blk, -1)


def attention_masks(ids, mode):
    """{layer type: bool [T, T] (query, key) visible}. mode "vision": HF with use_bidirectional_attention "vision"
    (create_masks_for_vision_model): full layers causal (k <= q); sliding layers (k <= q or q and k in the same image
    block) and k > q - W. "causal": HF with use_bidirectional_attention None, or without mm_token_type_ids: both plain
    causal (sliding also k > q - W). "all": llama.cpp's non-causal image ubatch: the same-block exception in both
    layer types."""
    T = len(ids)
    q = np.arange(T)[:, None]
    k = np.arange(T)[None, :]
    blk = image_blocks(ids)
    same = (blk[:, None] == blk[None, :]) & (blk[:, None] >= 0)
    causal = k <= q
    bidi = causal | same
    win = k > q - WINDOW
    if mode == "vision":
        return {"full_attention": causal, "sliding_attention": bidi & win}
    if mode == "causal":
        return {"full_attention": causal, "sliding_attention": causal & win}
    assert mode == "all"
    return {"full_attention": bidi, "sliding_attention": bidi & win}


def gemma4_numpy_logits(path, ids, image_rows, mode):
    """Gemma 4 from the text GGUF alone (float64), as llama.cpp's graph computes it (src/models/gemma4.cpp), with
    image_rows in place of the <|image|> embeddings and attention_masks(ids, mode). Per-layer embeddings only where
    the file has per_layer_token_embd; a layer without attn_v takes V from its raw K projection (attention_k_eq_v);
    the last shared_kv_layers layers reuse the K/V of the last earlier layer of their type."""
    kv, t, _ = gguf_tensors(path)
    A = "gemma4."
    E = int(kv[A + "embedding_length"])
    L = int(kv[A + "block_count"])
    nh = int(kv[A + "attention.head_count"])
    nkv = [int(v) for v in kv[A + "attention.head_count_kv"]]
    swa = [bool(v) for v in kv[A + "attention.sliding_window_pattern"]]
    hd_full, hd_swa = int(kv[A + "attention.key_length"]), int(kv[A + "attention.key_length_swa"])
    eps = float(kv[A + "attention.layer_norm_rms_epsilon"])
    n_shared = int(kv[A + "attention.shared_kv_layers"])
    has_ple = "per_layer_token_embd.weight" in t
    npl = int(kv.get(A + "embedding_length_per_layer_input", 0))
    assert has_ple == (npl > 0)
    cap = float(kv[A + "final_logit_softcapping"])
    base_full, base_swa = float(kv[A + "rope.freq_base"]), float(kv[A + "rope.freq_base_swa"])
    T = len(ids)
    img = ids == tok_id(IMG)
    x = t["token_embd.weight"][ids] * math.sqrt(E)
    x[img] = image_rows
    if has_ple:  # per-layer inputs: token identity (row 0, the padding token, at image positions) and the projection
        ple_ids = np.where(img, 0, ids)
        ident = t["per_layer_token_embd.weight"][ple_ids].reshape(T, L, npl) * math.sqrt(npl)
        proj = (x @ t["per_layer_model_proj.weight"].T / math.sqrt(E)).reshape(T, L, npl)
        ple = (rms_norm_np(proj, t["per_layer_proj_norm.weight"], eps) + ident) / math.sqrt(2.0)
    masks = attention_masks(ids, mode)
    pos = np.arange(T, dtype=np.float64)

    def rope(v, hd, base, factors):  # NeoX pairs (i, i + hd/2), angle pos * base^(-2i/hd) / factor_i
        inv = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd) / factors
        ang = pos[:, None] * inv[None]
        c, s = np.cos(ang)[:, None], np.sin(ang)[:, None]
        a, b = v[..., :hd // 2], v[..., hd // 2:]
        return np.concatenate([a * c - b * s, b * c + a * s], -1)
    kv_of = {}  # layer type -> (K, V) of the last layer of that type before the shared ones
    for il in range(L):
        b = f"blk.{il}."
        lt = "sliding_attention" if swa[il] else "full_attention"
        hd = hd_swa if swa[il] else hd_full
        base = base_swa if swa[il] else base_full
        factors = np.ones(hd // 2) if swa[il] else t["rope_freqs.weight"]
        h = rms_norm_np(x, t[b + "attn_norm.weight"], eps)
        q = rope(rms_norm_np((h @ t[b + "attn_q.weight"].T).reshape(T, nh, hd), t[b + "attn_q_norm.weight"], eps),
                 hd, base, factors)
        if il < L - n_shared:
            k = (h @ t[b + "attn_k.weight"].T).reshape(T, nkv[il], hd)
            v = (h @ t[b + "attn_v.weight"].T).reshape(T, nkv[il], hd) if b + "attn_v.weight" in t else k
            k = rms_norm_np(k, t[b + "attn_k_norm.weight"], eps)
            kv_of[lt] = (rope(k, hd, base, factors), rms_norm_np(v, 1.0, eps))
        else:
            assert b + "attn_k.weight" not in t
        k, v = kv_of[lt]
        o = np.empty((T, nh, hd))
        for hh in range(nh):
            kh = hh // (nh // k.shape[1])
            s = np.where(masks[lt], q[:, hh] @ k[:, kh].T, -np.inf)  # scale 1 (f_attention_scale)
            o[:, hh] = softmax_np(s) @ v[:, kh]
        o = o.reshape(T, nh * hd) @ t[b + "attn_output.weight"].T
        x = x + rms_norm_np(o, t[b + "post_attention_norm.weight"], eps)
        h = rms_norm_np(x, t[b + "ffn_norm.weight"], eps)
        f = (gelu_tanh_np(h @ t[b + "ffn_gate.weight"].T) * (h @ t[b + "ffn_up.weight"].T)) @ t[b + "ffn_down.weight"].T
        x = x + rms_norm_np(f, t[b + "post_ffw_norm.weight"], eps)
        if has_ple:
            g = gelu_tanh_np(x @ t[b + "inp_gate.weight"].T) * ple[:, il]
            x = x + rms_norm_np(g @ t[b + "proj.weight"].T, t[b + "post_norm.weight"], eps)
        x = x * t[b + "layer_output_scale.weight"]
    logits = rms_norm_np(x, t["output_norm.weight"], eps) @ t["token_embd.weight"].T
    return cap * np.tanh(logits / cap)


# ----------------------------------------------------------------------------------------------
# diagnostics


def describe(m, inp):
    rows = []
    hooks = []

    def rms(name):
        def f(mod, args, out):
            o = out[0] if isinstance(out, tuple) else out
            if hasattr(o, "last_hidden_state"):
                o = o.last_hidden_state
            rows.append((name, float(o.float().pow(2).mean().sqrt())))
        return f
    vt = m.model.vision_tower
    hooks.append(vt.patch_embedder.register_forward_hook(rms("vit patch embd")))
    for i, layer in enumerate(vt.encoder.layers):
        hooks.append(layer.self_attn.register_forward_hook(rms(f"vit {i} attn out")))
        hooks.append(layer.mlp.register_forward_hook(rms(f"vit {i} mlp out")))
        hooks.append(layer.register_forward_hook(rms(f"vit {i} out")))
    hooks.append(m.model.embed_vision.register_forward_hook(rms("image rows")))
    lm = m.model.language_model
    hooks.append(lm.embed_tokens.register_forward_hook(rms("text embd")))
    for i, layer in enumerate(lm.layers):
        hooks.append(layer.register_forward_hook(rms(f"text {i} ({LAYER_TYPES[i]}) out")))
    hf_forward(m, inp)
    for h in hooks:
        h.remove()
    print("activation rms:", ", ".join(f"{n} {v:.3f}" for n, v in rows))


def clamp_stats(m, inp):
    """How often each clamp bites on the golden's images."""
    counts = []
    hooks = []
    for name, mod in clippable_linears(m):
        def f(module, args, out, name=name, mod=mod):
            x, y = args[0], mod.linear(torch.clamp(args[0], mod.input_min, mod.input_max))
            n = x.shape[1]
            counts.append((name, float(((x < mod.input_min) | (x > mod.input_max)).float().mean()),
                           float(((y < mod.output_min) | (y > mod.output_max)).float().mean()), n))
        hooks.append(mod.register_forward_hook(f))
    hf_image_features(m, [p for p in inp[0]], [p for p in inp[1]])
    for h in hooks:
        h.remove()
    return counts


def margin_stats(logits):
    top2 = np.sort(logits, axis=1)[:, -2:]
    return float((top2[:, 1] - top2[:, 0]).min()), float(np.abs(logits).max())


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: " + __doc__.split("Usage: ", 1)[1].split("\n", 1)[0])
    out = sys.argv[1]
    vdir = f"{out}/vision"
    torch.set_num_threads(1)
    toks = vocab()[0]
    print("special ids:", {s: toks.index(s) for s in ["<pad>", "<eos>", "<bos>", "<|turn>", "<turn|>"] + TAIL})

    print("images:")
    pre = preprocess(vdir)
    for name, _ in IMAGES:
        write_pixels(f"{vdir}/{name}.gemma4.pixels", pre[name])

    models = {}
    cfg, m = make_model(VARIANTS["ple"], calib=[(pre[n]["pv"], pre[n]["pos"]) for n in GOLDEN_IMAGES])
    models["ple"] = (cfg, m)
    models["dense"] = make_model(VARIANTS["dense"], vision_from=m)
    mmproj_path = f"{out}/gemma4v_tiny_mmproj.gguf"
    export_mmproj(cfg, m, mmproj_path)
    for vn in VARIANT_ORDER:  # the same vision tower and embedder in both
        keys, _ = check_mmproj(models[vn][1], mmproj_path)
    print("mmproj keys:", ", ".join(keys))
    text_paths = {}
    for vn in VARIANT_ORDER:
        var = VARIANTS[vn]
        text_paths[vn] = f"{out}/{var['file']}.gguf"
        export_text(var, *models[vn], text_paths[vn])
        tkeys, r, nt = check_text(var, models[vn][1], text_paths[vn])
        print(f"{var['file']}.gguf ({vn}): {nt} tensors; keys:", ", ".join(tkeys))
        print("  head_count_kv", r.fields["gemma4.attention.head_count_kv"].contents(), "feed_forward_length",
              r.fields["gemma4.feed_forward_length"].contents(), "shared_kv_layers",
              r.fields["gemma4.attention.shared_kv_layers"].contents(), "embedding_length_per_layer_input",
              r.fields["gemma4.embedding_length_per_layer_input"].contents())
    for name, mod in clippable_linears(m):
        print(f"  clamp {name}: input [{float(mod.input_min):g}, {float(mod.input_max):g}], output "
              f"[{float(mod.output_min):g}, {float(mod.output_max):g}]")

    # image embeddings: HF vs numpy from the GGUF
    worst = 0.0
    feats = {}
    for name, _ in IMAGES:
        p = pre[name]
        f = hf_image_features(m, [p["pv"]], [p["pos"]])[0]
        assert f.shape == (p["n_tok"], N_EMBD)
        assert np.array_equal(hf_image_features(models["dense"][1], [p["pv"]], [p["pos"]])[0], f), name
        feats[name] = f
        worst = max(worst, float(np.abs(vision_numpy(mmproj_path, p["resized"]) - f).max()))
    print(f"numpy vision tower (from the mmproj GGUF and the resized bytes) vs HF, all 7 images: max |diff| "
          f"{worst:.2e} (HF's features the same bits from both models)")
    assert worst < 1e-5
    f = feats["photo120x90"]
    for v in ("gelu_quick", "no_clamp", "no_std", "rope_yx", "no_v_norm"):
        d = np.abs(vision_numpy(mmproj_path, pre["photo120x90"]["resized"], (v,)) - f).max()
        print(f"  variant {v} (photo120x90): max |diff| {d:.2e}")
    pair = hf_image_features(m, [pre[n]["pv"] for n in GOLDEN_IMAGES], [pre[n]["pos"] for n in GOLDEN_IMAGES])
    d = max(float(np.abs(a - feats[n]).max()) for a, n in zip(pair, GOLDEN_IMAGES))
    print(f"HF, the two golden images in one call vs each alone: max |diff| {d:.2e}")
    for name, fr_in, fr_out, _ in clamp_stats(m, ([pre[n]["pv"] for n in GOLDEN_IMAGES],
                                                  [pre[n]["pos"] for n in GOLDEN_IMAGES])):
        print(f"  clamped on the golden images, {name}: inputs {fr_in:.3%} outputs {fr_out:.3%} (padding included)")
    with open(f"{out}/gemma4v_tiny.embd", "wb") as fh:
        fh.write(struct.pack("<i", len(GOLDEN_IMAGES)))
        for name in GOLDEN_IMAGES:
            p, f = pre[name], feats[name]
            fh.write(struct.pack("<iiii", f.shape[0], f.shape[1], p["ph"] // POOL, p["pw"] // POOL))
            fh.write(np.ascontiguousarray(f, dtype="<f4").tobytes())
            print(f"  embd {name}: {f.shape[0]} tokens x {f.shape[1]}, grid {p['ph'] // POOL}x{p['pw'] // POOL}, "
                  f"rms {np.sqrt((f * f).mean()):.3f}")

    # the prompt
    proc = hf_processor()
    print("processor:", type(proc).__mro__[1].__name__, "image processor:", type(proc.image_processor).__name__,
          "tokenizer:", type(proc.tokenizer).__name__)
    imgs = [Image.open(f"{vdir}/{dict(IMAGES)[n]}") for n in GOLDEN_IMAGES]
    inp = hf_inputs(proc, imgs, PROMPT.replace(MEDIA, IMG))
    ids = inp["input_ids"][0].numpy()
    T = len(ids)
    ntok = [pre[n]["n_tok"] for n in GOLDEN_IMAGES]
    assert ids.tolist() == gemma4_encode(expand_media(PROMPT, ntok)), "tokenizer / expansion mismatch"
    assert np.array_equal(inp["mm_token_type_ids"][0].numpy(), (ids == tok_id(IMG)).astype(np.int64))
    for i, n in enumerate(GOLDEN_IMAGES):
        assert np.array_equal(inp["pixel_values"][i].numpy(), pre[n]["pv"])
        assert np.array_equal(inp["image_position_ids"][i].numpy(), pre[n]["pos"])
    with open(f"{out}/gemma4v_tiny.prompt", "w", encoding="utf-8", newline="") as fh:
        fh.write(PROMPT)
    blk = image_blocks(ids)
    print(f"prompt: {T} tokens; image blocks at "
          + ", ".join(f"{int(np.nonzero(blk == b)[0][0])}..{int(np.nonzero(blk == b)[0][-1])}" for b in range(2)))
    print("  tokens:", " ".join(f"{i}:{toks[i]!r}" for i in ids if i != tok_id(IMG)),
          f"(+ {int((ids == tok_id(IMG)).sum())} <|image|>)")
    rows = np.concatenate([feats[n] for n in GOLDEN_IMAGES])
    goldens = {}

    # per variant: the golden (the processor's inputs, mm_token_type_ids included, as generate() passes them) and
    # its checks
    for vn in VARIANT_ORDER:
        var = VARIANTS[vn]
        cfg_v, mv = models[vn]
        text_path = text_paths[vn]
        mode = mask_mode(var)
        other = "causal" if mode == "vision" else "vision"
        print(f"{var['file']} ({vn}: use_bidirectional_attention {var['bidir']!r}, mask {mode!r}):")
        logits, seen = hf_forward(mv, inp)
        assert np.array_equal(seen["position_ids"].numpy(), np.arange(T)[None]), "positions"
        want = attention_masks(ids, mode)
        for lt, mk in seen["attention_mask"].items():
            got = mk[0, 0].numpy()
            got = (got == 0) if got.dtype != np.bool_ else got
            assert np.array_equal(got, want[lt]), lt
        print(f"  the attention masks HF built equal attention_masks(ids, {mode!r}); positions 0..T-1")
        write_golden_file(f"{out}/{var['file']}.golden", ids.astype(np.int32), logits)
        describe(mv, inp)
        mg, mx = margin_stats(logits)
        print(f"  smallest top-1 margin {mg:.4f}, max |logit| {mx:.3f}")
        npl = gemma4_numpy_logits(text_path, ids, rows, mode)
        d = np.abs(npl - logits).max()
        print(f"  numpy gemma4 (from the text GGUF, the image rows from .embd, mask {mode!r}) vs golden: max |diff| "
              f"{d:.2e}")
        assert d < 3e-4 and (npl.argmax(1) != logits.argmax(1)).sum() == 0
        l64 = hf_float64_logits(mv, inp, rows)
        d64 = np.abs(gemma4_numpy_logits(text_path, ids, rows.astype(np.float64), mode) - l64).max()
        print(f"  the same numpy forward vs HF's text path in float64 (same image rows): max |diff| {d64:.2e}; HF "
              f"float64 vs the float32 golden: {np.abs(l64 - logits).max():.2e} (the float32 noise of this model)")
        assert d64 < 1e-9
        ch = hf_chunked_logits(mv, inp)
        print(f"  HF cached (through the last <image|> in one call, then token at a time) vs golden: max |diff| "
              f"{np.abs(ch - logits).max():.2e}")
        lc, seen_c = hf_forward(mv, inp, mm=False)
        for lt, mk in seen_c["attention_mask"].items():
            got = mk[0, 0].numpy()
            got = (got == 0) if got.dtype != np.bool_ else got
            assert np.array_equal(got, attention_masks(ids, "causal")[lt]), lt
        nc = gemma4_numpy_logits(text_path, ids, rows, "causal")
        if mode == "vision":
            print(f"  HF without mm_token_type_ids (plain causal) vs numpy 'causal': max |diff| "
                  f"{np.abs(nc - lc).max():.2e}")
            assert np.abs(nc - lc).max() < 3e-4
            lo = lc
        else:
            assert np.array_equal(lc, logits)  # use_bidirectional_attention None: mm_token_type_ids changes nothing
            print("  HF without mm_token_type_ids: the golden's bits")
            saved = (cfg_v.text_config.use_bidirectional_attention, mv.config.text_config.use_bidirectional_attention)
            cfg_v.text_config.use_bidirectional_attention = mv.config.text_config.use_bidirectional_attention = \
                "vision"
            try:
                lo, seen_o = hf_forward(mv, inp)
            finally:
                cfg_v.text_config.use_bidirectional_attention, mv.config.text_config.use_bidirectional_attention = \
                    saved
            for lt, mk in seen_o["attention_mask"].items():
                got = mk[0, 0].numpy()
                got = (got == 0) if got.dtype != np.bool_ else got
                assert np.array_equal(got, attention_masks(ids, "vision")[lt]), lt
            no = gemma4_numpy_logits(text_path, ids, rows, "vision")
            print(f"  HF with use_bidirectional_attention switched to 'vision' vs numpy 'vision': max |diff| "
                  f"{np.abs(no - lo).max():.2e}")
            assert np.abs(no - lo).max() < 3e-4
        print(f"  the other mask ({other!r}, HF): max |diff| from golden {np.abs(lo - logits).max():.3f} "
              f"({int((lo.argmax(1) != logits.argmax(1)).sum())} argmax differ)")
        na = gemma4_numpy_logits(text_path, ids, rows, "all")
        print(f"  llama.cpp's mask (non-causal image ubatch: bidirectional in the full layers too): max |diff| from "
              f"golden {np.abs(na - logits).max():.3f} ({int((na.argmax(1) != logits.argmax(1)).sum())} argmax "
              f"differ)")
        emb = mv.model.language_model.embed_tokens.weight.detach().numpy()
        nt = gemma4_numpy_logits(text_path, ids, emb[ids[ids == tok_id(IMG)]] * math.sqrt(N_EMBD), mode)
        print(f"  <|image|>'s own embedding instead of the image rows: max |diff| {np.abs(nt - logits).max():.3f}")
        ns = gemma4_numpy_logits(text_path, ids, rows * math.sqrt(N_EMBD), mode)
        print(f"  image rows scaled by sqrt(n_embd) like text: max |diff| {np.abs(ns - logits).max():.3f}")
        goldens[vn] = logits
    d = np.abs(goldens["dense"] - goldens["ple"]).max()
    print(f"the two goldens: max |diff| {d:.3f} ({int((goldens['dense'].argmax(1) != goldens['ple'].argmax(1)).sum())}"
          f" argmax differ)")

    total = 0
    for root, _, files in os.walk(out):
        for fn in sorted(files):
            if fn.startswith("gemma4v_tiny") or fn.endswith(".gemma4.pixels"):
                p = os.path.join(root, fn)
                total += os.path.getsize(p)
                print(f"  {os.path.relpath(p, out)}: {os.path.getsize(p)} bytes")
    print(f"total size of the files written: {total} bytes")


if __name__ == "__main__":
    main()
