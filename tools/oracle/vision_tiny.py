#!/usr/bin/env python3
r"""Tiny random-weight Gemma 3 vision oracle: Gemma3ForConditionalGeneration (a SigLIP vision tower, Gemma 3's
multimodal projector and a Gemma 3 language model), the two GGUF files llama.cpp's converter makes of it (the text
model, arch gemma3, and the mmproj, arch clip), synthetic test images, HF's preprocessing of each (the resized bytes
and the pixel_values), the image embeddings, and the logits of a chat prompt with an image.

The model is built with `transformers` (5.24; float32, eager attention, random weights scaled for O(1)
activations), exported with the tensor names, metadata keys and transforms of llama.cpp's converter
(conversion/gemma.py Gemma3Model and Gemma3VisionModel, conversion/base.py TextModel and MmprojModel; re-implemented
here, not copied), and every output is checked by a second, independent computation (see "Checks").

Usage: tools/oracle/vision_tiny.py OUT_DIR [bench]
       (/work/oracle-venv/bin/python tools/oracle/vision_tiny.py tests/data; needs torch, transformers, gguf, Pillow;
       about 10 s on one core). Writes OUT_DIR/gemma3v_tiny.gguf, gemma3v_tiny_mmproj.gguf, gemma3v_tiny.embd,
       gemma3v_tiny.stages, gemma3v_tiny.golden, gemma3v_tiny_img1.golden, and OUT_DIR/vision/<name>.<png|jpg> and
       OUT_DIR/vision/<name>.pixels for the 7 images below. All binary files are little-endian. Total 1.49 MB:
       6 text layers are the fewest that hold a global layer in a converter-made gemma3 file (below), and each
       .pixels holds 49 KB of float32 pixel_values.
       `bench` writes instead OUT_DIR/gemma3v_bench_mmproj.gguf and OUT_DIR/gemma3v_bench.gguf: Gemma-3-4B's shapes
       with random weights written straight from numpy (no HF model, no golden, no check; numpy default_rng(3030)),
       for speed runs of the image encoder (about 15 s, 1.4 GB of memory; 812 + 362 MiB).

gemma3v_bench_mmproj.gguf: the keys, key order, tensor names and layouts of the tiny mmproj below (the same writer
code), with Gemma 3 4B's SigLIP-400M values: image_size 896, patch_size 14 (64 x 64 = 4096 patches), embedding_length
1152, feed_forward_length 4304, block_count 27, head_count 16, layer_norm_epsilon 1e-6, projection_dim 2560, mean /
std 0.5, general.file_type 1 (MOSTLY_F16) and no projector.scale_factor key (pooling kernel 4: 256 tokens, as in the
published files). Tensor types as the converter writes them with --outtype f16 (Gemma3VisionModel.tensor_force_quant,
conversion/gemma.py:270-275: HF names holding ".embeddings." F32, input_projection F16; base.py: 1-D tensors F32,
other matrices the outtype): v.patch_embd.weight (14,14,3,1152) F32 N(0, 4/588), v.position_embd.weight (1152,4096)
F32 0.5 N(0,1), the layers' matrices F16 N(0, 1/fan_in), mm.input_projection.weight (2560,1152) F16 N(0, 1/1152)
(HF's [vision, text] matrix as is), biases F32 0.1 N(0,1), LayerNorm weights and mm.soft_emb_norm.weight (the
factor 1 + w) F32 1 + 0.1 N(0,1).
gemma3v_bench.gguf: the tiny text file's keys, tokenizer (the 384-token vocabulary below, with <start_of_turn>,
<end_of_turn>, <start_of_image>, <end_of_image>, <image_soft_token> as control tokens) and tensor names, with Gemma 3
4B's widths but 2 layers (both local: period 6): context 8192, embedding_length 2560, feed_forward_length 10240,
8 heads, 4 KV heads, key/value_length 256, sliding_window 1024, rope bases 1e6 / 10000, file_type 1; matrices and the
tied token_embd F16 N(0, 1/fan_in) (token_embd N(0, 1/2560)), norms (the factors 1 + w) F32 1 + 0.1 N(0,1).
Both load in llama.cpp (d32676d): llama-mtmd-cli needs --chat-template gemma (the file has no
tokenizer.chat_template; lockstep run takes the prompt raw).

Shapes below are GGUF ne order (ne[0] first = the contiguous dimension; a torch/numpy [rows, cols] matrix is ne
[cols, rows]). All tensors of both files are F32.

The model (HF config)
  vision (SiglipVisionConfig): image_size 64, patch_size 8 (8 x 8 = 64 patches), hidden 48, 2 layers, 4 heads of 12,
    intermediate 96, layer_norm_eps 1e-6, gelu_pytorch_tanh, no pooling head.
  projector: mm_tokens_per_image 16: the 8 x 8 patch grid average-pooled with a 2 x 2 kernel (HF: kernel =
    patches_per_side // sqrt(mm_tokens_per_image), modeling_gemma3.py:647-650) to 4 x 4 tokens; RMSNorm (eps =
    the vision layer_norm_eps 1e-6, weight 1 + w); then x @ mm_input_projection_weight ([48, 64]).
  text (Gemma3TextConfig): vocab 384, hidden 64, 6 layers, 4 heads, 2 KV heads, head_dim 16, FFN 32 (GELU-tanh
    gated), rms eps 1e-6, sliding_window 8, layer_types sliding x 5 then full (Gemma 3's pattern: layer il is global
    iff il % 6 == 5), rope theta 10000 (sliding) / 1e6 (full), query_pre_attn_scalar 16 (= head_dim: llama.cpp and
    lockstep scale by 1/sqrt(head_dim) and no GGUF key carries the scalar), max_position_embeddings 1024, tied
    output, no soft-capping. Token ids: boi <start_of_image> 381, eoi <end_of_image> 382, image <image_soft_token>
    383.
  Why 6 text layers: the converter writes no sliding-window pattern key for Gemma 3; llama.cpp takes period 6
    (src/models/gemma3.cpp:7-9, reading attention.sliding_window_pattern only if present) and lockstep hard-codes 6
    (core/models/gemma.cpp), so a file with fewer layers has no global layer.
  init: matrices N(0, 1/fan_in); token_embd N(0, 1/64) (x 8 in the model); Gemma RMSNorm weights (HF w in 1 + w)
    0.2 N(0,1), the final norm's factor then x 3 (logits of std ~2.5); SigLIP LayerNorm weights 1 + 0.2 N(0,1),
    every bias 0.3 N(0,1); patch conv N(0, 4/192); position embedding 0.5 N(0,1); mm_input_projection N(0, 1/48);
    soft_emb_norm w 0.2 N(0,1). torch.manual_seed(3030), then a torch.Generator seeded 3030 over named_parameters().

gemma3v_tiny.gguf (the text model; general.architecture "gemma3")
  keys, in this order (the converter's: TextModel.set_gguf_parameters, whose keys Gemma3Model rewrites in place with
  the same values, then Gemma3Model's attention.sliding_window; the tokenizer last):
    general.architecture "gemma3", general.type "model", general.name "lockstep tiny gemma3v",
    gemma3.block_count u32 6, gemma3.context_length u32 1024, gemma3.embedding_length u32 64,
    gemma3.feed_forward_length u32 32, gemma3.attention.head_count u32 4, gemma3.attention.head_count_kv u32 2,
    gemma3.rope.freq_base f32 1000000 (global layers), gemma3.rope.freq_base_swa f32 10000 (sliding layers: the
    converter writes it from rope_parameters["sliding_attention"]; llama.cpp reads it, default 10000
    (llama-hparams.h:127); lockstep uses 10000 without reading it), gemma3.attention.layer_norm_rms_epsilon f32 1e-6,
    gemma3.attention.key_length u32 16, gemma3.attention.value_length u32 16, general.file_type u32 0 (ALL_F32),
    gemma3.attention.sliding_window u32 8, general.quantization_version u32 2, then tokenizer.* (below).
    Not written (the converter writes none of them): a sliding-window pattern, final_logit_softcapping (None),
    query_pre_attn_scalar, rope scaling (rope_type "default"), vocab_size.
  tensors (F32): token_embd.weight [64,384] (also the output projection: no output.weight); output_norm.weight [64];
    per layer blk.N. (N = 0..5): attn_norm.weight [64], attn_q.weight [64,64], attn_k.weight [64,32],
    attn_v.weight [64,32], attn_output.weight [64,64], attn_q_norm.weight [16], attn_k_norm.weight [16],
    post_attention_norm.weight [64], ffn_norm.weight [64] (HF pre_feedforward_layernorm), ffn_gate.weight [64,32],
    ffn_up.weight [64,32], ffn_down.weight [32,64], post_ffw_norm.weight [64].
  transforms: + 1 on every *norm.weight (q_norm and k_norm included: Gemma3RMSNorm multiplies by 1 + w; the file
    holds the factor; conversion/gemma.py:124-125, 166-171); token_embd rows cut to the tokenizer's size (here all
    384; gemma.py:155-164); no q/k permutation (NeoX rope, pairs (i, i + 8)).
  tokenizer: SentencePiece, tokenizer.ggml.model "llama", pre "default"; tokens / scores / token_type:
    <pad> 0, <eos> 1, <bos> 2 (control, 3), <unk> 3 (type 2), <start_of_turn> 4, <end_of_turn> 5 (control),
    <0x00>..<0xFF> 6..261 (byte, 6), word pieces 262..334 (normal, 1; score -rank, rank 1 = "\u2581" at 262):
    families_tiny.py's 59 pieces ("\u2581", a..z, th, he, .., "\u2581and" 320), then "\n" 321, "\n\n" 322, us 323,
    user 324, od 325, el 326, mod 327, model 328, Des 329, cr 330, ib 331, crib 332, cribe 333, Describe 334;
    <unused0>..<unused45> 335..380 (unused, 5); <start_of_image> 381, <end_of_image> 382, <image_soft_token> 383
    (control, 3); specials and fillers score 0. bos 2, eos 1, unknown 3, padding 0, add_bos_token true,
    add_eos_token false, add_space_prefix false. (A real Gemma 3 file has the image tokens at 255999 / 256000 /
    262144, control, score -1000, and a vocabulary padded to 262208.)

gemma3v_tiny_mmproj.gguf (the vision tower and projector; general.architecture "clip")
  keys, in this order (MmprojModel.set_gguf_parameters, then Gemma3VisionModel's; conversion/base.py:2431-2484,
  conversion/gemma.py:252-268):
    general.architecture "clip", general.type "mmproj", general.name "lockstep tiny gemma3v mmproj",
    general.file_type u32 0, clip.has_vision_encoder bool true, clip.vision.projection_dim u32 64 (the text
    hidden size), clip.vision.image_size u32 64, clip.vision.patch_size u32 8, clip.vision.embedding_length u32 48,
    clip.vision.feed_forward_length u32 96, clip.vision.block_count u32 2, clip.vision.attention.head_count u32 4,
    clip.vision.image_mean f32[3] [0.5, 0.5, 0.5], clip.vision.image_std f32[3] [0.5, 0.5, 0.5],
    clip.projector_type "gemma3", clip.vision.attention.layer_norm_epsilon f32 1e-6, clip.use_gelu bool true,
    clip.vision.projector.scale_factor u32 2, general.quantization_version u32 2.
    No head_dim / head_count_kv key (clip.cpp: d_head = 48 / 4 = 12, n_head_kv = n_head), no image_size-per-token
    or token-count key.
  tensors (F32; HF name -> GGUF name, shape):
    vision_tower.embeddings.patch_embedding.weight [48,3,8,8] -> v.patch_embd.weight (8,8,3,48) (kw, kh, c_in,
      c_out: element [o][c][ky][kx] at ((o*3 + c)*8 + ky)*8 + kx); .bias [48] -> v.patch_embd.bias (48)
    embeddings.position_embedding.weight [64,48] -> v.position_embd.weight (48,64) (row p = patch p)
    encoder.layers.N.layer_norm1.{weight,bias} -> v.blk.N.ln1.{weight,bias} (48)   (N = 0, 1)
    encoder.layers.N.self_attn.{q,k,v}_proj.{weight,bias} -> v.blk.N.attn_{q,k,v}.weight (48,48), .bias (48)
    encoder.layers.N.self_attn.out_proj -> v.blk.N.attn_out.weight (48,48), .bias (48)
    encoder.layers.N.layer_norm2 -> v.blk.N.ln2.{weight,bias} (48)
    encoder.layers.N.mlp.fc1 [96,48] -> v.blk.N.ffn_up.weight (48,96), .bias (96)
    encoder.layers.N.mlp.fc2 [48,96] -> v.blk.N.ffn_down.weight (96,48), .bias (48)
    post_layernorm -> v.post_ln.{weight,bias} (48)
    multi_modal_projector.mm_input_projection_weight [48,64] -> mm.input_projection.weight (64,48): stored as HF's
      [in, out] matrix AS IS (ne[0] = 64 = the OUTPUT size, the transpose of the usual GGUF linear layout);
    multi_modal_projector.mm_soft_emb_norm.weight [48] -> mm.soft_emb_norm.weight (48), + 1 (gemma.py:297-300: the
      only +1 of the mmproj; the SigLIP LayerNorms are stored as they are).
    The converter writes mm.input_projection.weight as F16 whatever the outtype (tensor_force_quant,
    gemma.py:270-273; llama.cpp issue 13025): a loader must take F16 there; here it is F32 so the oracle is exact.
    Published checkpoints name the tower vision_tower.vision_model.*; transformers 5.24's save_pretrained writes
    vision_tower.* (no "vision_model."), which the converter does not map.
  how llama.cpp uses them (tools/mtmd/clip.cpp, models/siglip.cpp; clip_graph::build_vit, clip.cpp:334-565):
    input: the normalized image, ggml ne (64, 64, 3) = CHW planes; inp = conv2d(v.patch_embd.weight, stride 8, no
    padding) -> one 48-vector per patch p = py * 8 + px (row-major), + v.patch_embd.bias (clip.cpp:567-577), then
    + v.position_embd row p. No pre-LN, no class token.
    per layer: h = LayerNorm(x; ln1, eps 1e-6); q, k, v = attn_{q,k,v}.weight h + bias; 4 heads of 12, scores
    q.k / sqrt(12) (clip.cpp:261), no mask, softmax; x += attn_out.weight o + attn_out.bias; h = LayerNorm(x; ln2);
    x += ffn_down(gelu_tanh(ffn_up h + b_up)) + b_down (clip.use_gelu -> FFN_GELU, ggml's tanh GELU; without the key
    it would be gelu_quick; clip.cpp:1306-1324). (clip.cpp:2120-2135 swaps ffn_up / ffn_down back for old files whose
    ffn_down has ne[0] == n_embd; converter-made files never trigger it.)
    then x = LayerNorm(x; post_ln) -> [64 patches, 48].
    projector (siglip.cpp:18-39): transpose to a (8, 8, 48) grid (x fastest), ggml_pool_2d AVG with kernel = stride
      = n_merge, no padding -> token t = ty * 4 + tx = the mean of patches (2ty + dy) * 8 + (2tx + dx), dy, dx in
      {0, 1}; rms_norm (eps = clip.vision.attention.layer_norm_epsilon) * mm.soft_emb_norm.weight; then
      mm.input_projection.weight transposed before the mul_mat: out[t][j] = sum_i x[t][i] W[i][j] with W the numpy
      [48, 64] matrix (row i = 64 contiguous floats). Result: 16 rows of 64 (clip_n_mmproj_embd = ne[0] of
      mm.input_projection.weight, clip.cpp:5382-5384).
    pooling kernel: n_merge = 4 hard-coded for gemma3 (clip.cpp:1514), replaced by clip.vision.projector.scale_factor
      when present (clip.cpp:1517, "test model (tinygemma3)"); tokens per image = (image_size / patch_size /
      n_merge)^2 (clip.cpp:3860-3870), so 256 only for the real 896 / 14 / 4 = 16 per side; no token count is stored
      anywhere. The converter computes scale_factor = (image_size / patch_size) / sqrt(image_seq_length) from
      preprocessor_config.json's image_seq_length (default 256) and writes it only when it is not 4
      (gemma.py:259-268): published Gemma 3 mmproj files carry no such key.

Test images (OUT_DIR/vision/; drawn with numpy's default_rng(3030), written by Pillow)
  index name         file             decoded as      what it exercises
  0     rgb64        rgb64.png        RGB 64x64       no resize (Pillow returns a copy at the target size)
  1     rgb100x37    rgb100x37.png    RGB 100x37      x shrunk (antialiased, ~3 source columns per output), y stretched
  2     gray23x31    gray23x31.png    L 23x31         grayscale -> RGB (R = G = B), both axes stretched
  3     rgba50       rgba50.png       RGBA 50x50      alpha 255 / a ramp / 0 in a checker: composited onto white
  4     photo120x90  photo120x90.jpg  RGB 120x90      baseline JPEG, quality 90, 4:2:0, partial MCUs; both shrunk
  5     pal7x5       pal7x5.png       P 7x5           palette (8 colours), no transparency
  6     paltrns9x6   paltrns9x6.png   P 9x6           palette with a tRNS transparent index 0: composited onto white

HF preprocessing (what the .pixels files hold; transformers 5.24, the PIL backend Gemma3ImageProcessorPil,
image_processing_pil_gemma3.py:58-59, with size 64 x 64, resample BILINEAR (Gemma 3's default, the class attribute),
rescale 1/255, mean = std = 0.5, do_convert_rgb True, pan-and-scan off; Gemma3ImageProcessor, the name the brief
gives, is the torchvision backend in 5.24, image_processing_gemma3.py:58, and AutoImageProcessor picks it when
torchvision is installed; see below):
  1. convert to RGB (image_transforms.py:759-786 convert_to_rgb, from PilBackend.process_image): if the image has an
     alpha band or info["transparency"] (RGBA, LA, P or L with tRNS): image.convert("RGBA"), then
     Image.alpha_composite(an opaque white RGBA image, it).convert("RGB") -- transparency is COMPOSITED ONTO WHITE,
     not dropped; else image.convert("RGB") (L: R = G = B = L; P: the palette colour; RGB/JPEG: as decoded).
     Pillow's integer compositing onto white (libImaging/AlphaComposite.c; checked bit-exact for these images by
     composite_on_white_numpy): a = 0 -> 255; else coef1 = floor(a * 255 * 255 * 128 / 65025) (= a * 128),
     coef2 = 255 * 128 - coef1, t = c * coef1 + 255 * coef2 + (128 << 7), out = (((t >> 8) + t) >> 8) >> 7.
     (stb_image, which llama.cpp uses with 3 channels (mtmd-helper.cpp:399), drops alpha instead: it changes 1590 of
     rgba50's 2500 pixels and 7 of paltrns9x6's 54.)
  2. resize to 64 x 64 as uint8 with PIL (image_transforms.py:316-384: the uint8 HWC array back to a PIL "RGB" image,
     Image.resize((64, 64), BILINEAR), no reducing_gap) -- on bytes, not floats. Pillow's BILINEAR
     (libImaging/Resample.c; re-implemented in pil_bilinear_numpy, byte-exact for every image here):
     if the size is unchanged the image is copied. Else, per axis (in -> out samples): scale = in / out,
       fs = max(scale, 1), support = fs; for output i: center = (i + 0.5) * scale,
       xmin = max(trunc(center - support + 0.5), 0), xmax = min(trunc(center + support + 0.5), in),
       w_j = max(0, 1 - |(j - center + 0.5) / fs|) for j in [xmin, xmax), normalized by their sum (in double),
       then fixed point k_j = trunc(w_j * 2^22 + 0.5) (w_j >= 0; trunc(w_j * 2^22 - 0.5) if negative).
     The horizontal pass runs first (only if the width changes), over the rows the vertical pass needs, into an
     uint8 image: out = clamp((2^21 + sum_j in_j k_j) >> 22, 0, 255) per channel; then the vertical pass (only if the
     height changes) the same way on those bytes. (So a shrink averages over 2 * scale source pixels: antialiased.)
  3. rescale and normalize (image_transforms.py:121, 442): x = float32(double(byte) * (1.0 / 255)); then in float32
     pixel = (x - 0.5f) / 0.5f; channels first [3, 64, 64]. (Bit-exact for every image: normalize_numpy.)
  The torchvision backend (Gemma3ImageProcessor; measured with torchvision 0.29.2 beside torch 2.15): the same RGB
  conversion; resize with torchvision's antialiased bilinear on the uint8 tensor -- equal to Pillow's bytes when
  stretching, but 31 of rgb100x37's and 90 of photo120x90's 12288 bytes differ by 1; then a fused rescale-normalize,
  (byte - 127.5f) / 127.5f in float32 (image_processing_backends.py:329-341), 1 ulp (<= 6e-8) from the PIL path's.
  llama.cpp preprocesses differently again (mtmd_image_preprocessor_fixed_size, mtmd-image.cpp:916-926): stb_image
  decoding (alpha dropped), then for gemma3 image_resize_pad keeps its default PAD_CEIL (clip-model.h:67-68): the
  image is scaled to fit 64 x 64 keeping its aspect ratio and centred on black, with its own non-antialiased
  "bilinear" (mtmd-image.cpp:232-276: align-corners ratios (in - 1) / (out - 1), float lerp, truncated to uint8);
  then (byte / 255 - mean) / std. So no non-square image gets HF's pixels through llama.cpp.

Prompt and goldens
  text: "<bos><start_of_turn>user\n" + the processor's expansion of one "<start_of_image>" (processing_gemma3.py:49:
    "\n\n<start_of_image>" + 16 x "<image_soft_token>" + "<end_of_image>\n\n") + "Describe.<end_of_turn>\n
    <start_of_turn>model\n" (the user turn of Gemma 3's chat template with one image before the text).
  tokens (31; llama.cpp's SentencePiece algorithm with special tokens parsed and no added BOS, spm_encode):
    2 <bos>, 4 <start_of_turn>, 324 user, 322 "\n\n", 321 "\n", 381 <start_of_image>, 383 x 16 (positions 6..21),
    382 <end_of_image>, 322 "\n\n", 334 Describe, 52 <0x2E> ("." by byte fallback), 5 <end_of_turn>, 321 "\n",
    4 <start_of_turn>, 328 model, 321 "\n".
    (llama.cpp's mtmd instead puts <start_of_image>, the image embeddings and <end_of_image> where its media marker
    is (mtmd.cpp:726-727, 1312, 1495), with no "\n\n" around them.)
  gemma3v_tiny.golden: the logits of those 31 tokens with image 0 (rgb64); gemma3v_tiny_img1.golden: the same
    tokens with image 1 (rgb100x37). Format of golden.py's write_golden (tests/support/golden.h read_golden):
    int32 n (31), int32 n_vocab (384), n int32 tokens, n x n_vocab float32 logits (row t: after tokens 0..t), the
    whole prompt in one forward. The positions holding 383 (<image_soft_token>) take, in order, the 16 rows of the
    golden's image in gemma3v_tiny.embd (image 0 resp. 1) INSTEAD of their token_embd row.
  how HF computes them (modeling_gemma3.py): text rows = token_embd[id] * sqrt(64) (Gemma3TextScaledWordEmbedding,
    :89-100, :468; the scale is 8 exactly in float32); the image rows are the projector's output, masked_scatter'ed
    in after that scaling (:864), so they are NOT scaled. token_type_ids (1 at the <image_soft_token> positions, 0
    elsewhere, as the processor returns them) turn on the bidirectional image block: a key k is visible to query q
    iff k <= q OR q and k lie in the same run of image tokens (get_block_sequence_ids_for_mask :671-679,
    blockwise_overlay masking_utils.py:114-127); in sliding layers additionally q - k < 8 (sliding_window_overlay,
    masking_utils.py:90-97: kv > q - W), which every LATER key passes, so an image token sees all later image tokens
    of its block even more than 8 positions ahead (create_masks_for_vision_model :682-739). <start_of_image> and
    <end_of_image> are ordinary causal text tokens. HF applies this at inference: generate() passes token_type_ids
    on the first (prefill) call only (:1016-1025; later one-token steps are causal); a forward call without
    token_type_ids is plain causal.
  llama.cpp: the image chunk is decoded with llama_set_causal_attn(false) for gemma3 (mtmd.cpp:2037-2048
    mtmd_decode_use_non_causal; mtmd-helper.cpp:88-106, 159-160); the KV mask then skips only the causal test
    (llama-kv-cache.cpp:1647-1669), and SWA masks only keys with q - k >= n_swa (llama-hparams.h:388-393): the same
    mask as HF, as long as the whole image is one ubatch (mtmd-helper.cpp:92's TODO: n_ubatch must hold the image;
    a split image would see only its earlier parts). Text before and after is decoded causally. The embeddings
    input is not scaled: ggml_scale(inpL, ubatch.token ? sqrtf(n_embd) : 1.0f) (src/models/gemma3.cpp:92-93).
  text forward (as the numpy check computes it from the GGUF): x = the rows above; per layer il (local iff
    il % 6 < 5, rope base rope.freq_base_swa (10000) if local else rope.freq_base (1e6)): h = RMSNorm(x) *
    attn_norm; q, k, v = projections; q, k RMS-normed per head (attn_q_norm / attn_k_norm); NeoX rope (pairs (i,
    i + 8), angle p * base^(-2i/16)); scores q.k / 4 with the mask above; query head h reads KV head h / 2;
    x += RMSNorm(attn_output o) * post_attention_norm; h = RMSNorm(x) * ffn_norm; x += RMSNorm(ffn_down(gelu_tanh(
    ffn_gate h) * ffn_up h)) * post_ffw_norm; logits = (RMSNorm(x) * output_norm) . token_embd. (RMSNorm eps 1e-6.)

Output formats (besides the GGUFs and the goldens above)
  vision/<name>.pixels: int32 C (3), int32 H (64), int32 W (64); H*W*C uint8: the resized RGB bytes, HWC (row y,
    column x, then R, G, B), before rescale/normalize; C*H*W float32: pixel_values, CHW (the exact model input);
    then int32 src_H, int32 src_W and src_H*src_W*3 uint8: the image after decoding and HF's RGB conversion
    (step 1), HWC, before resizing (for checking a decoder / converter apart from the resize).
  gemma3v_tiny.embd: int32 n_images (7), int32 n_tokens (16), int32 n_embd (64); then n_images x 16 x 64 float32:
    get_image_features' output (vision tower, post_layernorm, 2 x 2 average pool, soft_emb_norm, input projection)
    of each image, in the table's order; row t of an image = token t = pooled cell (ty, tx) = (t / 4, t % 4).
  gemma3v_tiny.stages (image 0's intermediate results, torch float32, for debugging a vision tower): int32
    n_stages (7); per stage: int32 name length, the name (ASCII, no NUL), int32 rows, int32 cols, rows x cols
    float32 row-major: "embd" [64, 48] (patch conv + bias + position embedding; row = patch py * 8 + px),
    "layer0" [64, 48], "layer1" [64, 48] (each encoder layer's output), "post_ln" [64, 48], "pooled" [16, 48]
    (after the 2 x 2 average pool), "soft_emb_norm" [16, 48], "proj" [16, 64] (= image 0 of the .embd file).

Checks (all run on every invocation; the numbers are this file's)
  - preprocessing: Pillow-resize re-implementation and the compositing formula byte-exact, the rescale/normalize
    formula bit-exact against the HF processor, for all 7 images; each conversion re-derived (L replicated, P
    through its palette, RGB unchanged).
  - vision: a float64 numpy vision tower and projector read from the mmproj GGUF alone (vision_numpy: conv as a
    patch matmul, LayerNorm, attention, GELU-tanh MLP, pooling, RMSNorm, projection) against torch: every stage of
    image 0 within 2.6e-6, the 16 x 64 embeddings of all 7 images within 1.5e-6 (required < 1e-5). The embeddings
    of any two images differ by at least 1.88 somewhere.
  - text: a float64 numpy Gemma 3 read from the text GGUF alone (gemma3_numpy_logits, the image rows from .embd)
    gives both goldens within 8.4e-6; HF's own cached path (the text before the image and the image in one call,
    then one token at a time) within 7.9e-6.
  - the goldens discriminate: attending to the image causally (no token_type_ids) moves the logits by 10.4 / 9.2
    (golden 0 / 1; the numpy causal variant matches HF's within 1.1e-5); image rows scaled by sqrt(64) like text
    by 11.2 / 12.5; the other image's pixels by 8.0, with 12 of the 31 argmaxes changed.
  - statistics (golden.py's): smallest top-1 margin 0.054 (golden 0) and 0.208 (golden 1), max |logit| 12.69.
    Activation rms: vision embeddings 1.23, layer outputs 1.64 / 2.03, attention outputs 0.68 / 1.08, MLP outputs
    0.76 / 0.68, image rows 1.09; text embedding rows 1.01, layer outputs 1.8 .. 3.8; vision attention entropy 3.7 /
    3.8 nats (uniform: 4.16): no layer near zero or saturated.
  - llama.cpp's converter (d32676d; set_vocab skipped; the tower's tensors renamed to the published
    vision_tower.vision_model.* layout; preprocessor_config.json with image_seq_length 16 and mean / std 0.5, and
    a tokenizer.json of the 384 tokens for its vocabulary-size read) run on save_pretrained of the same model
    writes the same keys, values, types and key order (plus general.size_label, and its own general.name) and
    bit-identical tensors in both files, except mm.input_projection.weight, which it writes as F16.
  - (optional) with torchvision importable, the torchvision backend's differences above are printed.
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
from golden import write_spm_vocab_keys  # noqa: E402

SEED = 3030
VOCAB = 384
N_EMBD_TEXT = 64
N_LAYER_TEXT = 6          # 5 sliding + 1 global: llama.cpp's (and lockstep's) fixed Gemma 3 period of 6
N_FF_TEXT = 32
WINDOW = 8
IMAGE_SIZE = 64
PATCH = 8
N_EMBD_VIT = 48
N_FF_VIT = 96
N_LAYER_VIT = 2
N_HEAD_VIT = 4
MM_TOKENS = 16            # 4 x 4 tokens: 8 x 8 patches average-pooled 2 x 2
IMAGE_MEAN = [0.5, 0.5, 0.5]
IMAGE_STD = [0.5, 0.5, 0.5]
N_GOLDEN_IMAGES = 2

# the tiny SentencePiece vocabulary: tests/support/tiny_gguf.cpp put_vocab's / families_tiny.py's layout (specials
# 0-5, byte tokens 6-261, then word pieces by score, <unusedN> fillers) with the three image tokens at the end
SPECIALS = [("<pad>", 3), ("<eos>", 3), ("<bos>", 3), ("<unk>", 2), ("<start_of_turn>", 3), ("<end_of_turn>", 3)]
IMAGE_SPECIALS = ["<start_of_image>", "<end_of_image>", "<image_soft_token>"]
SP = "\u2581"
PIECES = ([SP] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
          + ["th", "he", "in", "er", "an", SP + "t", SP + "a", "the", SP + "th", SP + "the"]
          + ["re", "on", "at", "en", "nd", "is", "or", "es", "it", "ing", "ion", "and"]
          + [SP + s for s in ("i", "o", "s", "w", "an", "is", "it", "in", "on", "and")]
          # the chat prompt's words and Gemma's newline pieces
          + ["\n", "\n\n", "us", "user", "od", "el", "mod", "model", "Des", "cr", "ib", "crib", "cribe", "Describe"])

# the HF processor's expansion of one <start_of_image> (processing_gemma3.py: full_image_sequence)
IMAGE_SEQUENCE = "\n\n<start_of_image>" + "<image_soft_token>" * MM_TOKENS + "<end_of_image>\n\n"
PROMPT = "<bos><start_of_turn>user\n" + IMAGE_SEQUENCE + "Describe.<end_of_turn>\n<start_of_turn>model\n"


# ----------------------------------------------------------------------------------------------
# vocabulary and a SentencePiece encoder (llama.cpp's llm_tokenizer_spm algorithm, re-implemented)


def vocab():
    """(tokens, scores, types) of the tiny vocabulary."""
    toks = [t for t, _ in SPECIALS]
    types = [ty for _, ty in SPECIALS]
    toks += [f"<0x{b:02X}>" for b in range(256)]
    types += [6] * 256
    scores = [0.0] * len(toks)
    for rank, piece in enumerate(PIECES, 1):
        assert piece not in toks, piece
        toks.append(piece)
        types.append(1)
        scores.append(-float(rank))
    n_unused = VOCAB - len(toks) - len(IMAGE_SPECIALS)
    toks += [f"<unused{i}>" for i in range(n_unused)]
    types += [5] * n_unused
    scores += [0.0] * n_unused
    toks += IMAGE_SPECIALS
    types += [3] * len(IMAGE_SPECIALS)
    scores += [0.0] * len(IMAGE_SPECIALS)
    assert len(toks) == VOCAB
    return toks, scores, types


def spm_encode(text):
    """Token ids of `text` as llama.cpp tokenizes it with parse_special and no added BOS (add_space_prefix false):
    control tokens matched literally first; each remaining fragment: spaces -> U+2581, split into UTF-8 characters,
    then repeatedly merge the adjacent pair whose concatenation is in the vocabulary with the highest score (ties:
    the leftmost pair); a final symbol not in the vocabulary falls back to its <0xXX> byte tokens."""
    toks, scores, types = vocab()
    index = {t: i for i, t in enumerate(toks)}
    special = sorted((t for t, ty in zip(toks, types) if ty == 3), key=len, reverse=True)
    out = []
    i = 0
    frag = ""

    def flush(s):
        if not s:
            return
        s = s.replace(" ", SP)
        sym = list(s)  # one symbol per character
        alive = [True] * len(sym)
        while True:
            best = None
            live = [k for k in range(len(sym)) if alive[k]]
            for a, b in zip(live, live[1:]):
                t = sym[a] + sym[b]
                if t in index:
                    sc = scores[index[t]]
                    if best is None or sc > best[0]:  # strictly greater: the leftmost wins a tie
                        best = (sc, a, b)
            if best is None:
                break
            _, a, b = best
            sym[a] += sym[b]
            alive[b] = False
        for k in range(len(sym)):
            if alive[k]:
                if sym[k] in index:
                    out.append(index[sym[k]])
                else:
                    out.extend(index[f"<0x{c:02X}>"] for c in sym[k].encode("utf-8"))

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


def write_tokenizer(w):
    toks, scores, types = vocab()
    write_spm_vocab_keys(w, toks, scores, types)


# ----------------------------------------------------------------------------------------------
# the model


def make_config():
    from transformers import Gemma3Config, Gemma3TextConfig, SiglipVisionConfig
    toks = vocab()[0]
    vc = SiglipVisionConfig(hidden_size=N_EMBD_VIT, intermediate_size=N_FF_VIT, num_hidden_layers=N_LAYER_VIT,
                            num_attention_heads=N_HEAD_VIT, image_size=IMAGE_SIZE, patch_size=PATCH, num_channels=3,
                            layer_norm_eps=1e-6, hidden_act="gelu_pytorch_tanh", vision_use_head=False)
    tc = Gemma3TextConfig(vocab_size=VOCAB, hidden_size=N_EMBD_TEXT, intermediate_size=N_FF_TEXT,
                          num_hidden_layers=N_LAYER_TEXT, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                          query_pre_attn_scalar=16, sliding_window=WINDOW, max_position_embeddings=1024,
                          rms_norm_eps=1e-6, hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True,
                          layer_types=["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(N_LAYER_TEXT)],
                          rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                           "full_attention": {"rope_type": "default", "rope_theta": 1000000.0}},
                          pad_token_id=0, eos_token_id=1, bos_token_id=2)
    cfg = Gemma3Config(text_config=tc.to_dict(), vision_config=vc.to_dict(), mm_tokens_per_image=MM_TOKENS,
                       boi_token_index=toks.index("<start_of_image>"), eoi_token_index=toks.index("<end_of_image>"),
                       image_token_index=toks.index("<image_soft_token>"), tie_word_embeddings=True)
    cfg._attn_implementation = "eager"
    return cfg


def init_weight(name, p, g):
    """Random weights scaled for O(1) activations everywhere (checked by describe())."""
    if name.endswith("patch_embedding.weight"):  # [48, 3, 8, 8]: pixels in [-1, 1] -> O(1) patch vectors
        p.copy_(torch.randn(p.shape, generator=g) * 2.0 / math.sqrt(p[0].numel()))
    elif name.endswith("position_embedding.weight"):  # smaller than the content, not negligible
        p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    elif name.endswith("mm_input_projection_weight"):  # [vision 48, text 64], used as x @ W
        p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[0]))
    elif name.endswith("embed_tokens.weight"):  # x sqrt(64) in the model; also the tied output projection
        p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[1]))
    elif p.dim() == 2:
        p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[1]))
    elif "language_model" in name or "soft_emb_norm" in name:  # Gemma3RMSNorm: multiplies by 1 + w
        assert name.endswith("norm.weight"), name
        p.copy_(0.2 * torch.randn(p.shape, generator=g))
    elif name.endswith("bias"):
        p.copy_(0.3 * torch.randn(p.shape, generator=g))
    elif "layer_norm" in name or "layernorm" in name:  # SigLIP LayerNorm weight (multiplies by w)
        p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
    else:
        raise RuntimeError(f"no init rule for {name} {tuple(p.shape)}")


def make_model():
    from transformers import Gemma3ForConditionalGeneration
    cfg = make_config()
    torch.manual_seed(SEED)
    m = Gemma3ForConditionalGeneration(cfg).float().eval()
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in m.named_parameters():
            init_weight(name, p, g)
        # logits of std ~2.5 through the tied embedding (final norm around 3 instead of 1)
        m.model.language_model.norm.weight.copy_(3.0 * (1.0 + m.model.language_model.norm.weight) - 1.0)
    assert m.lm_head.weight.data_ptr() == m.model.language_model.embed_tokens.weight.data_ptr()
    return cfg, m


# ----------------------------------------------------------------------------------------------
# GGUF export (the names, keys and transforms of llama.cpp's converter: conversion/gemma.py Gemma3Model and
# Gemma3VisionModel, conversion/base.py TextModel / MmprojModel; re-implemented)


def f32(t):
    return t.detach().float().contiguous().numpy().astype(np.float32)


def finish_gguf(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_text_keys(w, name, n_layer, n_ctx, n_embd, n_ff, n_head, n_head_kv, theta, theta_swa, eps, head_dim,
                    ftype, window):
    """The text file's keys (after general.architecture), in the converter's order: TextModel.set_gguf_parameters
    (Gemma3Model's own calls rewrite the same keys in place, same values), then Gemma3Model's new key
    attention.sliding_window; the tokenizer last."""
    w.add_type("model")
    w.add_name(name)
    w.add_block_count(n_layer)
    w.add_context_length(n_ctx)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_rope_freq_base(theta)
    w.add_rope_freq_base_swa(theta_swa)
    w.add_layer_norm_rms_eps(eps)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_file_type(ftype)
    w.add_sliding_window(window)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    write_tokenizer(w)


# the text tensors of one layer: (GGUF name, HF name under layers.N., + 1 (Gemma3RMSNorm's factor))
TEXT_LAYER_TENSORS = [
    ("attn_norm.weight", "input_layernorm.weight", True),
    ("attn_q.weight", "self_attn.q_proj.weight", False),
    ("attn_k.weight", "self_attn.k_proj.weight", False),
    ("attn_v.weight", "self_attn.v_proj.weight", False),
    ("attn_output.weight", "self_attn.o_proj.weight", False),
    ("attn_q_norm.weight", "self_attn.q_norm.weight", True),
    ("attn_k_norm.weight", "self_attn.k_norm.weight", True),
    ("post_attention_norm.weight", "post_attention_layernorm.weight", True),
    ("ffn_norm.weight", "pre_feedforward_layernorm.weight", True),
    ("ffn_gate.weight", "mlp.gate_proj.weight", False),
    ("ffn_up.weight", "mlp.up_proj.weight", False),
    ("ffn_down.weight", "mlp.down_proj.weight", False),
    ("post_ffw_norm.weight", "post_feedforward_layernorm.weight", True),
]


def export_text(cfg, m, path):
    tc = cfg.text_config
    w = gguf.GGUFWriter(path, "gemma3")
    write_text_keys(w, "lockstep tiny gemma3v", tc.num_hidden_layers, tc.max_position_embeddings, tc.hidden_size,
                    tc.intermediate_size, tc.num_attention_heads, tc.num_key_value_heads,
                    tc.rope_parameters["full_attention"]["rope_theta"],
                    tc.rope_parameters["sliding_attention"]["rope_theta"], tc.rms_norm_eps, tc.head_dim,
                    gguf.LlamaFileType.ALL_F32, tc.sliding_window)

    sd = {k.replace("model.language_model.", ""): v for k, v in m.named_parameters() if "language_model" in k}
    w.add_tensor("token_embd.weight", f32(sd["embed_tokens.weight"]))
    for i in range(tc.num_hidden_layers):
        for dst, src, plus_one in TEXT_LAYER_TENSORS:
            t = sd[f"layers.{i}.{src}"]
            w.add_tensor(f"blk.{i}.{dst}", f32(t + 1 if plus_one else t))  # the file holds 1 + w
    w.add_tensor("output_norm.weight", f32(sd["norm.weight"] + 1))
    finish_gguf(w)


def write_mmproj_keys(w, name, ftype, proj_dim, image_size, patch, n_embd, n_ff, n_layer, n_head, eps, mm_tokens):
    """The mmproj's keys (after general.architecture): MmprojModel.set_gguf_parameters, then Gemma3VisionModel's."""
    w.add_type("mmproj")
    w.add_name(name)
    w.add_file_type(ftype)
    w.add_clip_has_vision_encoder(True)
    w.add_vision_projection_dim(proj_dim)
    w.add_vision_image_size(image_size)
    w.add_vision_patch_size(patch)
    w.add_vision_embedding_length(n_embd)
    w.add_vision_feed_forward_length(n_ff)
    w.add_vision_block_count(n_layer)
    w.add_vision_head_count(n_head)
    w.add_vision_image_mean(IMAGE_MEAN)
    w.add_vision_image_std(IMAGE_STD)
    w.add_clip_projector_type(gguf.VisionProjectorType.GEMMA3)
    w.add_vision_attention_layernorm_eps(eps)
    w.add_vision_use_gelu(True)
    scale = (image_size // patch) // int(mm_tokens ** 0.5)
    if scale > 0 and scale != 4:  # the converter writes it only when it is not Gemma 3's 4
        w.add_vision_projector_scale_factor(scale)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)


# the vision tensors of one layer: (GGUF name, HF name under vision_tower.encoder.layers.N.)
VIT_LAYER_TENSORS = [(f"{dst}.{wb}", f"{src}.{wb}")
                     for src, dst in (("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"),
                                      ("self_attn.v_proj", "attn_v"), ("self_attn.out_proj", "attn_out"),
                                      ("layer_norm1", "ln1"), ("layer_norm2", "ln2"), ("mlp.fc1", "ffn_up"),
                                      ("mlp.fc2", "ffn_down"))
                     for wb in ("weight", "bias")]


def export_mmproj(cfg, m, path):
    vc = cfg.vision_config
    w = gguf.GGUFWriter(path, "clip")
    write_mmproj_keys(w, "lockstep tiny gemma3v mmproj", gguf.LlamaFileType.ALL_F32, cfg.text_config.hidden_size,
                      vc.image_size, vc.patch_size, vc.hidden_size, vc.intermediate_size, vc.num_hidden_layers,
                      vc.num_attention_heads, vc.layer_norm_eps, MM_TOKENS)

    sd = {k.replace("model.", "", 1): v for k, v in m.named_parameters() if not k.startswith("model.language_model.")}
    vt = "vision_tower."
    put = lambda name, t: w.add_tensor(name, f32(t))
    put("v.patch_embd.weight", sd[vt + "embeddings.patch_embedding.weight"])  # torch [48,3,8,8] -> ne (8,8,3,48)
    put("v.patch_embd.bias", sd[vt + "embeddings.patch_embedding.bias"])
    put("v.position_embd.weight", sd[vt + "embeddings.position_embedding.weight"])
    for i in range(vc.num_hidden_layers):
        for dst, src in VIT_LAYER_TENSORS:
            put(f"v.blk.{i}.{dst}", sd[f"{vt}encoder.layers.{i}.{src}"])
    put("v.post_ln.weight", sd[vt + "post_layernorm.weight"])
    put("v.post_ln.bias", sd[vt + "post_layernorm.bias"])
    put("mm.input_projection.weight", sd["multi_modal_projector.mm_input_projection_weight"])  # [48,64] as is
    put("mm.soft_emb_norm.weight", sd["multi_modal_projector.mm_soft_emb_norm.weight"] + 1)
    finish_gguf(w)


# ----------------------------------------------------------------------------------------------
# test images


def make_images(vdir):
    """The synthetic test images (deterministic numpy draws); returns [(name, file name)]."""
    rng = np.random.default_rng(SEED)
    out = []

    def noise(shape, s):
        return rng.normal(0.0, s, shape)

    # 64x64 RGB: smooth gradients plus noise (already the model's size: PIL's resize returns a copy)
    y, x = np.mgrid[0:64, 0:64].astype(np.float64)
    a = np.stack([x * 4.0, y * 4.0, 128 + 90 * np.sin((x + 2 * y) / 9.0)], -1) + noise((64, 64, 3), 12)
    Image.fromarray(np.clip(np.rint(a), 0, 255).astype(np.uint8), "RGB").save(f"{vdir}/rgb64.png")
    out.append(("rgb64", "rgb64.png"))
    # 100x37 RGB: x is shrunk (antialiased: 2-3 source columns per output), y is stretched
    y, x = np.mgrid[0:37, 0:100].astype(np.float64)
    a = np.stack([255 * x / 99, 255 * ((x // 7 + y // 5) % 2), 128 + 100 * np.cos(y / 4.0)], -1) + noise((37, 100, 3), 10)
    Image.fromarray(np.clip(np.rint(a), 0, 255).astype(np.uint8), "RGB").save(f"{vdir}/rgb100x37.png")
    out.append(("rgb100x37", "rgb100x37.png"))
    # 23x31 grayscale ("L": width 23, height 31): both axes stretched
    y, x = np.mgrid[0:31, 0:23].astype(np.float64)
    a = 255 * np.hypot(x - 11, y - 15) / 19 + noise((31, 23), 15)
    Image.fromarray(np.clip(np.rint(a), 0, 255).astype(np.uint8), "L").save(f"{vdir}/gray23x31.png")
    out.append(("gray23x31", "gray23x31.png"))
    # 50x50 RGBA: alpha 255 on the left, a ramp in the middle, 0 in a checker on the right (colour behind it kept)
    y, x = np.mgrid[0:50, 0:50].astype(np.float64)
    rgb = np.stack([255 - 5 * x, 5 * y, 128 + 120 * np.sin(x * y / 150.0)], -1) + noise((50, 50, 3), 8)
    alpha = np.where(x < 17, 255, np.where(x < 34, (33 - x) * 15 + y, np.where((x // 4 + y // 4) % 2 == 0, 0, 200)))
    a = np.concatenate([rgb, alpha[..., None]], -1)
    Image.fromarray(np.clip(np.rint(a), 0, 255).astype(np.uint8), "RGBA").save(f"{vdir}/rgba50.png")
    out.append(("rgba50", "rgba50.png"))
    # 120x90 baseline JPEG, quality 90, 4:2:0 (libjpeg's default): both axes shrunk; not a whole number of MCUs
    y, x = np.mgrid[0:90, 0:120].astype(np.float64)
    a = np.stack([128 + 100 * np.sin(x / 7.0), 2 * y + 40 * ((x + y) % 23 < 4), 255 - 2 * x], -1) + noise((90, 120, 3), 6)
    Image.fromarray(np.clip(np.rint(a), 0, 255).astype(np.uint8), "RGB").save(
        f"{vdir}/photo120x90.jpg", quality=90, subsampling=2, optimize=False, progressive=False)
    out.append(("photo120x90", "photo120x90.jpg"))
    # 7x5 palette ("P", 8 colours, no transparency)
    pal = rng.integers(0, 256, (8, 3)).astype(np.uint8)
    im = Image.fromarray(rng.integers(0, 8, (5, 7)).astype(np.uint8), "P")
    im.putpalette(pal.reshape(-1).tolist())
    im.save(f"{vdir}/pal7x5.png")
    out.append(("pal7x5", "pal7x5.png"))
    # 9x6 palette with a transparent index (tRNS): HF composites index 0 onto white, stb_image keeps its colour
    pal = rng.integers(0, 256, (6, 3)).astype(np.uint8)
    im = Image.fromarray(rng.integers(0, 6, (6, 9)).astype(np.uint8), "P")
    im.putpalette(pal.reshape(-1).tolist())
    im.save(f"{vdir}/paltrns9x6.png", transparency=0)
    out.append(("paltrns9x6", "paltrns9x6.png"))
    return out


# ----------------------------------------------------------------------------------------------
# preprocessing: HF's, and a re-implementation of each step (Pillow's integer code paths) checked byte for byte


def image_processor():
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil
    return Gemma3ImageProcessorPil(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}, resample=Image.Resampling.BILINEAR,
                                   do_resize=True, do_rescale=True, rescale_factor=1 / 255, do_normalize=True,
                                   image_mean=IMAGE_MEAN, image_std=IMAGE_STD, do_convert_rgb=True, do_pan_and_scan=False)


def hf_rgb(img):
    """transformers' convert_to_rgb (image_transforms.py): what the processor resizes."""
    from transformers.image_transforms import convert_to_rgb
    return convert_to_rgb(img, return_numpy=True)


def composite_on_white_numpy(rgba):
    """Pillow's alpha_composite(white, image) (libImaging/AlphaComposite.c), integer math, for dst = 255."""
    s = rgba[..., :3].astype(np.int64)
    a = rgba[..., 3:4].astype(np.int64)
    outa255 = a * 255 + 255 * (255 - a)  # = 65025 for a white opaque background
    coef1 = (a * 255 * 255 * 128) // outa255
    coef2 = 255 * 128 - coef1
    tmp = s * coef1 + 255 * coef2 + (0x80 << 7)
    out = (((tmp >> 8) + tmp) >> 8) >> 7
    return np.where(a == 0, 255, out).astype(np.uint8)


def pil_bilinear_numpy(src, out_h, out_w):
    """Pillow's BILINEAR resize of an 8-bit RGB image (libImaging/Resample.c): separable, antialiased (the filter's
    support grows with the shrink factor), coefficients in 22-bit fixed point, a horizontal pass into uint8 rows,
    then a vertical pass; each output rounded (+2^21) and clamped to 0..255."""
    PREC = 22

    def coeffs(in_size, out_size):
        scale = in_size / out_size
        filterscale = max(scale, 1.0)
        support = 1.0 * filterscale
        rows = []
        for xx in range(out_size):
            center = (xx + 0.5) * scale
            ss = 1.0 / filterscale
            xmin = max(int(center - support + 0.5), 0)  # C casts truncate toward zero
            xmax = min(int(center + support + 0.5), in_size) - xmin
            k = []
            for x in range(xmax):
                t = abs((x + xmin - center + 0.5) * ss)
                k.append(1.0 - t if t < 1.0 else 0.0)
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
        y0 = vert[0][0]
        y1 = vert[-1][0] + len(vert[-1][1])
        tmp = np.empty((y1 - y0, out_w, 3), dtype=np.int64)
        for xx, (xmin, k) in enumerate(coeffs(in_w, out_w)):
            acc = (1 << (PREC - 1)) + np.einsum("yxc,x->yc", img[y0:y1, xmin:xmin + len(k)], k)
            tmp[:, xx] = clip8(acc)
        img = tmp
        vert = [(ymin - y0, k) for ymin, k in vert]
    if in_h != out_h:
        out = np.empty((out_h, img.shape[1], 3), dtype=np.int64)
        for yy, (ymin, k) in enumerate(vert):
            out[yy] = clip8((1 << (PREC - 1)) + np.einsum("yxc,y->xc", img[ymin:ymin + len(k)], k))
        img = out
    return img.astype(np.uint8)


def normalize_numpy(resized):
    """HF's rescale (float64 multiply by 1/255, then cast to float32) and normalize ((x - 0.5) / 0.5 in float32)."""
    x = (resized.astype(np.float64) * (1 / 255)).astype(np.float32)
    x = (x - np.float32(0.5)) / np.float32(0.5)
    return np.ascontiguousarray(x.transpose(2, 0, 1))


def preprocess(vdir, images):
    """Per image: (converted RGB source, resized uint8 RGB, pixel_values [3,64,64]); every step checked."""
    proc = image_processor()
    out = []
    for name, fname in images:
        img = Image.open(f"{vdir}/{fname}")
        pv = proc.preprocess([img], return_tensors="np")["pixel_values"]
        assert pv.shape == (1, 3, IMAGE_SIZE, IMAGE_SIZE) and pv.dtype == np.float32
        rgb = hf_rgb(img)
        resized = np.array(Image.fromarray(rgb, "RGB").resize((IMAGE_SIZE, IMAGE_SIZE), Image.Resampling.BILINEAR))
        assert np.array_equal(normalize_numpy(resized), pv[0]), name  # bit for bit
        assert np.array_equal(pil_bilinear_numpy(rgb, IMAGE_SIZE, IMAGE_SIZE), resized), name
        # the conversions, re-derived from the decoded image
        if img.mode == "RGBA" or "transparency" in img.info:
            assert np.array_equal(composite_on_white_numpy(np.array(img.convert("RGBA"))), rgb), name
            plain = np.array(img.convert("RGBA"))[..., :3]  # what dropping alpha (stb_image's 3 channels) gives
            print(f"  {name}: compositing on white changes {int((plain != rgb).any(-1).sum())} of "
                  f"{rgb.shape[0] * rgb.shape[1]} pixels against dropping alpha")
        elif img.mode == "L":
            assert np.array_equal(np.repeat(np.array(img)[..., None], 3, -1), rgb), name
        elif img.mode == "P":
            pal = np.array(img.getpalette(), dtype=np.uint8).reshape(-1, 3)
            assert np.array_equal(pal[np.array(img)], rgb), name
        else:
            assert img.mode == "RGB" and np.array_equal(np.array(img), rgb), name
        print(f"  {name}: {img.format} mode {img.mode} {img.size[0]}x{img.size[1]}; pixel_values in "
              f"[{pv.min():.4f}, {pv.max():.4f}]")
        out.append((rgb, resized, pv[0]))
    return out


def torchvision_check(vdir, images, pre):
    """transformers' default Gemma3ImageProcessor is the torchvision backend when torchvision is installed: how far
    its pixel_values are from the PIL backend's (reported only; the files hold the PIL backend's)."""
    try:
        from transformers.models.gemma3.image_processing_gemma3 import Gemma3ImageProcessor
    except ImportError:
        print("torchvision not installed: the torchvision backend (Gemma3ImageProcessor) was not compared")
        return
    proc = Gemma3ImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}, resample=Image.Resampling.BILINEAR,
                                rescale_factor=1 / 255, image_mean=IMAGE_MEAN, image_std=IMAGE_STD, do_convert_rgb=True,
                                do_pan_and_scan=False)
    for (name, fname), (_, resized, pv) in zip(images, pre):
        tv = proc.preprocess([Image.open(f"{vdir}/{fname}")], return_tensors="np")["pixel_values"][0]
        u8 = np.rint((tv.astype(np.float64) * 0.5 + 0.5) * 255).transpose(1, 2, 0)
        print(f"  torchvision backend, {name}: {int((u8 != resized).sum())} resized bytes differ (max "
              f"{np.abs(u8 - resized).max():.0f}); pixel_values max |diff| {np.abs(tv - pv).max():.2e}")


def write_pixels(path, rgb, resized, pv):
    with open(path, "wb") as f:
        f.write(struct.pack("<iii", 3, IMAGE_SIZE, IMAGE_SIZE))
        f.write(resized.astype(np.uint8).tobytes())
        f.write(pv.astype("<f4").tobytes())
        f.write(struct.pack("<ii", rgb.shape[0], rgb.shape[1]))
        f.write(rgb.astype(np.uint8).tobytes())


# ----------------------------------------------------------------------------------------------
# image embeddings, the vision tower's stages, and an independent numpy vision tower read from the mmproj GGUF


def image_features(m, pv):
    with torch.no_grad():
        out = m.get_image_features(torch.from_numpy(np.stack(pv)), return_dict=True)
    return out.pooler_output.float().numpy()  # [n_images, 16, 64]


def vision_stages(m, pv):
    """Named intermediate results of the vision tower and projector for one image (torch, float32)."""
    st = []
    hooks = []
    vt = m.model.vision_tower
    mp = m.model.multi_modal_projector

    def keep(name):
        def f(mod, args, out):
            st.append((name, (out[0] if isinstance(out, tuple) else out)[0].detach().float().numpy().copy()))
        return f
    hooks.append(vt.embeddings.register_forward_hook(keep("embd")))
    for i, layer in enumerate(vt.encoder.layers):
        hooks.append(layer.register_forward_hook(keep(f"layer{i}")))
    hooks.append(vt.post_layernorm.register_forward_hook(keep("post_ln")))
    hooks.append(mp.avg_pool.register_forward_hook(
        lambda mod, args, out: st.append(("pooled", out[0].flatten(1).T.detach().numpy().copy()))))
    hooks.append(mp.mm_soft_emb_norm.register_forward_hook(keep("soft_emb_norm")))
    with torch.no_grad():
        proj = m.get_image_features(torch.from_numpy(pv[None]), return_dict=True).pooler_output[0].numpy()
    for h in hooks:
        h.remove()
    st.append(("proj", proj.copy()))
    return st


def write_stages(path, stages):
    with open(path, "wb") as f:
        f.write(struct.pack("<i", len(stages)))
        for name, a in stages:
            b = name.encode()
            f.write(struct.pack("<i", len(b)) + b)
            f.write(struct.pack("<ii", *a.shape))
            f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())


def gguf_tensors(path):
    r = gguf.GGUFReader(path)
    t = {x.name: np.array(x.data, dtype=np.float64) for x in r.tensors}
    kv = {}
    for k, f in r.fields.items():
        if k.startswith("tokenizer."):
            continue
        kv[k] = f.contents()
    return kv, t, r


def layer_norm_np(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def rms_norm_np(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def gelu_tanh_np(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def softmax_np(s):
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def vision_numpy(mmproj_path, pv):
    """The vision tower and Gemma 3 projector from the mmproj GGUF alone (float64), as clip.cpp runs it."""
    kv, t, _ = gguf_tensors(mmproj_path)
    P = int(kv["clip.vision.patch_size"])
    S = int(kv["clip.vision.image_size"])
    E = int(kv["clip.vision.embedding_length"])
    nh = int(kv["clip.vision.attention.head_count"])
    eps = float(kv["clip.vision.attention.layer_norm_epsilon"])
    merge = int(kv.get("clip.vision.projector.scale_factor", 4))
    n = S // P
    W = t["v.patch_embd.weight"]  # numpy [48, 3, 8, 8] (ne (8, 8, 3, 48))
    # patch (py, px) = pixels [:, py*P:(py+1)*P, px*P:(px+1)*P]; patch index py * n + px
    patches = pv.astype(np.float64).reshape(3, n, P, n, P).transpose(1, 3, 0, 2, 4).reshape(n * n, 3 * P * P)
    x = patches @ W.reshape(E, -1).T + t["v.patch_embd.bias"] + t["v.position_embd.weight"]
    st = [("embd", x.copy())]
    hd = E // nh
    for i in range(int(kv["clip.vision.block_count"])):
        b = f"v.blk.{i}."
        h = layer_norm_np(x, t[b + "ln1.weight"], t[b + "ln1.bias"], eps)
        q = (h @ t[b + "attn_q.weight"].T + t[b + "attn_q.bias"]).reshape(-1, nh, hd).transpose(1, 0, 2)
        k = (h @ t[b + "attn_k.weight"].T + t[b + "attn_k.bias"]).reshape(-1, nh, hd).transpose(1, 0, 2)
        v = (h @ t[b + "attn_v.weight"].T + t[b + "attn_v.bias"]).reshape(-1, nh, hd).transpose(1, 0, 2)
        o = (softmax_np(q @ k.transpose(0, 2, 1) / math.sqrt(hd)) @ v).transpose(1, 0, 2).reshape(-1, E)
        x = x + o @ t[b + "attn_out.weight"].T + t[b + "attn_out.bias"]
        h = layer_norm_np(x, t[b + "ln2.weight"], t[b + "ln2.bias"], eps)
        h = gelu_tanh_np(h @ t[b + "ffn_up.weight"].T + t[b + "ffn_up.bias"])
        x = x + h @ t[b + "ffn_down.weight"].T + t[b + "ffn_down.bias"]
        st.append((f"layer{i}", x.copy()))
    x = layer_norm_np(x, t["v.post_ln.weight"], t["v.post_ln.bias"], eps)
    st.append(("post_ln", x.copy()))
    k = n // merge
    x = x.reshape(k, merge, k, merge, E).mean(axis=(1, 3)).reshape(k * k, E)  # token ty * k + tx
    st.append(("pooled", x.copy()))
    x = rms_norm_np(x, t["mm.soft_emb_norm.weight"], eps)
    st.append(("soft_emb_norm", x.copy()))
    x = x @ t["mm.input_projection.weight"]  # numpy [48, 64]: x @ W
    st.append(("proj", x.copy()))
    return st


# ----------------------------------------------------------------------------------------------
# the prompt, its logits, and an independent numpy Gemma 3 forward read from the text GGUF


def prompt_inputs():
    toks = vocab()[0]
    ids = np.array(spm_encode(PROMPT), dtype=np.int64)
    tti = (ids == toks.index("<image_soft_token>")).astype(np.int64)  # the processor's token_type_ids
    return ids, tti


def hf_logits(m, ids, tti, pv, bidirectional=True, image_scale=1.0):
    with torch.no_grad():
        if image_scale == 1.0:
            out = m(input_ids=torch.from_numpy(ids[None]), pixel_values=torch.from_numpy(pv[None]),
                    token_type_ids=torch.from_numpy(tti[None]) if bidirectional else None)
        else:  # the image rows times image_scale (a runtime that scaled them like text embeddings)
            feats = m.get_image_features(torch.from_numpy(pv[None]), return_dict=True).pooler_output * image_scale
            from transformers.modeling_outputs import BaseModelOutputWithPooling
            enc = {"image": BaseModelOutputWithPooling(pooler_output=feats)}
            out = m(input_ids=torch.from_numpy(ids[None]), mm_encoder_outputs=enc,
                    token_type_ids=torch.from_numpy(tti[None]) if bidirectional else None)
    return out.logits[0].float().numpy()


def hf_chunked_logits(m, ids, tti, pv):
    """HF's own cached path as a runtime would run it: the text before the image and the image block in one call
    (bidirectional image), then the rest one token at a time through the cache."""
    end = int(np.nonzero(tti)[0][-1]) + 1
    with torch.no_grad():
        out = m(input_ids=torch.from_numpy(ids[None, :end]), pixel_values=torch.from_numpy(pv[None]),
                token_type_ids=torch.from_numpy(tti[None, :end]), use_cache=True)
        rows = [out.logits[0]]
        cache = out.cache
        for t in range(end, len(ids)):
            out = m(input_ids=torch.from_numpy(ids[None, t:t + 1]), cache=cache, use_cache=True)
            cache = out.cache
            rows.append(out.logits[0])
    return torch.cat(rows).float().numpy()


def rope_neox_np(x, pos, base):
    d = x.shape[-1]
    inv = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    ang = pos[:, None] * inv[None]  # [T, d/2]
    c, s = np.cos(ang)[:, None], np.sin(ang)[:, None]
    x1, x2 = x[..., :d // 2], x[..., d // 2:]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)


def gemma3_numpy_logits(path, ids, image_rows, bidirectional=True):
    """Gemma 3 from the text GGUF alone (float64), with the image embeddings in place of the image tokens' rows."""
    kv, t, _ = gguf_tensors(path)
    A = "gemma3."
    E = int(kv[A + "embedding_length"])
    L = int(kv[A + "block_count"])
    nh, nkv = int(kv[A + "attention.head_count"]), int(kv[A + "attention.head_count_kv"])
    hd = int(kv[A + "attention.key_length"])
    eps = float(kv[A + "attention.layer_norm_rms_epsilon"])
    win = int(kv[A + "attention.sliding_window"])
    base, base_swa = float(kv[A + "rope.freq_base"]), float(kv[A + "rope.freq_base_swa"])
    img_id = vocab()[0].index("<image_soft_token>")
    T = len(ids)
    emb = t["token_embd.weight"]
    x = emb[ids] * math.sqrt(E)
    is_img = ids == img_id
    x[is_img] = image_rows  # unscaled
    pos = np.arange(T, dtype=np.float64)
    q_i, k_i = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
    # one image block here: image tokens see each other both ways
    same_img = is_img[:, None] & is_img[None, :] if bidirectional else np.zeros((T, T), bool)
    allow_full = (k_i <= q_i) | same_img
    allow_swa = allow_full & (q_i - k_i < win)
    for il in range(L):
        b = f"blk.{il}."
        local = il % 6 < 5
        h = rms_norm_np(x, t[b + "attn_norm.weight"], eps)
        q = rms_norm_np((h @ t[b + "attn_q.weight"].T).reshape(T, nh, hd), t[b + "attn_q_norm.weight"], eps)
        k = rms_norm_np((h @ t[b + "attn_k.weight"].T).reshape(T, nkv, hd), t[b + "attn_k_norm.weight"], eps)
        v = (h @ t[b + "attn_v.weight"].T).reshape(T, nkv, hd)
        q = rope_neox_np(q, pos, base_swa if local else base)
        k = rope_neox_np(k, pos, base_swa if local else base)
        allow = allow_swa if local else allow_full
        o = np.empty((T, nh, hd))
        for hh in range(nh):
            s = q[:, hh] @ k[:, hh // (nh // nkv)].T / math.sqrt(hd)
            s = np.where(allow, s, -np.inf)
            o[:, hh] = softmax_np(s) @ v[:, hh // (nh // nkv)]
        x = x + rms_norm_np(o.reshape(T, nh * hd) @ t[b + "attn_output.weight"].T, t[b + "post_attention_norm.weight"], eps)
        h = rms_norm_np(x, t[b + "ffn_norm.weight"], eps)
        f = (gelu_tanh_np(h @ t[b + "ffn_gate.weight"].T) * (h @ t[b + "ffn_up.weight"].T)) @ t[b + "ffn_down.weight"].T
        x = x + rms_norm_np(f, t[b + "post_ffw_norm.weight"], eps)
    return rms_norm_np(x, t["output_norm.weight"], eps) @ emb.T


def write_golden_file(path, ids, logits):
    with open(path, "wb") as f:
        f.write(struct.pack("<ii", len(ids), logits.shape[1]))
        f.write(ids.astype("<i4").tobytes())
        f.write(logits.astype("<f4").tobytes())


# ----------------------------------------------------------------------------------------------
# diagnostics


def describe(m, pv, ids, tti):
    """Activation scales of every layer (none near zero or saturated) on image 0's prompt."""
    rows = []
    hooks = []

    def rms(name):
        def f(mod, args, out):
            o = out[0] if isinstance(out, tuple) else out
            rows.append((name, float(o.float().pow(2).mean().sqrt())))
        return f
    vt = m.model.vision_tower
    hooks.append(vt.embeddings.register_forward_hook(rms("vit embd")))
    for i, l in enumerate(vt.encoder.layers):
        hooks.append(l.self_attn.register_forward_hook(rms(f"vit {i} attn out")))
        hooks.append(l.mlp.register_forward_hook(rms(f"vit {i} mlp out")))
        hooks.append(l.register_forward_hook(rms(f"vit {i} out")))
    hooks.append(m.model.multi_modal_projector.register_forward_hook(rms("projector out (image rows)")))
    lm = m.model.language_model
    hooks.append(lm.embed_tokens.register_forward_hook(rms("text embd (x 8)")))
    for i, l in enumerate(lm.layers):
        hooks.append(l.register_forward_hook(rms(f"text {i} ({cfg_layer_type(m, i)}) out")))
    with torch.no_grad():
        logits = m(input_ids=torch.from_numpy(ids[None]), pixel_values=torch.from_numpy(pv[None]),
                   token_type_ids=torch.from_numpy(tti[None])).logits[0]
    for h in hooks:
        h.remove()
    print("activation rms:", ", ".join(f"{n} {v:.3f}" for n, v in rows))
    # vision attention: how peaked (entropy of the probabilities, in nats; uniform over 64 = 4.16)
    with torch.no_grad():
        out = vt(pixel_values=torch.from_numpy(pv[None]), output_attentions=True, return_dict=True)
    ent = [float(-(a * (a + 1e-30).log()).sum(-1).mean()) for a in out.attentions]
    print("vision attention entropy per layer (nats, uniform 4.16):", ", ".join(f"{e:.2f}" for e in ent))
    return logits.numpy()


def cfg_layer_type(m, i):
    return "local" if m.config.text_config.layer_types[i] == "sliding_attention" else "global"


def margin_stats(logits):
    top2 = np.sort(logits, axis=1)[:, -2:]
    return float((top2[:, 1] - top2[:, 0]).min()), float(np.abs(logits).max())


# ----------------------------------------------------------------------------------------------
# bench: Gemma-3-4B shapes (the SigLIP-400M tower at 896 x 896 and a 2-layer gemma3 text model of hidden 2560),
# random F16, written straight from numpy (no HF model, no golden)


def bench_rng_helpers():
    rng = np.random.default_rng(SEED)

    def mat(shape, std, dtype=np.float16):
        """numpy array of `shape` (the last axis contiguous) with N(0, std^2) entries, drawn in slabs."""
        a = np.empty(shape, dtype=dtype)
        flat = a.reshape(shape[0], -1)
        step = max(1, (1 << 24) // flat.shape[1])
        for r in range(0, flat.shape[0], step):
            n = min(step, flat.shape[0] - r)
            flat[r:r + n] = (rng.standard_normal((n, flat.shape[1]), dtype=np.float32) * std).astype(dtype)
        return a

    def vec(n, mean, std):
        return (mean + std * rng.standard_normal(n, dtype=np.float32)).astype(np.float32)

    return mat, vec


def export_text_bench(path):
    V, E, L, NH, NKV, HD, FF = VOCAB, 2560, 2, 8, 4, 256, 10240
    mat, vec = bench_rng_helpers()
    w = gguf.GGUFWriter(path, "gemma3")
    write_text_keys(w, "lockstep bench gemma3v 4B-shaped 2-layer random", L, 8192, E, FF, NH, NKV, 1000000.0,
                    10000.0, 1e-6, HD, gguf.LlamaFileType.MOSTLY_F16, 1024)
    w.add_tensor("token_embd.weight", mat((V, E), E ** -0.5))  # x sqrt(E) in the model: rows of rms ~1; tied
    shapes = {"attn_q.weight": (NH * HD, E), "attn_k.weight": (NKV * HD, E), "attn_v.weight": (NKV * HD, E),
              "attn_output.weight": (E, NH * HD), "ffn_gate.weight": (FF, E), "ffn_up.weight": (FF, E),
              "ffn_down.weight": (E, FF)}
    for i in range(L):
        for dst, _, plus_one in TEXT_LAYER_TENSORS:
            if plus_one:  # a norm: the factor 1 + w, F32
                w.add_tensor(f"blk.{i}.{dst}", vec(HD if dst in ("attn_q_norm.weight", "attn_k_norm.weight") else E,
                                                   1.0, 0.1))
            else:
                rows, cols = shapes[dst]
                w.add_tensor(f"blk.{i}.{dst}", mat((rows, cols), cols ** -0.5))
    w.add_tensor("output_norm.weight", vec(E, 1.0, 0.1))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()


def export_mmproj_bench(path):
    S, P, E, FF, L, NH, PROJ = 896, 14, 1152, 4304, 27, 16, 2560
    N = (S // P) ** 2
    mat, vec = bench_rng_helpers()
    w = gguf.GGUFWriter(path, "clip")
    write_mmproj_keys(w, "lockstep bench gemma3v 4B-shaped mmproj random", gguf.LlamaFileType.MOSTLY_F16, PROJ, S, P,
                      E, FF, L, NH, 1e-6, 256)
    # the converter's types for outtype f16 (Gemma3VisionModel.tensor_force_quant: HF names with ".embeddings." F32,
    # input_projection F16; base.py: 1-D tensors F32, other matrices the outtype)
    w.add_tensor("v.patch_embd.weight", mat((E, 3, P, P), 2.0 / math.sqrt(3 * P * P), np.float32))  # ne (14,14,3,E)
    w.add_tensor("v.patch_embd.bias", vec(E, 0.0, 0.1))
    w.add_tensor("v.position_embd.weight", mat((N, E), 0.5, np.float32))  # ne (E, 4096)
    shapes = {"attn_q": (E, E), "attn_k": (E, E), "attn_v": (E, E), "attn_out": (E, E), "ffn_up": (FF, E),
              "ffn_down": (E, FF)}
    for i in range(L):
        for dst, _ in VIT_LAYER_TENSORS:
            kind, wb = dst.split(".")
            if kind in ("ln1", "ln2"):
                w.add_tensor(f"v.blk.{i}.{dst}", vec(E, 1.0 if wb == "weight" else 0.0, 0.1))
            elif wb == "bias":
                w.add_tensor(f"v.blk.{i}.{dst}", vec(shapes[kind][0], 0.0, 0.1))
            else:
                w.add_tensor(f"v.blk.{i}.{dst}", mat(shapes[kind], shapes[kind][1] ** -0.5))
    w.add_tensor("v.post_ln.weight", vec(E, 1.0, 0.1))
    w.add_tensor("v.post_ln.bias", vec(E, 0.0, 0.1))
    w.add_tensor("mm.input_projection.weight", mat((E, PROJ), E ** -0.5))  # HF's [vision, text] as is: ne (2560, 1152)
    w.add_tensor("mm.soft_emb_norm.weight", vec(E, 1.0, 0.1))  # the factor 1 + w
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()


def main():
    if len(sys.argv) not in (2, 3) or (len(sys.argv) == 3 and sys.argv[2] != "bench"):
        raise SystemExit("usage: " + __doc__.split("Usage: ", 1)[1].split("\n", 1)[0])
    out = sys.argv[1]
    if len(sys.argv) == 3:
        os.makedirs(out, exist_ok=True)
        export_mmproj_bench(f"{out}/gemma3v_bench_mmproj.gguf")
        export_text_bench(f"{out}/gemma3v_bench.gguf")
        return
    vdir = f"{out}/vision"
    os.makedirs(vdir, exist_ok=True)
    torch.set_num_threads(1)
    cfg, m = make_model()
    text_path, mmproj_path = f"{out}/gemma3v_tiny.gguf", f"{out}/gemma3v_tiny_mmproj.gguf"
    export_text(cfg, m, text_path)
    export_mmproj(cfg, m, mmproj_path)

    images = make_images(vdir)
    print("images:")
    pre = preprocess(vdir, images)
    for (name, _), (rgb, resized, pv) in zip(images, pre):
        write_pixels(f"{vdir}/{name}.pixels", rgb, resized, pv)
    pvs = [pv for _, _, pv in pre]
    torchvision_check(vdir, images, pre)

    feats = image_features(m, pvs)
    with open(f"{out}/gemma3v_tiny.embd", "wb") as f:
        f.write(struct.pack("<iii", *feats.shape))
        f.write(feats.astype("<f4").tobytes())
    stages = vision_stages(m, pvs[0])
    assert np.array_equal(stages[-1][1], feats[0])
    write_stages(f"{out}/gemma3v_tiny.stages", stages)

    # second oracle: the vision tower from the GGUF in float64
    worst = 0.0
    for i, pv in enumerate(pvs):
        st = vision_numpy(mmproj_path, pv)
        if i == 0:
            for (na, a), (nb, b) in zip(stages, st):
                assert na == nb and a.shape == b.shape, (na, nb)
                print(f"  numpy vs torch {na:14s} {a.shape}: max |diff| {np.abs(a - b).max():.2e}, rms {np.sqrt((b * b).mean()):.3f}")
        worst = max(worst, float(np.abs(st[-1][1] - feats[i]).max()))
    print(f"numpy vision tower (from the mmproj GGUF) vs torch image embeddings, all images: max |diff| {worst:.2e}")
    assert worst < 1e-5
    d = np.abs(feats[:, None] - feats[None]).max(-1).max(-1)
    print("smallest max |difference| between two images' embeddings:", float(d[~np.eye(len(feats), dtype=bool)].min()))

    ids, tti = prompt_inputs()
    toks = vocab()[0]
    print("prompt tokens:", " ".join(f"{i}:{toks[i]!r}" for i in ids))
    describe(m, pvs[0], ids, tti)
    for k in range(N_GOLDEN_IMAGES):
        logits = hf_logits(m, ids, tti, pvs[k])
        name = "gemma3v_tiny" if k == 0 else f"gemma3v_tiny_img{k}"
        write_golden_file(f"{out}/{name}.golden", ids, logits)
        mg, mx = margin_stats(logits)
        img_rows = feats[k]
        npl = gemma3_numpy_logits(text_path, ids, img_rows)
        print(f"{name}.golden (image {k}, {images[k][0]}): {len(ids)} tokens; smallest top-1 margin {mg:.4f}, "
              f"max |logit| {mx:.3f}")
        print(f"  numpy Gemma 3 (from the text GGUF, bidirectional image block) vs golden: max |diff| "
              f"{np.abs(npl - logits).max():.2e}")
        print(f"  HF chunked (prefix + image in one call, then one token at a time) vs golden: max |diff| "
              f"{np.abs(hf_chunked_logits(m, ids, tti, pvs[k]) - logits).max():.2e}")
        causal = hf_logits(m, ids, tti, pvs[k], bidirectional=False)
        print(f"  causal image attention (no token_type_ids) instead: max |diff| {np.abs(causal - logits).max():.3f}"
              f" (numpy causal vs HF causal {np.abs(gemma3_numpy_logits(text_path, ids, img_rows, False) - causal).max():.2e})")
        scaled = hf_logits(m, ids, tti, pvs[k], image_scale=math.sqrt(N_EMBD_TEXT))
        print(f"  image rows scaled by sqrt(64) like text: max |diff| {np.abs(scaled - logits).max():.3f}")
        other = hf_logits(m, ids, tti, pvs[1 - k])
        print(f"  the other image's pixels: max |diff| {np.abs(other - logits).max():.3f}; argmax differs at "
              f"{int((other.argmax(1) != logits.argmax(1)).sum())} of {len(ids)} positions")
    total = 0
    for root, _, files in os.walk(out):
        for fn in files:
            p = os.path.join(root, fn)
            if fn.startswith("gemma3v_tiny") or root == vdir:
                total += os.path.getsize(p)
    print(f"total size of the files written: {total} bytes")


if __name__ == "__main__":
    main()
