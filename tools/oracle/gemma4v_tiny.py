#!/usr/bin/env python3
r"""DOCSTRING PLACEHOLDER

Usage: tools/oracle/gemma4v_tiny.py OUT_DIR
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

# text model (Gemma4TextConfig): an E2B-like layout, small
VOCAB = 320
N_EMBD = 32
N_LAYER = 4
LAYER_TYPES = ["sliding_attention", "full_attention"] * 2
N_HEAD = 2
N_HEAD_KV = 1
HEAD_SWA = 16             # head_dim (sliding layers)
HEAD_FULL = 32            # global_head_dim (full-attention layers)
N_FF = 64
N_PLE = 8                 # hidden_size_per_layer_input
N_KV_SHARED = 1           # the last layer reads layer 1's K/V
WINDOW = 8
N_CTX = 256
SOFTCAP = 30.0
RMS_EPS = 1e-6
ROPE = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0}}
Q_K_NORM = 0.5          # text q_norm / k_norm weights around this (softmax not saturated)
BIDIR = "vision"          # text_config.use_bidirectional_attention (the 26B / 31B value; E2B / E4B: None)

# vision tower (Gemma4VisionConfig) and embedder
V_EMBD = 32
V_FF = 64
V_LAYER = 2
V_HEAD = 2
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


def make_config():
    from transformers import Gemma4Config, Gemma4TextConfig, Gemma4VisionConfig
    tc = Gemma4TextConfig(vocab_size=VOCAB, hidden_size=N_EMBD, num_hidden_layers=N_LAYER, layer_types=LAYER_TYPES,
                          num_attention_heads=N_HEAD, num_key_value_heads=N_HEAD_KV, head_dim=HEAD_SWA,
                          global_head_dim=HEAD_FULL, intermediate_size=N_FF, hidden_size_per_layer_input=N_PLE,
                          vocab_size_per_layer_input=VOCAB, num_kv_shared_layers=N_KV_SHARED,
                          use_double_wide_mlp=True, sliding_window=WINDOW, max_position_embeddings=N_CTX,
                          rms_norm_eps=RMS_EPS, final_logit_softcapping=SOFTCAP, rope_parameters=ROPE,
                          tie_word_embeddings=True, use_bidirectional_attention=BIDIR,
                          pad_token_id=0, bos_token_id=2, eos_token_id=1)
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


def make_model(calib):
    from transformers import Gemma4ForConditionalGeneration
    cfg = make_config()
    torch.manual_seed(SEED)
    m = Gemma4ForConditionalGeneration(cfg).float().eval()
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in m.named_parameters():
            init_weight(name, p, g)
        # logits up to ~15, so that the final soft-cap (30) bends them (gemma4_tiny.py)
        m.model.language_model.norm.weight.mul_(4.0)
        for name, b in m.named_buffers():
            if name.endswith("layer_scalar"):
                b.copy_(0.6 + 0.8 * torch.rand(b.shape, generator=g))
    calibrate(m, calib)
    tc = m.config.text_config
    assert tc.kv_sharing_modes == [None, "store", "store", "reuse"], tc.kv_sharing_modes
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


def export_text(cfg, m, path):
    gemma4_tiny.export(cfg.text_config, text_view(cfg, m), path, name="lockstep tiny gemma4v", tail_tokens=TAIL)


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
    w.add_clip_vision_projector_type(gguf.VisionProjectorType.GEMMA4V)  # clip.vision.projector_type (mixed-modality key)
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


def check_text(cfg, m, path):
    """Every tensor of the text GGUF against the HF language model (names as gemma4_tiny.export writes them)."""
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
    eq("per_layer_token_embd.weight", sd["embed_tokens_per_layer.weight"])
    eq("per_layer_model_proj.weight", sd["per_layer_model_projection.weight"])
    eq("per_layer_proj_norm.weight", sd["per_layer_projection_norm.weight"])
    nrot = int(ROPE["full_attention"]["partial_rotary_factor"] * HEAD_FULL / 2)
    eq("rope_freqs.weight", np.array([1.0] * nrot + [1e30] * (HEAD_FULL // 2 - nrot)))
    for il in range(N_LAYER):
        p, b = f"layers.{il}.", f"blk.{il}."
        pairs = [("attn_norm", "input_layernorm"), ("attn_q", "self_attn.q_proj"), ("attn_q_norm", "self_attn.q_norm"),
                 ("attn_output", "self_attn.o_proj"), ("post_attention_norm", "post_attention_layernorm"),
                 ("ffn_norm", "pre_feedforward_layernorm"), ("ffn_gate", "mlp.gate_proj"), ("ffn_up", "mlp.up_proj"),
                 ("ffn_down", "mlp.down_proj"), ("post_ffw_norm", "post_feedforward_layernorm"),
                 ("inp_gate", "per_layer_input_gate"), ("proj", "per_layer_projection"),
                 ("post_norm", "post_per_layer_input_norm")]
        if il < N_LAYER - N_KV_SHARED:
            pairs += [("attn_k", "self_attn.k_proj"), ("attn_v", "self_attn.v_proj"), ("attn_k_norm", "self_attn.k_norm")]
        else:
            assert b + "attn_k.weight" not in t and b + "attn_v.weight" not in t
        for dst, src in pairs:
            eq(f"{b}{dst}.weight", sd[p + src + ".weight"])
        eq(b + "layer_output_scale.weight", sd[p + "layer_scalar"])
    assert n == len(t), (n, len(t))
    f = r.fields
    assert f["tokenizer.ggml.tokens"].contents() == vocab()[0]
    assert f["tokenizer.ggml.token_type"].contents() == vocab()[1]
    assert f["gemma4.attention.sliding_window_pattern"].contents() == [lt == "sliding_attention" for lt in LAYER_TYPES]
    assert f["gemma4.feed_forward_length"].contents() == [N_FF] * (N_LAYER - N_KV_SHARED) + [2 * N_FF] * N_KV_SHARED
    return [k for k in r.fields if not k.startswith("GGUF.")], r


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
              f"{ph}x{pw} = {n} (+ {MAX_PATCHES - n} padding), soft tokens {ph // POOL}x{pw // POOL} = {n // POOL ** 2}")
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


def image_blocks(ids):
    """block id per token: k for the tokens of the k-th run of <|image|> tokens, -1 elsewhere."""
    img = ids == tok_id(IMG)
    start = img & ~np.concatenate([[False], img[:-1]])
    blk = np.cumsum(start) - 1
    return np.where(img, blk, -1)


def attention_masks(ids, mode="hf"):
    """{layer type: bool [T, T] (query, key) visible}. mode "hf": HF with use_bidirectional_attention "vision"
    (create_masks_for_vision_model): full layers causal (k <= q); sliding layers (k <= q or q and k in the same image
    block) and k > q - W. "causal": both plain causal (sliding also k > q - W). "all": llama.cpp's non-causal image
    ubatch: the same-block exception in both layer types."""
    T = len(ids)
    q = np.arange(T)[:, None]
    k = np.arange(T)[None, :]
    blk = image_blocks(ids)
    same = (blk[:, None] == blk[None, :]) & (blk[:, None] >= 0)
    causal = k <= q
    bidi = causal | same
    win = k > q - WINDOW
    if mode == "hf":
        return {"full_attention": causal, "sliding_attention": bidi & win}
    if mode == "causal":
        return {"full_attention": causal, "sliding_attention": causal & win}
    assert mode == "all"
    return {"full_attention": bidi, "sliding_attention": bidi & win}


def gemma4_numpy_logits(path, ids, image_rows, mode="hf"):
    """Gemma 4 from the text GGUF alone (float64), as llama.cpp's graph computes it (src/models/gemma4.cpp), with
    image_rows in place of the <|image|> embeddings and attention_masks(ids, mode)."""
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
    npl = int(kv[A + "embedding_length_per_layer_input"])
    cap = float(kv[A + "final_logit_softcapping"])
    base_full, base_swa = float(kv[A + "rope.freq_base"]), float(kv[A + "rope.freq_base_swa"])
    T = len(ids)
    img = ids == tok_id(IMG)
    x = t["token_embd.weight"][ids] * math.sqrt(E)
    x[img] = image_rows
    # per-layer inputs: token identity (row 0, the padding token, at image positions) and the projection
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
            k = rms_norm_np((h @ t[b + "attn_k.weight"].T).reshape(T, nkv[il], hd), t[b + "attn_k_norm.weight"], eps)
            v = (h @ t[b + "attn_v.weight"].T).reshape(T, nkv[il], hd)
            kv_of[lt] = (rope(k, hd, base, factors), rms_norm_np(v, 1.0, eps))
        k, v = kv_of[lt]
        o = np.empty((T, nh, hd))
        for hh in range(nh):
            kh = hh // (nh // k.shape[1])
            s = np.where(masks[lt], q[:, hh] @ k[:, kh].T, -np.inf)  # scale 1 (f_attention_scale)
            o[:, hh] = softmax_np(s) @ v[:, kh]
        x = x + rms_norm_np(o.reshape(T, nh * hd) @ t[b + "attn_output.weight"].T, t[b + "post_attention_norm.weight"], eps)
        h = rms_norm_np(x, t[b + "ffn_norm.weight"], eps)
        f = (gelu_tanh_np(h @ t[b + "ffn_gate.weight"].T) * (h @ t[b + "ffn_up.weight"].T)) @ t[b + "ffn_down.weight"].T
        x = x + rms_norm_np(f, t[b + "post_ffw_norm.weight"], eps)
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

    cfg, m = make_model([(pre[n]["pv"], pre[n]["pos"]) for n in GOLDEN_IMAGES])
    text_path, mmproj_path = f"{out}/gemma4v_tiny.gguf", f"{out}/gemma4v_tiny_mmproj.gguf"
    export_text(cfg, m, text_path)
    export_mmproj(cfg, m, mmproj_path)
    keys, _ = check_mmproj(m, mmproj_path)
    print("mmproj keys:", ", ".join(keys))
    tkeys, _ = check_text(cfg, m, text_path)
    print("text keys:", ", ".join(tkeys))
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
        feats[name] = f
        worst = max(worst, float(np.abs(vision_numpy(mmproj_path, p["resized"]) - f).max()))
    print(f"numpy vision tower (from the mmproj GGUF and the resized bytes) vs HF, all 7 images: max |diff| {worst:.2e}")
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

    # the prompt and its logits
    proc = hf_processor()
    print("processor:", type(proc).__mro__[1].__name__, "image processor:", type(proc.image_processor).__name__,
          "tokenizer:", type(proc.tokenizer).__name__)
    imgs = [Image.open(f"{vdir}/{dict(IMAGES)[n]}") for n in GOLDEN_IMAGES]
    inp = hf_inputs(proc, imgs, PROMPT.replace(MEDIA, IMG))
    ids = inp["input_ids"][0].numpy()
    ntok = [pre[n]["n_tok"] for n in GOLDEN_IMAGES]
    assert ids.tolist() == gemma4_encode(expand_media(PROMPT, ntok)), "tokenizer / expansion mismatch"
    assert np.array_equal(inp["mm_token_type_ids"][0].numpy(), (ids == tok_id(IMG)).astype(np.int64))
    for i, n in enumerate(GOLDEN_IMAGES):
        assert np.array_equal(inp["pixel_values"][i].numpy(), pre[n]["pv"])
        assert np.array_equal(inp["image_position_ids"][i].numpy(), pre[n]["pos"])
    logits, seen = hf_forward(m, inp)
    T = len(ids)
    assert np.array_equal(seen["position_ids"].numpy(), np.arange(T)[None]), "positions"
    want = attention_masks(ids, "hf")
    for lt, mk in seen["attention_mask"].items():
        got = mk[0, 0].numpy()
        got = (got == 0) if got.dtype != np.bool_ else got
        assert np.array_equal(got, want[lt]), lt
    print("the attention masks HF built equal attention_masks(ids, 'hf'); positions 0..T-1")
    write_golden_file(f"{out}/gemma4v_tiny.golden", ids.astype(np.int32), logits)
    with open(f"{out}/gemma4v_tiny.prompt", "w", encoding="utf-8", newline="") as fh:
        fh.write(PROMPT)
    describe(m, inp)
    blk = image_blocks(ids)
    print(f"gemma4v_tiny.golden: {T} tokens; image blocks at "
          + ", ".join(f"{int(np.nonzero(blk == b)[0][0])}..{int(np.nonzero(blk == b)[0][-1])}" for b in range(2)))
    print("  tokens:", " ".join(f"{i}:{toks[i]!r}" for i in ids if i != tok_id(IMG)),
          f"(+ {int((ids == tok_id(IMG)).sum())} <|image|>)")
    mg, mx = margin_stats(logits)
    print(f"  smallest top-1 margin {mg:.4f}, max |logit| {mx:.3f}")
    rows = np.concatenate([feats[n] for n in GOLDEN_IMAGES])
    npl = gemma4_numpy_logits(text_path, ids, rows, "hf")
    d = np.abs(npl - logits).max()
    print(f"  numpy gemma4 (from the text GGUF, the image rows from .embd, HF's mask) vs golden: max |diff| {d:.2e}")
    assert d < 1e-3 and (npl.argmax(1) != logits.argmax(1)).sum() == 0
    ch = hf_chunked_logits(m, inp)
    print(f"  HF cached (through the last <image|> in one call, then token at a time) vs golden: max |diff| "
          f"{np.abs(ch - logits).max():.2e}")
    lc, _ = hf_forward(m, inp, mm=False)
    nc = gemma4_numpy_logits(text_path, ids, rows, "causal")
    print(f"  causal image tokens (HF without mm_token_type_ids; E2B / E4B's use_bidirectional_attention None): "
          f"max |diff| from golden {np.abs(lc - logits).max():.3f}; numpy causal vs HF {np.abs(nc - lc).max():.2e}")
    assert np.abs(nc - lc).max() < 1e-4
    na = gemma4_numpy_logits(text_path, ids, rows, "all")
    print(f"  llama.cpp's mask (non-causal image ubatch: bidirectional in the full layers too): max |diff| from "
          f"golden {np.abs(na - logits).max():.3f} ({int((na.argmax(1) != logits.argmax(1)).sum())} argmax differ)")
    emb = m.model.language_model.embed_tokens.weight.detach().numpy()
    nt = gemma4_numpy_logits(text_path, ids, emb[ids[ids == tok_id(IMG)]] * math.sqrt(N_EMBD), "hf")
    print(f"  <|image|>'s own embedding instead of the image rows: max |diff| {np.abs(nt - logits).max():.3f}")
    ns = gemma4_numpy_logits(text_path, ids, rows * math.sqrt(N_EMBD), "hf")
    print(f"  image rows scaled by sqrt(n_embd) like text: max |diff| {np.abs(ns - logits).max():.3f}")

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
