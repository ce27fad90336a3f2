#!/usr/bin/env python3
r"""Tiny random-weight Qwen3-VL oracle with deepstack: a Qwen3VLForConditionalGeneration (dense text, arch qwen3vl)
and a Qwen3VLMoeForConditionalGeneration (MoE text, arch qwen3vlmoe) that share one vision tower, the GGUF files
llama.cpp's converter makes of them (two text models and one mmproj, projector qwen3vl_merger with deepstack
layers), the image rows llama.cpp's projector gives (the merger's output, then each deepstack merger's), and the
logits of a chat prompt with two images for both text models.

Built with `transformers` (5.24; float32, eager attention, random weights scaled for O(1) activations) and
exported with the tensor names, metadata keys and transforms of llama.cpp's converter (conversion/qwen3vl.py
Qwen3VLVisionModel, Qwen3VLTextModel, Qwen3VLMoeTextModel; conversion/qwen.py Qwen3Model, Qwen3MoeModel;
re-implemented here, not copied). The tokenizer, the test images' preprocessing and the prompt are
qwen35v_tiny.py's (the same processor settings: its .qwen35.pixels files hold this model's inputs too).

Usage: tools/oracle/qwen3vl_tiny.py OUT_DIR
       (/work/oracle-venv/bin/python tools/oracle/qwen3vl_tiny.py tests/data; needs torch, transformers, gguf,
       Pillow, regex; a few seconds). Reads OUT_DIR/vision/<image file> and writes:
         qwen3vl_tiny.gguf          the dense text model (qwen3vl)
         qwen3vl_tiny_moe.gguf      the MoE text model (qwen3vlmoe), the same widths
         qwen3vl_tiny_mmproj.gguf   the vision tower, its merger and two deepstack mergers (layers 0 and 2)
         qwen3vl_tiny.embd          the rows of rgb100x37 and photo120x90: int32 count, then per image int32
                                    n_tokens, width, merged grid rows, columns and n_tokens x width float32; a
                                    row is [merger | deepstack 0 | deepstack 1], 3 x 64 values
         qwen3vl_tiny.golden        tokens and logits of the two-image prompt, dense model (golden.py's layout)
         qwen3vl_tiny_moe.golden    the same for the MoE model
         qwen3vl_tiny.prompt        the prompt's text, <__media__> for each image

Deepstack as HF runs it (modeling_qwen3_vl.py): the outputs of vision layers deepstack_visual_indexes go through
Qwen3VLVisionPatchMerger(use_postshuffle_norm=True) (the block's 2 x 2 patches as one row, LayerNorm over it,
linear_fc1, exact GELU, linear_fc2); the text model adds merger k's rows to the image tokens' hidden states after
its decoder layer k. llama.cpp concatenates the rows after the main merger's and adds slice k + 1 of the input
row after layer k (src/models/qwen3vl.cpp), zeros for text tokens.

Checks: the mmproj's tensors equal the HF parameters they come from; the two models' towers give the same rows;
the golden logits (HF's full forward from pixels) equal, within 1e-4, HF's text model fed by hand the written
rows (their first 64 values as the embeddings, the rest as deepstack_visual_embeds) at qwen35v_tiny's M-RoPE
positions; the same without the deepstack rows shows how much they move the logits.
"""
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf  # noqa: E402

import qwen35v_tiny as q35  # noqa: E402
from vision_tiny import write_golden_file  # noqa: E402

SEED = 3131
N_EMBD, N_FF, N_LAYER, N_HEAD, N_HEAD_KV, HEAD_DIM = 64, 96, 3, 4, 2, 16
MROPE_SECTION = [3, 3, 2]  # 8 pairs = HEAD_DIM / 2, interleaved (Qwen3-VL)
ROPE_THETA = 10000.0
N_EXPERT, N_EXPERT_USED, N_FF_EXP = 4, 2, 32
V_DEPTH, DEEPSTACK = 3, [0, 2]
PRE = "qwen2"  # the converter's pre-tokenizer for Qwen3-VL's tokenizer


def make_model(moe, vision_from=None):
    if moe:
        from transformers import Qwen3VLMoeConfig as Cfg, Qwen3VLMoeForConditionalGeneration as Model
        from transformers.models.qwen3_vl_moe.configuration_qwen3_vl_moe import (Qwen3VLMoeTextConfig as TC,
                                                                                 Qwen3VLMoeVisionConfig as VC)
    else:
        from transformers import Qwen3VLConfig as Cfg, Qwen3VLForConditionalGeneration as Model
        from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLTextConfig as TC, Qwen3VLVisionConfig as VC
    text = dict(vocab_size=q35.VOCAB, hidden_size=N_EMBD, intermediate_size=N_FF, num_hidden_layers=N_LAYER,
                num_attention_heads=N_HEAD, num_key_value_heads=N_HEAD_KV, head_dim=HEAD_DIM, rms_norm_eps=1e-6,
                max_position_embeddings=4096, tie_word_embeddings=False,
                rope_parameters={"rope_type": "default", "rope_theta": ROPE_THETA, "mrope_section": list(MROPE_SECTION),
                                 "mrope_interleaved": True})
    if moe:
        text.update(num_experts=N_EXPERT, num_experts_per_tok=N_EXPERT_USED, moe_intermediate_size=N_FF_EXP,
                    decoder_sparse_step=1, mlp_only_layers=[])
    tc = TC(**text)
    vc = VC(depth=V_DEPTH, hidden_size=q35.V_EMBD, num_heads=q35.V_HEADS, intermediate_size=q35.V_FF,
            patch_size=q35.PATCH, temporal_patch_size=q35.T_PATCH, spatial_merge_size=q35.MERGE, out_hidden_size=N_EMBD,
            num_position_embeddings=q35.N_POS_EMBD, hidden_act=q35.V_ACT, in_channels=3,
            deepstack_visual_indexes=list(DEEPSTACK))
    cfg = Cfg(text_config=tc.to_dict(), vision_config=vc.to_dict(), image_token_id=q35.tok_id("<|image_pad|>"),
              video_token_id=q35.tok_id("<|video_pad|>"), vision_start_token_id=q35.tok_id("<|vision_start|>"),
              vision_end_token_id=q35.tok_id("<|vision_end|>"), tie_word_embeddings=False)
    cfg._attn_implementation = "eager"
    torch.manual_seed(SEED)
    m = Model(cfg).float().eval()
    g = torch.Generator().manual_seed(SEED + (7 if moe else 0))
    with torch.no_grad():
        for name, p in m.named_parameters():
            if ".visual." in name:
                if vision_from is not None:
                    p.copy_(dict(vision_from.named_parameters())[name])
                else:
                    q35.init_weight(name, p, g)
            elif name.endswith("experts.gate_up_proj") or name.endswith("experts.down_proj"):
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(p.shape[2]))
            elif p.dim() == 2:  # linear N(0, 1/fan_in); embeddings N(0, 1); the router a bit sharper
                fan_in = p.shape[1]
                scale = np.sqrt(fan_in) if "embed" in name else 3.0 if name.endswith("mlp.gate.weight") else 1.0
                p.copy_(torch.randn(p.shape, generator=g) / np.sqrt(fan_in) * scale)
            elif "norm" in name:  # Qwen3 RMSNorm multiplies by w
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            else:
                raise RuntimeError(f"no init rule for {name} {tuple(p.shape)}")
    return cfg, m


def f32(t):
    return t.detach().float().contiguous().numpy().astype(np.float32)


def export_text(cfg, m, path, moe):
    """Qwen3VLTextModel / Qwen3VLMoeTextModel (conversion/qwen3vl.py:249-300 over Qwen3Model / Qwen3MoeModel): the
    base TextModel keys, rope.dimension_sections, n_deepstack_layers, then the tokenizer (qwen35v_tiny's)."""
    tc = cfg.text_config
    arch = "qwen3vlmoe" if moe else "qwen3vl"
    w = gguf.GGUFWriter(path, arch)
    w.add_type(gguf.GGUFType.MODEL)
    w.add_name("lockstep tiny " + arch)
    q35.add_decoder_sizes(w, tc)
    w.add_rope_dimension_sections(list(MROPE_SECTION) + [0])
    w.add_rope_freq_base(ROPE_THETA)
    w.add_layer_norm_rms_eps(tc.rms_norm_eps)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    if moe:
        w.add_expert_count(N_EXPERT)
        w.add_expert_used_count(N_EXPERT_USED)
        w.add_expert_feed_forward_length(N_FF_EXP)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_num_deepstack_layers(len(DEEPSTACK))
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    pre = q35.PRE
    q35.PRE = PRE
    q35.write_tokenizer(w)
    q35.PRE = pre
    sd = {k.replace("model.language_model.", ""): v for k, v in m.named_parameters()
          if k.startswith("model.language_model.") or k == "lm_head.weight"}
    w.add_tensor("token_embd.weight", f32(sd["embed_tokens.weight"]))
    for i in range(tc.num_hidden_layers):
        p = f"layers.{i}."
        for src, dst in (("input_layernorm", "attn_norm"), ("self_attn.q_proj", "attn_q"), ("self_attn.k_proj", "attn_k"),
                         ("self_attn.v_proj", "attn_v"), ("self_attn.o_proj", "attn_output"),
                         ("self_attn.q_norm", "attn_q_norm"), ("self_attn.k_norm", "attn_k_norm"),
                         ("post_attention_layernorm", "ffn_norm")):
            w.add_tensor(f"blk.{i}.{dst}.weight", f32(sd[p + src + ".weight"]))
        if moe:
            w.add_tensor(f"blk.{i}.ffn_gate_inp.weight", f32(sd[p + "mlp.gate.weight"]))
            gu = f32(sd[p + "mlp.experts.gate_up_proj"])  # [E, 2F, H]: gate rows first
            w.add_tensor(f"blk.{i}.ffn_gate_exps.weight", np.ascontiguousarray(gu[:, :N_FF_EXP]))
            w.add_tensor(f"blk.{i}.ffn_up_exps.weight", np.ascontiguousarray(gu[:, N_FF_EXP:]))
            w.add_tensor(f"blk.{i}.ffn_down_exps.weight", f32(sd[p + "mlp.experts.down_proj"]))  # [E, H, F]
        else:
            for src, dst in (("mlp.gate_proj", "ffn_gate"), ("mlp.up_proj", "ffn_up"), ("mlp.down_proj", "ffn_down")):
                w.add_tensor(f"blk.{i}.{dst}.weight", f32(sd[p + src + ".weight"]))
    w.add_tensor("output_norm.weight", f32(sd["norm.weight"]))
    w.add_tensor("output.weight", f32(sd["lm_head.weight"]))
    q35.finish_gguf(w)


def export_mmproj(cfg, m, path):
    """qwen35v_tiny's mmproj writer with the deepstack layers flagged (conversion/qwen3vl.py:36-40, 58-59) and their
    mergers as v.deepstack.<vision layer>.{norm,fc1,fc2} (qwen3vl.py:84-104)."""
    vc = cfg.vision_config
    w = gguf.GGUFWriter(path, "clip")
    q35.write_mmproj_keys(w, "lockstep tiny qwen3vl mmproj", vc, N_EMBD, cfg.text_config.rms_norm_eps,
                          deepstack=[i in DEEPSTACK for i in range(V_DEPTH)])
    sd = {k.replace("model.visual.", "", 1): v for k, v in m.named_parameters() if k.startswith("model.visual.")}
    tensors = q35.mmproj_tensors(V_DEPTH, lambda n: f32(sd[n]))
    for k, layer in enumerate(DEEPSTACK):
        for src, dst in (("norm", "norm"), ("linear_fc1", "fc1"), ("linear_fc2", "fc2")):
            for wb in ("weight", "bias"):
                tensors[f"v.deepstack.{layer}.{dst}.{wb}"] = f32(sd[f"deepstack_merger_list.{k}.{src}.{wb}"])
    q35.write_mmproj_tensors(w, tensors)
    q35.finish_gguf(w)
    return tensors


def check_file(path, want):
    r = gguf.GGUFReader(path)
    got = {t.name: np.array(t.data) for t in r.tensors}
    assert set(got) == set(want), (set(got) ^ set(want))
    for n, a in want.items():
        assert np.array_equal(got[n].reshape(a.shape), a), n


def image_rows(m, pvs, grids):
    """Per image: [n_tokens, N_EMBD * (1 + deepstack)] as llama.cpp's projector lays them out."""
    with torch.no_grad():
        out = m.model.get_image_features(torch.from_numpy(np.concatenate(pvs)), torch.tensor(grids), return_dict=True)
    return [np.concatenate([f32(out.pooler_output[i])] + [f32(ds[i]) for ds in out.deepstack_features], axis=1)
            for i in range(len(pvs))]


def logits_of(m, ids, pvs, grids):
    with torch.no_grad():
        out = m(input_ids=torch.from_numpy(ids[None]), pixel_values=torch.from_numpy(np.concatenate(pvs)),
                image_grid_thw=torch.tensor(grids),
                mm_token_type_ids=torch.from_numpy((ids == q35.tok_id("<|image_pad|>")).astype(np.int64)[None]))
    return f32(out.logits[0])


def logits_without_deepstack(m, ids, rows, merged):
    """HF's text model fed the image rows' first N_EMBD values in place (inputs_embeds) and the M-RoPE positions
    (qwen35v_tiny.mrope_positions, checked there against HF's), no deepstack."""
    img = q35.tok_id("<|image_pad|>")
    with torch.no_grad():
        emb = m.model.language_model.embed_tokens(torch.from_numpy(ids[None])).clone()
        at = np.nonzero(ids == img)[0]
        emb[0, torch.from_numpy(at)] = torch.from_numpy(np.concatenate([r[:, :N_EMBD] for r in rows]))
        pos = torch.from_numpy(q35.mrope_positions(ids, merged)[:, None, :])
        out = m.model.language_model(inputs_embeds=emb, position_ids=pos)
        return f32(m.lm_head(out.last_hidden_state)[0])


def logits_with_deepstack(m, ids, rows, merged):
    """The same, with the deepstack rows passed as HF's text model takes them: a second, hand-fed path that must
    give the golden (it checks the row layout written to .embd)."""
    img = q35.tok_id("<|image_pad|>")
    with torch.no_grad():
        emb = m.model.language_model.embed_tokens(torch.from_numpy(ids[None])).clone()
        at = np.nonzero(ids == img)[0]
        allrows = np.concatenate(rows)
        emb[0, torch.from_numpy(at)] = torch.from_numpy(allrows[:, :N_EMBD])
        pos = torch.from_numpy(q35.mrope_positions(ids, merged)[:, None, :])
        ds = [torch.from_numpy(np.ascontiguousarray(allrows[:, (k + 1) * N_EMBD:(k + 2) * N_EMBD])) for k in range(len(DEEPSTACK))]
        out = m.model.language_model(inputs_embeds=emb, position_ids=pos, visual_pos_masks=torch.from_numpy(ids == img)[None],
                                     deepstack_visual_embeds=ds)
        return f32(m.lm_head(out.last_hidden_state)[0])


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: tools/oracle/qwen3vl_tiny.py OUT_DIR")
    out = sys.argv[1]
    torch.set_num_threads(1)
    cfg, m = make_model(False)
    cfg_moe, m_moe = make_model(True, vision_from=m)
    tensors = export_mmproj(cfg, m, f"{out}/qwen3vl_tiny_mmproj.gguf")
    check_file(f"{out}/qwen3vl_tiny_mmproj.gguf", tensors)
    export_text(cfg, m, f"{out}/qwen3vl_tiny.gguf", False)
    export_text(cfg_moe, m_moe, f"{out}/qwen3vl_tiny_moe.gguf", True)

    pre = q35.preprocess(f"{out}/vision")
    names = q35.GOLDEN_IMAGES
    pvs = [pre[n]["pv"] for n in names]
    grids = [list(pre[n]["grid"]) for n in names]
    merged = [(g[1] // q35.MERGE, g[2] // q35.MERGE) for g in grids]
    rows = image_rows(m, pvs, grids)
    rows_moe = image_rows(m_moe, pvs, grids)
    assert all(np.array_equal(a, b) for a, b in zip(rows, rows_moe)), "the two models' towers differ"
    alone = [image_rows(m, [p], [g])[0] for p, g in zip(pvs, grids)]
    print("rows of the pair in one call vs each alone: max |diff| %.2e" % max(float(np.abs(a - b).max()) for a, b in zip(rows, alone)))
    with open(f"{out}/qwen3vl_tiny.embd", "wb") as fh:
        fh.write(struct.pack("<i", len(names)))
        for name, r, (gh, gw) in zip(names, alone, merged):
            fh.write(struct.pack("<iiii", r.shape[0], r.shape[1], gh, gw))
            fh.write(np.ascontiguousarray(r, dtype="<f4").tobytes())
            print(f"  embd {name}: {r.shape[0]} tokens x {r.shape[1]}, merged grid {gh}x{gw}, rms "
                  + ", ".join(f"{np.sqrt((r[:, k * N_EMBD:(k + 1) * N_EMBD] ** 2).mean()):.3f}" for k in range(1 + len(DEEPSTACK))))
    ids = q35.prompt_ids(q35.PROMPT, [a * b for a, b in merged])
    with open(f"{out}/qwen3vl_tiny.prompt", "w", encoding="utf-8", newline="") as fh:
        fh.write(q35.PROMPT)
    for tag, model in (("qwen3vl_tiny", m), ("qwen3vl_tiny_moe", m_moe)):
        logits = logits_of(model, ids, pvs, grids)
        write_golden_file(f"{out}/{tag}.golden", ids.astype(np.int32), logits)
        by_hand = logits_with_deepstack(model, ids, alone, merged)
        flat = logits_without_deepstack(model, ids, alone, merged)
        d = float(np.abs(by_hand - logits).max())
        print(f"{tag}.golden: {len(ids)} tokens, logits rms {np.sqrt((logits ** 2).mean()):.3f}; from the written rows "
              f"by hand: max |diff| {d:.2e}; without deepstack they move by up to {np.abs(flat - logits).max():.3f}")
        assert d < 1e-4
    for fn in sorted(os.listdir(out)):
        if fn.startswith("qwen3vl_tiny"):
            print(f"{out}/{fn}: {os.path.getsize(f'{out}/{fn}')} bytes")


if __name__ == "__main__":
    main()
