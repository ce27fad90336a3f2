"""Images in create_chat_completion (Llama(..., mmproj=FILE)): the tiny Gemma 3 and its
projector (tools/oracle/vision_tiny.py), checked against transformers' logits."""

import base64
import os
import struct

import numpy as np
import pytest

import lockstep
from lockstep import Llama


def data_url(path):
    with open(path, "rb") as f:
        return "data:image/png;base64," + base64.b64encode(f.read()).decode()


def golden_last_logprobs(path):
    """The golden's last row (int32 n, int32 n_vocab, n tokens, n x n_vocab logits) as log-probabilities."""
    with open(path, "rb") as f:
        n, nv = struct.unpack("<ii", f.read(8))
        f.read(4 * n)
        logits = np.frombuffer(f.read(4 * n * nv), dtype="<f4").reshape(n, nv)
    row = logits[-1].astype(np.float64)
    return row - (np.log(np.exp(row - row.max()).sum()) + row.max())


@pytest.fixture(scope="module")
def vlm(data_dir):
    llm = Llama(os.path.join(data_dir, "gemma3v_tiny.gguf"), mmproj=os.path.join(data_dir, "gemma3v_tiny_mmproj.gguf"),
                n_ctx=256, n_ubatch=64, type_k=0, type_v=0, verbose=False)
    yield llm
    llm.close()


def ask(llm, image, text="Describe.", history=()):
    msgs = list(history) + [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": image}},
                                                         {"type": "text", "text": text}]}]
    return msgs, llm.create_chat_completion(messages=msgs, max_tokens=6, temperature=0, logprobs=True, top_logprobs=5)


def test_an_image_chat_matches_transformers_and_reuses_its_image(vlm, data_dir):
    img = data_url(os.path.join(data_dir, "vision", "rgb64.png"))
    msgs, r = ask(vlm, img)
    assert vlm.n_images_encoded == 1
    # The prompt is the golden's: its first token's top log-probabilities are transformers'.
    want = golden_last_logprobs(os.path.join(data_dir, "gemma3v_tiny.golden"))
    first = r["choices"][0]["logprobs"]["content"][0]
    for alt in first["top_logprobs"]:
        tid = vlm.tokenize(alt["token"].encode(), add_bos=False, special=True)
        if len(tid) == 1:
            assert abs(alt["logprob"] - want[tid[0]]) < 1e-4, (alt, want[tid[0]])
    assert abs(first["logprob"] - want.max()) < 1e-4
    n_prompt = r["usage"]["prompt_tokens"]
    # The next turn: the image is held, not encoded again; the same reply as a fresh instance.
    history = msgs + [{"role": "assistant", "content": r["choices"][0]["message"]["content"]}]
    msgs2 = history + [{"role": "user", "content": "And the colours?"}]
    r2 = vlm.create_chat_completion(messages=msgs2, max_tokens=6, temperature=0, logprobs=True, top_logprobs=5)
    assert vlm.n_images_encoded == 0
    assert r2["usage"]["prompt_tokens_details"]["cached_tokens"] >= n_prompt
    fresh = Llama(vlm.model_path, mmproj=os.path.join(data_dir, "gemma3v_tiny_mmproj.gguf"), n_ctx=256, n_ubatch=64, type_k=0, type_v=0, verbose=False)
    try:
        f2 = fresh.create_chat_completion(messages=msgs2, max_tokens=6, temperature=0, logprobs=True, top_logprobs=5)
        assert fresh.n_images_encoded == 1
        assert f2["choices"][0]["logprobs"] == r2["choices"][0]["logprobs"]
    finally:
        fresh.close()
    # Another image: other log-probabilities.
    _, r3 = ask(vlm, data_url(os.path.join(data_dir, "vision", "rgb100x37.png")))
    assert vlm.n_images_encoded == 1
    assert r3["choices"][0]["logprobs"] != r["choices"][0]["logprobs"]


def test_bad_images_and_no_projector_are_clear_errors(vlm, data_dir):
    with open(os.path.join(data_dir, "vision", "rgb64.png"), "rb") as f:
        png = f.read()
    with pytest.raises(lockstep.LockstepError, match="truncated"):
        ask(vlm, "data:image/png;base64," + base64.b64encode(png[:300]).decode())
    with pytest.raises(ValueError, match="remote image URLs are not fetched"):
        ask(vlm, "https://example.com/cat.png")
    # After the errors it still answers.
    _, r = ask(vlm, data_url(os.path.join(data_dir, "vision", "rgb64.png")))
    assert r["choices"][0]["finish_reason"] in ("stop", "length")
    plain = Llama(os.path.join(data_dir, "gemma3v_tiny.gguf"), n_ctx=128, verbose=False)
    try:
        with pytest.raises(ValueError, match="mmproj"):
            ask(plain, data_url(os.path.join(data_dir, "vision", "rgb64.png")))
    finally:
        plain.close()
    with pytest.raises(lockstep.LockstepError, match="not a projector"):
        Llama(os.path.join(data_dir, "gemma3v_tiny.gguf"), mmproj=os.path.join(data_dir, "gemma3v_tiny.gguf"), n_ctx=128, verbose=False)
