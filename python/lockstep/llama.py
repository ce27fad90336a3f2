"""`Llama`: llama-cpp-python's high-level interface over lockstep's C API.

One model, one session of one sequence. Every prompt goes through the session's prefix rule
(lockstep_seq_reuse_prefix): the longest prefix of it that the memory holds and can return to
is kept, the rest evaluated, whatever the model's memory is (full attention, sliding-window
rings, recurrent state), so consecutive chat turns reuse the conversation and a reply equals
the one a fresh instance gives. Generated tokens are turned into text from the model's piece
table (a pointer and a length per token: no re-decoding of the text so far), and top-k
log-probabilities come from the sampler, which selects them in O(vocabulary).
"""

from __future__ import annotations

import base64
import codecs
import ctypes
import json
import os
import sys
import time
import urllib.parse
import uuid
from collections import deque
from ctypes import POINTER, byref, c_char_p, c_float, c_int8, c_int32, c_int64, c_size_t, c_uint8, c_void_p
from typing import Any, Callable, Deque, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

from . import _capi
from ._capi import LockstepError, LockstepUnsupportedError, LockstepValueError
from .cache import BaseLlamaCache, longest_token_prefix

LLAMA_DEFAULT_SEED = 0xFFFFFFFF

# llama-cpp-python's callback types: a logits processor returns the scores to sample from, a
# stopping criterion says whether to stop before the token just sampled.
LogitsProcessor = Callable[[npt.NDArray[np.intc], npt.NDArray[np.single]], npt.NDArray[np.single]]
StoppingCriteria = Callable[[npt.NDArray[np.intc], npt.NDArray[np.single]], bool]


class LogitsProcessorList(List[LogitsProcessor]):
    """Logits processors applied in order."""

    def __call__(self, input_ids: npt.NDArray[np.intc], scores: npt.NDArray[np.single]) -> npt.NDArray[np.single]:
        for processor in self:
            scores = processor(input_ids, scores)
        return scores


class StoppingCriteriaList(List[StoppingCriteria]):
    """Stops when any criterion says so."""

    def __call__(self, input_ids: npt.NDArray[np.intc], logits: npt.NDArray[np.single]) -> bool:
        return any(criterion(input_ids, logits) for criterion in self)


def _gather(chunks: Iterator[Any], sampler: Any, want_logprobs: bool) -> Tuple[str, Optional[Dict[str, Any]], int, str]:
    """A whole answer from the generation's chunks (text, logprobs, finish reason, tokens):
    the text, the logprobs merged (None unless wanted), the tokens generated and the finish
    reason ("length" unless a chunk says otherwise); closes the sampler."""
    parts: List[str] = []
    merged: Optional[Dict[str, Any]] = {"tokens": [], "text_offset": [], "token_logprobs": [], "top_logprobs": []} if want_logprobs else None
    n, finish = 0, "length"
    try:
        for text, lp, fin, toks in chunks:
            parts.append(text)
            n += len(toks)
            if merged is not None and lp:
                for k in merged:
                    merged[k].extend(lp[k])
            if fin is not None:
                finish = fin
    finally:
        sampler.close()
    return "".join(parts), merged, n, finish


def _steps(gen: Any, stopped: Callable[[], bool]) -> Iterator[Any]:
    """Runs a Llama._tokens loop, telling it after each token whether the caller's text
    stopped (a stop string matched): it then ends as at an end of generation (finish "stop",
    its state stored in the prompt cache) instead of being closed half way."""
    try:
        item = next(gen)
        while True:
            yield item
            item = gen.send(stopped())
    except StopIteration:
        return


def _next_seed(x: int) -> int:
    """splitmix64's step: the next key of the chain (a 63-bit value, so it stays a valid seed)."""
    x = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = x
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return (z ^ (z >> 31)) & 0x7FFFFFFFFFFFFFFF


class LlamaGrammar:
    """A constraint on the output: GBNF text (llama.cpp's grammar syntax) or a JSON schema.
    It is checked when a generation first uses it (lockstep.LockstepGrammarError)."""

    def __init__(self, *, gbnf: Optional[str] = None, json_schema: Optional[str] = None):
        if (gbnf is None) == (json_schema is None):
            raise ValueError("LlamaGrammar: give a GBNF grammar or a JSON schema")
        self.gbnf = gbnf
        self.json_schema = json_schema

    @classmethod
    def from_string(cls, grammar: str, verbose: bool = True) -> "LlamaGrammar":
        return cls(gbnf=grammar)

    @classmethod
    def from_file(cls, file: Union[str, os.PathLike], verbose: bool = True) -> "LlamaGrammar":
        with open(file, encoding="utf-8") as f:
            return cls(gbnf=f.read())

    @classmethod
    def from_json_schema(cls, json_schema: str, verbose: bool = True) -> "LlamaGrammar":
        return cls(json_schema=json_schema)


class LlamaState:
    """What save_state() took: the sequence's state as bytes, its tokens and scores."""

    def __init__(
        self,
        input_ids: npt.NDArray[np.intc],
        scores: npt.NDArray[np.single],
        n_tokens: int,
        llama_state: bytes,
        llama_state_size: int,
        seed: int,
    ):
        self.input_ids = input_ids
        self.scores = scores
        self.n_tokens = n_tokens
        self.llama_state = llama_state
        self.llama_state_size = llama_state_size
        self.seed = seed


# Chat formats by llama-cpp-python's names that lockstep writes itself (as Jinja templates);
# with no chat_format the model's own template (or its family's built-in one) is used.
_CHAT_FORMATS = {
    "chatml": (
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    ),
    "llama-3": (
        "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content | trim }}<|eot_id|>"
        "{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
    ),
    "gemma": (
        "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m.role == 'assistant' else 'user' }}\n"
        "{{ m.content | trim }}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
    ),
}

_SAMPLING_UNSUPPORTED = (("typical_p", 1.0), ("tfs_z", 1.0), ("mirostat_mode", 0))
# llama-cpp-python constructor arguments whose feature lockstep does not have: refused when set
# (the others it does not use, rope and YaRN overrides, flash_attn, offload_kqv, numa, mlock,
# n_threads_batch, are accepted and have no effect).
_UNSUPPORTED_ARGS = ("lora_path", "lora_base", "draft_model", "kv_overrides", "tokenizer", "spm_infill")


class _Text:
    """The reply's bytes as text: whole UTF-8 characters (U+FFFD for each maximal invalid
    subpart, as Python's decoder and `lockstep run` both write), cut at the first stop string,
    and holding back what may be the start of one (so streamed text never shows part of a stop)."""

    def __init__(self, stops: Sequence[str]):
        self._dec = codecs.getincrementaldecoder("utf-8")("replace")
        self._stops = [s for s in stops if s]
        self._pending = ""
        self.stopped = False
        self.n_chars = 0  # characters released so far

    def push(self, data: bytes) -> str:
        if self.stopped:
            return ""
        self._pending += self._dec.decode(data)
        return self._release(final=False)

    def finish(self) -> str:
        if self.stopped:
            return ""
        self._pending += self._dec.decode(b"", final=True)
        return self._release(final=True)

    def _release(self, final: bool) -> str:
        p = self._pending
        cut = -1
        for s in self._stops:
            k = p.find(s)
            if k >= 0 and (cut < 0 or k < cut):
                cut = k
        if cut >= 0:
            self.stopped = True
            out, self._pending = p[:cut], ""
        elif final or not self._stops:
            out, self._pending = p, ""
        else:
            hold = 0
            for s in self._stops:
                for n in range(min(len(s) - 1, len(p)), hold, -1):
                    if p.endswith(s[:n]):
                        hold = n
                        break
            out, self._pending = p[: len(p) - hold], p[len(p) - hold :]
        self.n_chars += len(out)
        return out


class _Sampler:
    """A C sampler (lockstep_sampler) for one generation, freed with it."""

    def __init__(self, llama: "Llama", params: _capi.SamplerParams, keep: Tuple[Any, ...]):
        self._lib = _capi.library()
        self._keep = keep  # (the arrays and strings params points at)
        self.n_logprobs = params.n_logprobs
        self.handle = c_void_p()
        _capi.check(self._lib.lockstep_sampler_new(llama._model, byref(params), byref(self.handle)))
        self._top_ids = (c_int32 * max(1, params.n_logprobs))()
        self._top_lp = (c_float * max(1, params.n_logprobs))()

    def logprobs(self) -> Tuple[float, List[Tuple[int, float]]]:
        chosen, n = c_float(), c_int32()
        cap = len(self._top_ids)
        _capi.check(self._lib.lockstep_sampler_logprobs(self.handle, byref(chosen), self._top_ids, self._top_lp, cap, byref(n)))
        k = min(n.value, cap)
        return chosen.value, [(self._top_ids[i], self._top_lp[i]) for i in range(k)]

    def close(self) -> None:
        if self.handle:
            self._lib.lockstep_sampler_free(self.handle)
            self.handle = c_void_p()

    def __del__(self) -> None:
        self.close()


class _ReplyReader:
    """A chat reply read token by token through the C library's reader (the server's
    pipeline): reasoning split off by the template's markers, stop strings on the visible
    text, tool calls of the template's format as deltas."""

    def __init__(self, llama: "Llama", cp: _capi.ChatParams, tools: bool, stops: Sequence[str], id_prefix: str):
        self._lib = llama._lib
        self.handle = c_void_p()
        self._stopped = c_int32(0)
        self._keep = (cp, json.dumps(list(stops)).encode("utf-8"), id_prefix.encode("utf-8"))
        _capi.check(self._lib.lockstep_reply_reader_new(llama._model, byref(cp), 1 if tools else 0, self._keep[1], self._keep[2],
                                                        byref(self.handle)))
        self.message: Dict[str, Any] = {}

    @property
    def stopped(self) -> bool:
        return bool(self._stopped.value)

    def _take(self) -> List[Dict[str, Any]]:
        return json.loads(_capi.read_text(self._lib.lockstep_reply_reader_take, self.handle))

    def push(self, token: int) -> List[Dict[str, Any]]:
        _capi.check(self._lib.lockstep_reply_reader_push(self.handle, token, byref(self._stopped)))
        return self._take()

    def finish(self) -> List[Dict[str, Any]]:
        _capi.check(self._lib.lockstep_reply_reader_finish(self.handle))
        out = self._take()
        self.message = json.loads(_capi.read_text(self._lib.lockstep_reply_reader_message, self.handle))
        return out

    def __del__(self) -> None:
        if getattr(self, "handle", None):
            self._lib.lockstep_reply_reader_free(self.handle)
            self.handle = c_void_p()


class Llama:
    """A GGUF model and one sequence of memory, with llama-cpp-python's interface.

    Not thread-safe: use one instance from one thread at a time (several instances may share
    nothing but the machine)."""

    def __init__(
        self,
        model_path: str,
        *,
        n_gpu_layers: int = 0,
        split_mode: int = 1,
        main_gpu: int = 0,
        tensor_split: Optional[List[float]] = None,
        use_mmap: bool = True,
        vocab_only: bool = False,
        seed: int = LLAMA_DEFAULT_SEED,
        n_ctx: int = 512,
        n_batch: int = 512,
        n_ubatch: int = 512,
        n_threads: Optional[int] = None,
        n_threads_batch: Optional[int] = None,
        logits_all: bool = False,
        embedding: bool = False,
        last_n_tokens_size: int = 64,
        chat_format: Optional[str] = None,
        chat_handler: Optional[Any] = None,
        type_k: Optional[int] = None,
        type_v: Optional[int] = None,
        verbose: bool = True,
        backend: str = "cpu",
        device: int = 0,
        devices: Optional[str] = None,
        mmproj: Optional[str] = None,
        **kwargs: Any,
    ):
        """Loads the GGUF file at `model_path` and makes a session over it.

        Args:
            model_path: the GGUF file.
            n_gpu_layers: with a GPU backend or a device list, how many of the last layers
                (the output head counting as one) go on the GPU devices; -1 every one. With a
                GPU `backend` and no device list, 0 (the default) means the whole model there.
            split_mode: over several GPU devices: 0 none, 1 by layers, 2 by rows.
            main_gpu: the GPU's index when `device` is not given.
            tensor_split: shares of the model per GPU device.
            use_mmap: map the file in place (else copy the weights).
            vocab_only: load the vocabulary and metadata only, no weights: tokenize,
                detokenize, metadata and chat templates work; evaluation raises
                LockstepUnsupportedError.
            seed: the sampler's seed (the draw is keyed by seed and position: the same seed
                gives the same tokens however the work was batched); -1 picks one at random.
            n_ctx: positions of the sequence; 0 the model's training context.
            n_batch: the most tokens one evaluation takes; n_ubatch: tokens per graph run.
            n_threads: CPU threads (None: one per core). n_threads_batch is not used.
            logits_all: keep every evaluated token's logits in `scores` (for echoed logprobs).
            embedding: accepted for compatibility; embed() works on any model.
            last_n_tokens_size: the window of the repeat penalties.
            chat_format: None (the model's own chat template, or its family's built-in one),
                a named template of the file ("chat_template.<name>" or "<name>"), or one of
                "chatml", "llama-3", "gemma".
            type_k, type_v: KV cache types (ggml ids: 0 F32, 1 F16 (default), 8 Q8_0, 2 Q4_0).
            verbose: print what was loaded and each generation's counts to stderr.
            pooling_type (keyword): embed()'s pooling, llama.cpp's numbers (-1 the model's, 0
                none, 1 mean, 2 cls, 3 last).
            backend: "cpu", "vulkan", "cuda" or "reference"; device: its device index.
            devices: a device list to place the model over ("cuda0,cuda1").
            mmproj: the model's projector file (its vision encoder, as llama.cpp's converter
                writes it; Gemma 3), for images in create_chat_completion's messages
                ({"type": "image_url", "image_url": {"url": "data:..." or "file://..."}}). A
                chat_handler with a clip_model_path (llama-cpp-python's multimodal handlers)
                gives the same file.

        Raises:
            lockstep.LockstepFileError (an OSError) for a file that does not exist, and
            lockstep.LockstepError subclasses with the library's message for the rest.
        """
        self._lib = _capi.library()
        self._model = c_void_p()
        self._session = c_void_p()
        self.verbose = verbose
        self.model_path = model_path
        if chat_handler is not None:
            clip = getattr(chat_handler, "clip_model_path", None)
            if clip is None:
                raise NotImplementedError("lockstep: chat_handler is not supported; chat_format picks the template "
                                          "(a multimodal handler's clip_model_path is taken as mmproj)")
            mmproj = mmproj or clip
        self._vision = c_void_p()
        for key in _UNSUPPORTED_ARGS:
            if kwargs.get(key) not in (None, False):
                raise NotImplementedError(f"lockstep: {key} is not supported")
        self._pooling = int(kwargs.get("pooling_type", -1) if kwargs.get("pooling_type") is not None else -1)
        self._init_kwargs = dict(
            n_gpu_layers=n_gpu_layers, split_mode=split_mode, main_gpu=main_gpu, tensor_split=tensor_split, use_mmap=use_mmap,
            vocab_only=vocab_only, seed=seed, n_ctx=n_ctx, n_batch=n_batch, n_ubatch=n_ubatch, n_threads=n_threads, logits_all=logits_all,
            embedding=embedding, last_n_tokens_size=last_n_tokens_size, chat_format=chat_format, type_k=type_k, type_v=type_v,
            verbose=verbose, backend=backend, device=device, devices=devices, pooling_type=kwargs.get("pooling_type"),
        )

        mp = self._lib.lockstep_model_default_params()
        mp.backend = backend.encode()
        mp.device = device if device else main_gpu
        mp.n_threads = int(n_threads or 0)
        gpu = backend not in ("cpu", "reference") or bool(devices)
        if devices:
            mp.devices = devices.encode()
        mp.n_gpu_layers = -1 if (n_gpu_layers < 0 or (gpu and not devices and n_gpu_layers == 0)) else n_gpu_layers
        mp.split_mode = split_mode
        self._tensor_split = None
        if tensor_split:
            self._tensor_split = (c_float * len(tensor_split))(*tensor_split)
            mp.tensor_split = self._tensor_split
            mp.n_tensor_split = len(tensor_split)
        mp.use_mmap = 1 if use_mmap else 0
        mp.vocab_only = 1 if vocab_only else 0
        _capi.check(self._lib.lockstep_model_load(os.fsencode(model_path), byref(mp), byref(self._model)))
        self.vocab_only = bool(vocab_only)

        self.n_batch = min(n_ctx, n_batch) if n_ctx > 0 else n_batch
        self._n_vocab = int(self._lib.lockstep_model_n_vocab(self._model))
        if vocab_only:
            # (no session: the context is what was asked, else the model's training context)
            self._n_ctx = n_ctx if n_ctx > 0 else max(1, int(self._lib.lockstep_model_n_ctx_train(self._model)))
        else:
            sp = self._lib.lockstep_session_default_params()
            sp.n_ctx = n_ctx
            sp.n_batch = self.n_batch
            sp.n_ubatch = min(self.n_batch, n_ubatch)
            sp.n_seq = 1
            sp.type_k = _capi.TYPE_F16 if type_k is None else int(type_k)
            sp.type_v = _capi.TYPE_F16 if type_v is None else int(type_v)
            _capi.check(self._lib.lockstep_session_new(self._model, byref(sp), byref(self._session)))
            self._n_ctx = int(self._lib.lockstep_session_n_ctx(self._session))
            if mmproj:
                _capi.check(self._lib.lockstep_vision_load(os.fsencode(mmproj), self._model, byref(self._vision)))
        # llama-cpp-python's flags of the model's memory: recurrent (every layer a state, no
        # KV cache) or hybrid (both kinds of layer); False where unknown (vocab_only).
        self._is_recurrent = not vocab_only and self._lib.lockstep_model_is_recurrent(self._model) == 1
        self._is_hybrid = not vocab_only and self._lib.lockstep_model_is_hybrid(self._model) == 1
        self.cache: Optional[BaseLlamaCache] = None
        self.n_batch = min(self.n_batch, self._n_ctx)  # (the session clamps n_ctx to the model's)
        self._logits_all = logits_all
        self.last_n_tokens_size = last_n_tokens_size
        self._seed = int(np.random.randint(0, 2**31)) if seed == -1 else int(seed)
        self.chat_format = chat_format
        self.n_tokens = 0
        self.n_reused = 0  # prompt tokens the last generation kept from memory
        self.n_images_encoded = 0  # images the last chat completion encoded (the others were held)
        self.input_ids: npt.NDArray[np.intc] = np.zeros((0 if vocab_only else self._n_ctx,), dtype=np.intc)
        self.scores: npt.NDArray[np.single] = np.zeros((0 if vocab_only else self._n_ctx if logits_all else 1, self._n_vocab),
                                                       dtype=np.single)
        self._has_logits = False  # whether the last evaluation left a logits row for the sequence's last token
        self._one = (c_int32 * 1)()
        self._piece_ptr, self._piece_len = c_void_p(), c_int32()
        self.metadata = self._read_metadata()
        self._token_nl = self._find_newline()
        if verbose:
            print(
                f"lockstep {_capi.library().lockstep_version().decode()}: {model_path}: {self._n_vocab} tokens, "
                f"context {self._n_ctx}, backend {backend}",
                file=sys.stderr,
            )

    # ---- model facts -------------------------------------------------------------------------

    def n_ctx(self) -> int:
        """The context window: positions the sequence holds."""
        return self._n_ctx

    def n_embd(self) -> int:
        """The embedding size."""
        return int(self._lib.lockstep_model_n_embd(self._model))

    def n_vocab(self) -> int:
        """The vocabulary size."""
        return self._n_vocab

    def token_bos(self) -> int:
        """The beginning-of-sequence token (-1: none)."""
        return int(self._lib.lockstep_token_bos(self._model))

    def token_eos(self) -> int:
        """The end-of-sequence token (-1: none)."""
        return int(self._lib.lockstep_token_eos(self._model))

    def token_nl(self) -> int:
        """The newline token."""
        return self._token_nl

    def pooling_type(self) -> int:
        """The pooling the GGUF names (0 none, 1 mean, 2 cls, 3 last)."""
        return int(self._lib.lockstep_model_pooling(self._model))

    def _read_metadata(self) -> Dict[str, str]:
        out: Dict[str, str] = {}
        n = self._lib.lockstep_model_meta_count(self._model)
        for i in range(max(n, 0)):
            key = _capi.read_text(self._lib.lockstep_model_meta_key, self._model, i).decode("utf-8", "replace")
            if key in ("tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type", "tokenizer.ggml.merges"):
                continue  # (the vocabulary: a list as long as it, which no caller reads as text)
            out[key] = _capi.read_text(self._lib.lockstep_model_meta_get, self._model, key.encode()).decode("utf-8", "replace")
        return out

    def _find_newline(self) -> int:
        ids = self.tokenize(b"\n", add_bos=False, special=False)
        return ids[-1] if ids else -1

    # ---- tokens ------------------------------------------------------------------------------

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> List[int]:
        """Token ids of UTF-8 `text`. add_bos: the vocabulary's BOS (where it adds one);
        special: control tokens written as text become their ids."""
        if isinstance(text, str):
            text = text.encode("utf-8")
        cap = len(text) + 8
        while True:
            buf = (c_int32 * cap)()
            n = c_int32()
            status = self._lib.lockstep_tokenize(self._model, text, len(text), int(add_bos), int(special), buf, cap, byref(n))
            if status == _capi.ERR_BUFFER_TOO_SMALL and n.value > cap:
                cap = n.value
                continue
            _capi.check(status)
            return buf[: n.value]

    def _piece(self, token: int, special: bool = False) -> bytes:
        """One token's bytes, from the model's piece table (O(1): a pointer and a length)."""
        _capi.check(self._lib.lockstep_token_piece(self._model, token, int(special), byref(self._piece_ptr), byref(self._piece_len)))
        return ctypes.string_at(self._piece_ptr, self._piece_len.value) if self._piece_len.value else b""

    def detokenize(self, tokens: List[int], prev_tokens: Optional[List[int]] = None, special: bool = False) -> bytes:
        """The bytes `tokens` stand for: each token's bytes as generated, joined, as
        llama-cpp-python gives them. A SentencePiece vocabulary's leading space (the one
        tokenize added) is dropped when the tokens begin with BOS, so
        detokenize(tokenize(text)) == text, and kept without it, as llama-cpp-python does
        (lockstep_detokenize, the C call, drops it at any text's start, as llama.cpp's
        llama_detokenize). prev_tokens is accepted and not needed: a token's bytes do not
        depend on those before it. special: control tokens give their text."""
        out = b"".join(self._piece(int(t), special) for t in tokens)
        if tokens and int(tokens[0]) == self.token_bos() and out[:1] == b" ":
            out = out[1:]
        return out

    # ---- the sequence ------------------------------------------------------------------------

    @property
    def _input_ids(self) -> npt.NDArray[np.intc]:
        return self.input_ids[: self.n_tokens]

    @property
    def _scores(self) -> npt.NDArray[np.single]:
        """Every evaluated token's logits (logits_all), else the last token's as one row."""
        if self._logits_all:
            return self.scores[: self.n_tokens, :]
        if self._has_logits:
            self.scores[0, :] = self._last_logits()
        return self.scores

    @property
    def eval_tokens(self) -> Deque[int]:
        return deque(self.input_ids[: self.n_tokens].tolist(), maxlen=self._n_ctx)

    @property
    def eval_logits(self) -> Deque[List[float]]:
        return deque(self._scores.tolist(), maxlen=self._n_ctx if self._logits_all else 1)

    def _need_session(self) -> None:
        if self.vocab_only:
            raise LockstepUnsupportedError(
                _capi.ERR_UNSUPPORTED, "LOCKSTEP_ERR_UNSUPPORTED",
                f"lockstep: {self.model_path} was loaded with vocab_only: it has no weights to evaluate",
            )

    def reset(self) -> None:
        """Empties the sequence: the memory itself (KV rows, recurrent state), not a count."""
        if self.vocab_only:
            return
        _capi.check(self._lib.lockstep_session_reset(self._session))
        self.n_tokens = 0
        self._has_logits = False

    def _sync(self) -> None:
        # The session is the truth; the arrays follow it (they differ only after a failed call).
        n = int(self._lib.lockstep_seq_len(self._session, 0))
        if n != self.n_tokens:
            ptr, cnt = POINTER(c_int32)(), c_int64()
            _capi.check(self._lib.lockstep_seq_tokens(self._session, 0, byref(ptr), byref(cnt)))
            if cnt.value:
                self.input_ids[: cnt.value] = np.ctypeslib.as_array(ptr, shape=(cnt.value,))
            self.n_tokens = int(cnt.value)
            self._has_logits = False

    def eval(self, tokens: Sequence[int]) -> None:
        """Evaluates `tokens` after the sequence's, in batches of n_batch, keeping the last
        token's logits (every token's with logits_all) in `scores`."""
        self._need_session()
        tokens = [int(t) for t in tokens]
        self._sync()
        if not tokens:
            return
        if self.n_tokens + len(tokens) > self._n_ctx:
            raise LockstepValueError(
                _capi.ERR_TOO_LONG, "LOCKSTEP_ERR_TOO_LONG",
                f"Requested tokens ({self.n_tokens + len(tokens)}) exceed context window of {self._n_ctx}",
            )
        for at in range(0, len(tokens), self.n_batch):
            chunk = tokens[at : at + self.n_batch]
            n = len(chunk)
            arr = (c_int32 * n)(*chunk)
            flags = None
            if self._logits_all:
                flags = (c_int8 * n)(*([1] * n))
            batch = _capi.Batch(n, arr, None, None, flags)
            self._has_logits = False
            status = self._lib.lockstep_decode(self._session, byref(batch))
            if status != _capi.OK:
                err = _capi.error(status)
                self._sync()
                raise err
            p0 = self.n_tokens
            self.input_ids[p0 : p0 + n] = chunk
            self.n_tokens = p0 + n
            if self._logits_all:
                rows, nrows, rowlen = POINTER(c_float)(), c_int32(), c_int64()
                _capi.check(self._lib.lockstep_get_outputs(self._session, byref(rows), byref(nrows), byref(rowlen)))
                self.scores[p0 : p0 + n, :] = np.ctypeslib.as_array(rows, shape=(nrows.value, rowlen.value))
            # (else the last row stays in the session, read through _scores: no copy per token)
            self._has_logits = True

    def _last_logits(self) -> npt.NDArray[np.single]:
        """The last decode's last row: a view into the session (valid until its next change)."""
        row = POINTER(c_float)()
        _capi.check(self._lib.lockstep_get_logits(self._session, -1, byref(row)))
        return np.ctypeslib.as_array(row, shape=(self._n_vocab,))

    def _prompt(self, tokens: List[int]) -> int:
        """Makes the sequence hold `tokens` by the session's prefix rule: keeps the longest
        prefix its memory holds and can return to (at least one token is left to evaluate),
        evaluates the rest, and checkpoints a recurrent state at the prompt's end so that the
        next turn can resume here. Returns how many tokens were kept."""
        self._need_session()
        if not tokens:
            raise ValueError("the prompt is empty")
        if len(tokens) >= self._n_ctx:
            raise LockstepValueError(
                _capi.ERR_TOO_LONG, "LOCKSTEP_ERR_TOO_LONG",
                f"Requested tokens ({len(tokens)}) exceed context window of {self._n_ctx}",
            )
        arr = (c_int32 * len(tokens))(*tokens)
        kept = c_int64()
        status = self._lib.lockstep_seq_reuse_prefix(self._session, 0, arr, len(tokens), byref(kept))
        if status != _capi.OK:
            err = _capi.error(status)
            self._sync()
            raise err
        self.n_tokens = int(kept.value)  # (input_ids[:kept] already hold these tokens)
        self._has_logits = False
        self.eval(tokens[self.n_tokens :])
        _capi.check(self._lib.lockstep_seq_checkpoint(self._session, 0, None))
        self.n_reused = int(kept.value)
        return self.n_reused

    # ---- sampling ----------------------------------------------------------------------------

    def _sampler(
        self,
        temp: float = 0.8,
        top_k: int = 40,
        top_p: float = 0.95,
        min_p: float = 0.05,
        repeat_penalty: float = 1.0,
        frequency_penalty: float = 0.0,
        presence_penalty: float = 0.0,
        seed: Optional[int] = None,
        grammar: Optional[LlamaGrammar] = None,
        gbnf: Optional[str] = None,
        json_schema: Optional[str] = None,
        logit_bias: Optional[Dict[Any, float]] = None,
        n_logprobs: int = 0,
        **unsupported: Any,
    ) -> _Sampler:
        for name, off in _SAMPLING_UNSUPPORTED:
            if name in unsupported and unsupported[name] is not None and unsupported[name] != off:
                raise NotImplementedError(f"lockstep: {name}={unsupported[name]!r} is not supported (only {off!r})")
        p = self._lib.lockstep_sampler_default_params()
        if temp < 0:  # llama-cpp-python: plain sampling from the softmax, nothing cut
            p.temp, p.top_k, p.top_p, p.min_p = 1.0, 0, 1.0, 0.0
        else:
            p.temp, p.top_k, p.top_p, p.min_p = temp, top_k, top_p, min_p
        p.repeat_penalty = repeat_penalty
        p.frequency_penalty = frequency_penalty
        p.presence_penalty = presence_penalty
        p.repeat_last_n = self.last_n_tokens_size
        if seed is None:
            # As llama-cpp-python's sampler RNG runs on from call to call: each call without a
            # seed draws with the next key of a splitmix64 chain from the Llama's seed, so two
            # such calls differ, and set_seed / load_state (which restores it) repeat them.
            p.seed = self._seed & 0xFFFFFFFFFFFFFFFF
            self._seed = _next_seed(self._seed)
        else:
            p.seed = int(seed) & 0xFFFFFFFFFFFFFFFF
        keep: List[Any] = []
        if logit_bias:
            ids = [int(k) for k in logit_bias]
            vals = [float(v) for v in logit_bias.values()]
            ta, va = (c_int32 * len(ids))(*ids), (c_float * len(vals))(*vals)
            keep += [ta, va]
            p.logit_bias_tokens, p.logit_bias_values, p.n_logit_bias = ta, va, len(ids)
        if grammar is not None:
            gbnf, json_schema = grammar.gbnf, grammar.json_schema
        if gbnf is not None:
            b = gbnf.encode("utf-8")
            keep.append(b)
            p.grammar = b
        if json_schema is not None:
            b = json_schema.encode("utf-8")
            keep.append(b)
            p.json_schema = b
        p.n_logprobs = max(0, int(n_logprobs))
        return _Sampler(self, p, tuple(keep))

    def _sample(self, sampler: _Sampler, logits_processor: Optional[LogitsProcessor]) -> int:
        """The token after the sequence, from its last logits (through logits_processor when given)."""
        tok = c_int32()
        if logits_processor is None:
            _capi.check(self._lib.lockstep_sampler_sample(sampler.handle, self._session, 0, -1, byref(tok)))
            return tok.value
        scores = np.array(self._last_logits(), dtype=np.single, copy=True)
        scores = np.ascontiguousarray(logits_processor(self._input_ids, scores), dtype=np.single)
        hist, n = POINTER(c_int32)(), c_int64()
        _capi.check(self._lib.lockstep_seq_tokens(self._session, 0, byref(hist), byref(n)))
        _capi.check(
            self._lib.lockstep_sampler_sample_logits(
                sampler.handle, scores.ctypes.data_as(POINTER(c_float)), self._n_vocab, hist, n.value, n.value, byref(tok)
            )
        )
        return tok.value

    def sample(
        self,
        top_k: int = 40,
        top_p: float = 0.95,
        min_p: float = 0.05,
        typical_p: float = 1.0,
        temp: float = 0.80,
        repeat_penalty: float = 1.0,
        frequency_penalty: float = 0.0,
        presence_penalty: float = 0.0,
        tfs_z: float = 1.0,
        mirostat_mode: int = 0,
        mirostat_eta: float = 0.1,
        mirostat_tau: float = 5.0,
        penalize_nl: bool = True,
        logits_processor: Optional[LogitsProcessorList] = None,
        grammar: Optional[LlamaGrammar] = None,
        idx: Optional[int] = None,
    ) -> int:
        """Samples the token after the sequence from its last logits."""
        if self.n_tokens == 0 or not self._has_logits:
            raise RuntimeError("lockstep: sample() needs logits: eval() tokens first")
        if idx is not None and idx != self.n_tokens - 1:
            raise NotImplementedError("lockstep: sample(idx=...) samples the last evaluated token only")
        s = self._sampler(temp, top_k, top_p, min_p, repeat_penalty, frequency_penalty, presence_penalty, grammar=grammar,
                          typical_p=typical_p, tfs_z=tfs_z, mirostat_mode=mirostat_mode)
        try:
            return self._sample(s, logits_processor)
        finally:
            s.close()

    def generate(
        self,
        tokens: Sequence[int],
        top_k: int = 40,
        top_p: float = 0.95,
        min_p: float = 0.05,
        typical_p: float = 1.0,
        temp: float = 0.80,
        repeat_penalty: float = 1.0,
        reset: bool = True,
        frequency_penalty: float = 0.0,
        presence_penalty: float = 0.0,
        tfs_z: float = 1.0,
        mirostat_mode: int = 0,
        mirostat_tau: float = 5.0,
        mirostat_eta: float = 0.1,
        penalize_nl: bool = True,
        logits_processor: Optional[LogitsProcessorList] = None,
        stopping_criteria: Optional[StoppingCriteriaList] = None,
        grammar: Optional[LlamaGrammar] = None,
    ) -> Iterator[int]:
        """Yields the tokens that follow `tokens`, end-of-generation tokens included, until the
        caller stops or the context is full. reset=True: `tokens` is the whole sequence wanted
        (its cached prefix is kept, the session's rule); False: they continue the sequence.
        Sending a list of tokens into the generator appends them after the one yielded."""
        s = self._sampler(temp, top_k, top_p, min_p, repeat_penalty, frequency_penalty, presence_penalty, grammar=grammar,
                          typical_p=typical_p, tfs_z=tfs_z, mirostat_mode=mirostat_mode)
        try:
            tokens = [int(t) for t in tokens]
            if reset:
                self._prompt(tokens)
            else:
                self.eval(tokens)
            while True:
                token = self._sample(s, logits_processor)
                if stopping_criteria is not None and stopping_criteria(self._input_ids, self._last_logits()):
                    return
                more = yield token
                if self.n_tokens >= self._n_ctx:
                    return
                self.eval([token] + [int(t) for t in (more or [])])
        finally:
            s.close()

    # ---- completions -------------------------------------------------------------------------

    def _tokens(
        self,
        prompt_tokens: List[int],
        max_tokens: Optional[int],
        sampler: _Sampler,
        logits_processor: Optional[LogitsProcessor],
        stopping_criteria: Optional[StoppingCriteria],
        special_ids: frozenset,
        state: Dict[str, Any],
    ) -> Iterator[Tuple[int, bytes, Optional[Tuple[float, List[Tuple[int, float]]]]]]:
        """The generation loop (the C library's DecodeLoop, step for step, with the Python
        callbacks between its evaluation and its sampling): yields (token, its bytes, its
        logprobs) for each generated token; state["finish"] is "stop" or "length" at the end.
        With a cache (set_cache), the prompt's longest cached prefix is looked up first, and the
        state is stored when the generation ends (not when the caller stops it early)."""
        self._need_session()
        self._cache_lookup(prompt_tokens)
        self._prompt(prompt_tokens)
        generated: List[int] = []
        limit = max_tokens if max_tokens is not None and max_tokens > 0 else None
        while True:
            held = self.n_tokens
            token = self._sample(sampler, logits_processor)
            if self._lib.lockstep_token_is_eog(self._model, token) == 1:
                state["finish"] = "stop"
                break
            if stopping_criteria is not None and stopping_criteria(self._input_ids, self._last_logits()):
                state["finish"] = "stop"
                break
            generated.append(token)
            lp = sampler.logprobs() if sampler.n_logprobs > 0 else None
            stop = yield token, self._piece(token, token in special_ids), lp
            # The caller's stop (a stop string matched), the limit, or no room left to
            # evaluate the token (DecodeLoop's ContextFull).
            if stop:
                state["finish"] = "stop"
                break
            if (limit is not None and len(generated) >= limit) or held + 1 > self._n_ctx:
                state["finish"] = "length"
                break
            self.eval([token])
        self._cache_store(prompt_tokens + generated)

    def _completion_chunks(
        self,
        prompt_tokens: List[int],
        prompt_text: str,
        max_tokens: Optional[int],
        stop: Sequence[str],
        sampler: _Sampler,
        logits_processor: Optional[LogitsProcessor],
        stopping_criteria: Optional[StoppingCriteria],
        top_n: Optional[int],
        special_ids: frozenset = frozenset(),
    ) -> Iterator[Tuple[str, Optional[Dict[str, Any]], Optional[str], List[int]]]:
        """(text, logprobs, finish_reason, tokens) pieces of a completion: text as it is
        released (whole characters, stop strings cut and held back), the last with the finish."""
        text = _Text(stop)
        state: Dict[str, Any] = {"finish": "length"}
        lp_tokens: List[str] = []
        lp_offsets: List[int] = []
        lp_values: List[float] = []
        lp_tops: List[Dict[str, float]] = []
        toks: List[int] = []
        t0 = time.perf_counter()
        n_gen = 0

        def logprobs_out() -> Optional[Dict[str, Any]]:
            if top_n is None:
                return None
            out = {"tokens": list(lp_tokens), "text_offset": list(lp_offsets), "token_logprobs": list(lp_values),
                   "top_logprobs": list(lp_tops)}
            lp_tokens.clear(), lp_offsets.clear(), lp_values.clear(), lp_tops.clear()
            return out

        gen = self._tokens(prompt_tokens, max_tokens, sampler, logits_processor, stopping_criteria, special_ids, state)
        try:
            for token, piece, lp in _steps(gen, lambda: text.stopped):
                n_gen += 1
                toks.append(token)
                if top_n is not None and lp is not None:
                    chosen, top = lp
                    tok_str = piece.decode("utf-8", "replace")
                    lp_tokens.append(tok_str)
                    lp_offsets.append(len(prompt_text) + text.n_chars)
                    lp_values.append(chosen)
                    d = {self._piece(i).decode("utf-8", "replace"): v for i, v in top[:top_n]}
                    d[tok_str] = chosen
                    lp_tops.append(d)
                released = text.push(piece)
                if text.stopped:
                    yield released, logprobs_out(), None, toks
                    toks = []
                    continue  # (_steps tells the loop, which ends)
                if released or (top_n is not None and lp_tokens):
                    yield released, logprobs_out(), None, toks
                    toks = []
        finally:
            gen.close()
        tail = text.finish()
        if self.verbose:
            dt = time.perf_counter() - t0
            print(
                f"lockstep: prompt {len(prompt_tokens)} tokens ({self.n_reused} reused), generated {n_gen} tokens "
                f"in {dt:.2f} s",
                file=sys.stderr,
            )
        yield tail, logprobs_out(), state["finish"], toks

    def _prepare_completion(self, prompt: Union[str, List[int]]) -> Tuple[List[int], str]:
        if isinstance(prompt, str):
            tokens = self.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
            return tokens, prompt
        return [int(t) for t in prompt], ""

    def create_completion(
        self,
        prompt: Union[str, List[int]],
        suffix: Optional[str] = None,
        max_tokens: Optional[int] = 16,
        temperature: float = 0.8,
        top_p: float = 0.95,
        min_p: float = 0.05,
        typical_p: float = 1.0,
        logprobs: Optional[int] = None,
        echo: bool = False,
        stop: Optional[Union[str, List[str]]] = [],
        frequency_penalty: float = 0.0,
        presence_penalty: float = 0.0,
        repeat_penalty: float = 1.0,
        top_k: int = 40,
        stream: bool = False,
        seed: Optional[int] = None,
        tfs_z: float = 1.0,
        mirostat_mode: int = 0,
        mirostat_tau: float = 5.0,
        mirostat_eta: float = 0.1,
        model: Optional[str] = None,
        stopping_criteria: Optional[StoppingCriteriaList] = None,
        logits_processor: Optional[LogitsProcessorList] = None,
        grammar: Optional[LlamaGrammar] = None,
        logit_bias: Optional[Dict[int, float]] = None,
    ) -> Union[Dict[str, Any], Iterator[Dict[str, Any]]]:
        """Generates text after `prompt` (text, tokenized with BOS and special tokens parsed,
        or token ids as they are). Returns a text_completion dict, or with stream=True an
        iterator of text_completion chunks, the last one carrying finish_reason.

        logprobs=N: each token's log-probability and the N most likely (from the sampler,
        over the logits as the model gave them, before bias and penalties)."""
        prompt_tokens, prompt_text = self._prepare_completion(prompt)
        if suffix is not None:
            raise NotImplementedError("lockstep: suffix (fill-in-the-middle) is not supported")
        if echo and logprobs is not None:
            raise NotImplementedError("lockstep: echo with logprobs (the prompt's log-probabilities) is not supported")
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        sampler = self._sampler(temperature, top_k, top_p, min_p, repeat_penalty, frequency_penalty, presence_penalty, seed=seed,
                                grammar=grammar, logit_bias=logit_bias, n_logprobs=max(1, logprobs) if logprobs is not None else 0,
                                typical_p=typical_p, tfs_z=tfs_z, mirostat_mode=mirostat_mode)
        cid = f"cmpl-{uuid.uuid4()}"
        created = int(time.time())
        model_name = model if model is not None else self.model_path
        chunks = self._completion_chunks(prompt_tokens, prompt_text, max_tokens, stops, sampler, logits_processor, stopping_criteria,
                                         logprobs)

        def usage(n_completion: int) -> Dict[str, Any]:
            return {"prompt_tokens": len(prompt_tokens), "completion_tokens": n_completion,
                    "total_tokens": len(prompt_tokens) + n_completion,
                    "prompt_tokens_details": {"cached_tokens": self.n_reused}}

        if stream:
            def streamer() -> Iterator[Dict[str, Any]]:
                try:
                    if echo and prompt_text:
                        yield {"id": cid, "object": "text_completion", "created": created, "model": model_name,
                               "choices": [{"text": prompt_text, "index": 0, "logprobs": None, "finish_reason": None}]}
                    n = 0
                    for text, lp, finish, toks in chunks:
                        n += len(toks)
                        if text or lp:
                            yield {"id": cid, "object": "text_completion", "created": created, "model": model_name,
                                   "choices": [{"text": text, "index": 0, "logprobs": lp, "finish_reason": None}]}
                        if finish is not None:
                            yield {"id": cid, "object": "text_completion", "created": created, "model": model_name,
                                   "choices": [{"text": "", "index": 0, "logprobs": None, "finish_reason": finish}],
                                   "usage": usage(n)}
                finally:
                    chunks.close()
                    sampler.close()
            return streamer()

        text, merged, n, finish = _gather(chunks, sampler, logprobs is not None)
        if echo:
            text = prompt_text + text
        return {"id": cid, "object": "text_completion", "created": created, "model": model_name,
                "choices": [{"text": text, "index": 0, "logprobs": merged, "finish_reason": finish}], "usage": usage(n)}

    def __call__(self, prompt: Union[str, List[int]], *args: Any, **kwargs: Any) -> Union[Dict[str, Any], Iterator[Dict[str, Any]]]:
        """create_completion()."""
        return self.create_completion(prompt, *args, **kwargs)

    # ---- chat --------------------------------------------------------------------------------

    def _chat_params(self, messages_json: bytes, tools_json: Optional[bytes]) -> Tuple[_capi.ChatParams, Tuple[Any, ...]]:
        p = self._lib.lockstep_chat_default_params()
        keep: List[Any] = [messages_json]
        p.messages_json = messages_json
        if tools_json is not None:
            p.tools_json = tools_json
            keep.append(tools_json)
        fmt = self.chat_format
        if fmt in _CHAT_FORMATS:
            src = _CHAT_FORMATS[fmt].encode()
            keep.append(src)
            p.template_source = src
        elif fmt and fmt not in ("chat_template.default",):
            name = fmt[len("chat_template."):] if fmt.startswith("chat_template.") else fmt
            b = name.encode()
            keep.append(b)
            p.template_name = b
        p.add_generation_prompt = 1
        p._keep = tuple(keep)  # (p points into these bytes: they live as long as it)
        return p, p._keep

    def _image_messages(self, messages: List[Dict[str, Any]]) -> Tuple[List[Dict[str, Any]], List[bytes]]:
        """The messages with each image_url part as the media marker in its message's text (the
        template places it), and the images' bytes in order (data: URLs, file:// or a path)."""
        images: List[bytes] = []
        out: List[Dict[str, Any]] = []
        for m in messages:
            content = m.get("content")
            if not isinstance(content, list) or not any(isinstance(p, dict) and p.get("type") == "image_url" for p in content):
                out.append(m)
                continue
            text = ""
            for part in content:
                if part.get("type") == "text":
                    text += part.get("text", "")
                elif part.get("type") == "image_url":
                    iu = part.get("image_url")
                    url = iu.get("url") if isinstance(iu, dict) else iu
                    if not isinstance(url, str):
                        raise ValueError("an image_url part needs a url")
                    if url.startswith("data:"):
                        head, sep, data = url.partition(",")
                        if not sep:
                            raise ValueError("the data: URL has no ',' before its data")
                        images.append(base64.b64decode(data, validate=False) if head.endswith(";base64") else urllib.parse.unquote_to_bytes(data))
                    elif url.startswith(("http://", "https://")):
                        raise ValueError("remote image URLs are not fetched: give the image as a data: URL or a file")
                    else:
                        path = url[len("file://"):] if url.startswith("file://") else url
                        with open(path, "rb") as f:
                            images.append(f.read())
                    text += "<__media__>"
                else:
                    raise ValueError(f"content parts of type {part.get('type')!r} are not supported (text, image_url)")
            out.append({**m, "content": text})
        return out, images

    def _render_chat(self, messages: List[Dict[str, Any]], tools: Optional[List[Dict[str, Any]]]) -> Tuple[List[int], _capi.ChatParams, Tuple[Any, ...]]:
        messages, images = self._image_messages(messages)
        if images and not self._vision:
            raise ValueError("the messages hold images: load the model's projector with Llama(..., mmproj=FILE)")
        msgs = json.dumps(messages, ensure_ascii=False).encode("utf-8")
        tj = json.dumps(tools, ensure_ascii=False).encode("utf-8") if tools else None
        p, keep = self._chat_params(msgs, tj)
        n = c_size_t()
        add_bos = c_int32()
        cap = 8192
        while True:
            buf = ctypes.create_string_buffer(cap)
            status = self._lib.lockstep_chat_render(self._model, byref(p), buf, cap, byref(n), byref(add_bos))
            if status == _capi.ERR_BUFFER_TOO_SMALL and n.value + 1 > cap:
                cap = n.value + 1
                continue
            _capi.check(status)
            break
        text = buf.raw[: n.value]
        if not images:
            return self.tokenize(text, add_bos=bool(add_bos.value), special=True), p, keep
        # The prompt through its last image is evaluated here (what the sequence holds kept, only
        # new images encoded); its ids carry each image's tokens as a negative tag, which the
        # prefix rule then finds held.
        self._need_session()
        bufs = (c_char_p * len(images))(*images)
        lens = (c_size_t * len(images))(*[len(b) for b in images])
        ids = (c_int32 * self._n_ctx)()
        n_ids, n_enc = c_int32(), c_int32()
        status = self._lib.lockstep_vision_prompt(self._vision, self._session, 0, text, len(text), add_bos.value, bufs, lens, len(images),
                                                  ids, self._n_ctx, byref(n_ids), byref(n_enc))
        if status != _capi.OK:
            err = _capi.error(status)
            self._sync()
            raise err
        self.n_images_encoded = int(n_enc.value)
        self._sync()
        return list(ids[: n_ids.value]), p, keep

    def create_chat_completion(
        self,
        messages: List[Dict[str, Any]],
        functions: Optional[List[Dict[str, Any]]] = None,
        function_call: Optional[Union[str, Dict[str, Any]]] = None,
        tools: Optional[List[Dict[str, Any]]] = None,
        tool_choice: Optional[Union[str, Dict[str, Any]]] = None,
        temperature: float = 0.2,
        top_p: float = 0.95,
        top_k: int = 40,
        min_p: float = 0.05,
        typical_p: float = 1.0,
        stream: bool = False,
        stop: Optional[Union[str, List[str]]] = [],
        seed: Optional[int] = None,
        response_format: Optional[Dict[str, Any]] = None,
        max_tokens: Optional[int] = None,
        presence_penalty: float = 0.0,
        frequency_penalty: float = 0.0,
        repeat_penalty: float = 1.0,
        tfs_z: float = 1.0,
        mirostat_mode: int = 0,
        mirostat_tau: float = 5.0,
        mirostat_eta: float = 0.1,
        model: Optional[str] = None,
        logits_processor: Optional[LogitsProcessorList] = None,
        grammar: Optional[LlamaGrammar] = None,
        logit_bias: Optional[Dict[int, float]] = None,
        logprobs: Optional[bool] = None,
        top_logprobs: Optional[int] = None,
        parallel_tool_calls: bool = True,
    ) -> Union[Dict[str, Any], Iterator[Dict[str, Any]]]:
        """Answers a conversation (OpenAI messages) in the model's chat template. Returns a
        chat.completion dict, or with stream=True an iterator of chat.completion.chunk dicts.

        The prompt goes through the session's prefix rule, so a conversation's next turn
        evaluates only what is new. tools / tool_choice ("none", "auto", "required" or
        {"type": "function", "function": {"name": ...}}; a forced call is constrained by a
        grammar of the format's call with the function's parameters), response_format
        ({"type": "json_object"} with an optional "schema", or {"type": "json_schema",
        "json_schema": {"schema": ...}}) and grammar constrain the reply. The reply is read as
        the server reads it (the C library's reply reader): reasoning the template marks
        (<think>, channels) comes as reasoning_content, stop strings end the visible text, and
        with tools the calls come as tool_calls, streamed as they are written (announced with
        id and name, then their arguments in pieces)."""
        if functions:
            tools = [{"type": "function", "function": f} for f in functions]
        if function_call is not None:
            tool_choice = function_call if isinstance(function_call, str) else {"type": "function", "function": {"name": function_call["name"]}}
        if tools is not None and len(tools) == 0:
            tools = None
        choice = tool_choice if tool_choice is not None else ("auto" if tools else "none")
        if choice != "none" and not tools:
            raise ValueError("tool_choice asks for a tool call, but tools is empty")
        call_tools = choice != "none"
        forced_name: Optional[str] = None
        if isinstance(choice, dict):
            forced_name = choice.get("function", {}).get("name")
            if not forced_name or not any(t.get("function", {}).get("name") == forced_name for t in tools or []):
                raise ValueError(f"Tool choice '{forced_name}' not found in tools.")
        elif choice not in ("none", "auto", "required"):
            raise ValueError("tool_choice must be 'none', 'auto', 'required' or {'type': 'function', 'function': {'name': ...}}")

        prompt_tokens, cp, keep = self._render_chat(messages, tools if call_tools else None)

        gbnf: Optional[str] = None
        schema: Optional[str] = None
        if response_format is not None:
            kind = response_format.get("type")
            if kind == "json_object":
                schema = json.dumps(response_format.get("schema", {"type": "object"}))
            elif kind == "json_schema":
                schema = json.dumps(response_format.get("json_schema", {}).get("schema", {}))
            elif kind != "text":
                raise ValueError(f"response_format: type must be 'text', 'json_object' or 'json_schema', got {kind!r}")
        if grammar is not None:
            if schema is not None:
                raise ValueError("grammar and response_format both constrain the output: give one")
            gbnf, schema = grammar.gbnf, grammar.json_schema
        if call_tools and (choice == "required" or forced_name is not None):
            if gbnf is not None or schema is not None:
                raise ValueError("tool_choice forces a tool call: it cannot be combined with a grammar or response_format")
            gbnf = _capi.read_text(
                self._lib.lockstep_chat_tool_grammar, self._model, byref(cp),
                forced_name.encode() if forced_name else None, 1 if parallel_tool_calls else 0,
            ).decode("utf-8")

        top_n = (top_logprobs or 0) if logprobs else None
        sampler = self._sampler(temperature, top_k, top_p, min_p, repeat_penalty, frequency_penalty, presence_penalty, seed=seed,
                                gbnf=gbnf, json_schema=schema, logit_bias=logit_bias,
                                n_logprobs=max(1, top_n) if top_n is not None else 0,
                                typical_p=typical_p, tfs_z=tfs_z, mirostat_mode=mirostat_mode)
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        cid = f"chatcmpl-{uuid.uuid4()}"
        created = int(time.time())
        model_name = model if model is not None else self.model_path
        reader = _ReplyReader(self, cp, call_tools, stops, f"call_{cid[len('chatcmpl-'):]}_")
        chunks = self._chat_chunks(prompt_tokens, max_tokens, sampler, logits_processor, top_n, reader)

        def usage(n: int) -> Dict[str, Any]:
            return {"prompt_tokens": len(prompt_tokens), "completion_tokens": n, "total_tokens": len(prompt_tokens) + n,
                    "prompt_tokens_details": {"cached_tokens": self.n_reused}}

        def finish_of(fin: str) -> str:
            called = bool(reader.message.get("tool_calls"))
            return "tool_calls" if called and (fin == "stop" or forced_name is not None or choice == "required") else fin

        if not stream:
            try:
                lps: List[Dict[str, Any]] = []
                n, fin = 0, "length"
                for _deltas, lp, f, k in chunks:
                    n += k
                    if lp:
                        lps += lp
                    fin = f or fin
            finally:
                chunks.close()
                sampler.close()
            msg = reader.message
            message: Dict[str, Any] = {"role": "assistant", "content": msg.get("content")}
            if msg.get("reasoning_content"):
                message["reasoning_content"] = msg["reasoning_content"]
            if msg.get("tool_calls"):
                message["tool_calls"] = msg["tool_calls"]
            logprobs_out = {"content": lps, "refusal": None} if top_n is not None else None
            return {"id": cid, "object": "chat.completion", "created": created, "model": model_name,
                    "choices": [{"index": 0, "message": message, "logprobs": logprobs_out, "finish_reason": finish_of(fin)}],
                    "usage": usage(n)}

        def chunk(delta: Dict[str, Any], finish: Optional[str] = None, lp: Optional[List[Dict[str, Any]]] = None,
                  **extra: Any) -> Dict[str, Any]:
            out = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model_name,
                   "choices": [{"index": 0, "delta": delta, "logprobs": {"content": lp, "refusal": None} if lp else None,
                                "finish_reason": finish}]}
            out.update(extra)
            return out

        def streamer() -> Iterator[Dict[str, Any]]:
            try:
                yield chunk({"role": "assistant"})
                n = 0
                for deltas, lp, fin, k in chunks:
                    n += k
                    # (a token's logprobs with the first delta it released, or alone)
                    for i, d in enumerate(deltas or ([{"content": ""}] if lp else [])):
                        yield chunk(d, None, lp if i == 0 else None)
                    if fin is not None:
                        yield chunk({}, finish_of(fin), usage=usage(n))
            finally:
                chunks.close()
                sampler.close()
        return streamer()

    def _chat_chunks(
        self,
        prompt_tokens: List[int],
        max_tokens: Optional[int],
        sampler: _Sampler,
        logits_processor: Optional[LogitsProcessor],
        top_n: Optional[int],
        reader: "_ReplyReader",
    ) -> Iterator[Tuple[List[Dict[str, Any]], Optional[List[Dict[str, Any]]], Optional[str], int]]:
        """(deltas, logprobs, finish_reason, tokens) of a chat reply: each generated token's
        deltas as the reader (the C library's, the server's pipeline) releases them (content,
        reasoning_content, tool_calls, in order), with the token's logprobs; the last with the
        finish."""
        state: Dict[str, Any] = {"finish": "length"}
        gen = self._tokens(prompt_tokens, max_tokens, sampler, logits_processor, None, frozenset(), state)
        try:
            for token, piece, lp in _steps(gen, lambda: reader.stopped):
                entry = None
                if top_n is not None and lp is not None:
                    chosen, top = lp
                    t = piece.decode("utf-8", "replace")
                    tops = [{"token": self._piece(i).decode("utf-8", "replace"), "logprob": v} for i, v in top[:top_n]]
                    entry = [{"token": t, "bytes": list(piece), "logprob": chosen,
                              "top_logprobs": [dict(x, bytes=list(x["token"].encode("utf-8"))) for x in tops]}]
                yield reader.push(token), entry, None, 1
        finally:
            gen.close()
        yield reader.finish(), None, state["finish"], 0

    # ---- embeddings --------------------------------------------------------------------------

    def embed(
        self, input: Union[str, List[str]], normalize: bool = False, truncate: bool = True, return_count: bool = False
    ) -> Any:
        """Embeddings of a text or a list of texts: pooled as the model's GGUF says (one
        vector per text), or, for a model that names no pooling, one vector per token.
        normalize: euclidean. The sequence is emptied afterwards (as llama-cpp-python does)."""
        self._need_session()
        inputs = [input] if isinstance(input, str) else list(input)
        n_embd = self.n_embd()
        pooling = self._pooling if self._pooling >= 0 else self.pooling_type()
        pooled = pooling != _capi.POOLING_NONE
        out: List[Any] = []
        total = 0
        try:
            for text in inputs:
                toks = self.tokenize(text.encode("utf-8"), add_bos=True, special=False)
                if truncate:
                    toks = toks[: self.n_batch]
                elif len(toks) > self.n_batch:
                    raise ValueError(f"Requested tokens ({len(toks)}) exceed batch size of {self.n_batch}")
                total += len(toks)
                arr = (c_int32 * len(toks))(*toks)
                if pooled:
                    vec = (c_float * n_embd)()
                    _capi.check(self._lib.lockstep_embed(self._session, 0, arr, len(toks), pooling, 2 if normalize else -1, vec, n_embd))
                    out.append(list(vec))
                else:
                    _capi.check(self._lib.lockstep_session_reset(self._session))
                    flags = (c_int8 * len(toks))(*([1] * len(toks)))
                    batch = _capi.Batch(len(toks), arr, None, None, flags)
                    _capi.check(self._lib.lockstep_decode_hidden(self._session, byref(batch)))
                    rows, nrows, rowlen = POINTER(c_float)(), c_int32(), c_int64()
                    _capi.check(self._lib.lockstep_get_outputs(self._session, byref(rows), byref(nrows), byref(rowlen)))
                    m = np.ctypeslib.as_array(rows, shape=(nrows.value, rowlen.value)).astype(np.float64)
                    if normalize:
                        m = m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-30)
                    out.append(m.tolist())
        finally:
            self.reset()
        result = out[0] if isinstance(input, str) else out
        return (result, total) if return_count else result

    def create_embedding(self, input: Union[str, List[str]], model: Optional[str] = None) -> Dict[str, Any]:
        """OpenAI's embedding response for a text or a list of texts."""
        embeds, total = self.embed(input, return_count=True)
        if isinstance(input, str):
            embeds = [embeds]
        return {"object": "list", "data": [{"object": "embedding", "embedding": e, "index": i} for i, e in enumerate(embeds)],
                "model": model if model is not None else self.model_path,
                "usage": {"prompt_tokens": total, "total_tokens": total}}

    # ---- state -------------------------------------------------------------------------------

    def save_state(self) -> LlamaState:
        """The sequence as it is: its memory as bytes (tokens, KV rows, recurrent state)."""
        self._need_session()
        self._sync()
        n = c_size_t()
        _capi.check(self._lib.lockstep_state_seq_size(self._session, 0, byref(n)))
        buf = (c_uint8 * n.value)()
        out = c_size_t()
        _capi.check(self._lib.lockstep_state_seq_save(self._session, 0, buf, n.value, byref(out)))
        return LlamaState(input_ids=self.input_ids.copy(), scores=self._scores.copy(), n_tokens=self.n_tokens,
                          llama_state=bytes(buf)[: out.value], llama_state_size=out.value, seed=self._seed)

    def load_state(self, state: LlamaState) -> None:
        """Makes the sequence what save_state() took (a session of the same model and cache
        types; checked before anything changes)."""
        self._need_session()
        data = (c_uint8 * state.llama_state_size).from_buffer_copy(state.llama_state[: state.llama_state_size])
        _capi.check(self._lib.lockstep_state_seq_load(self._session, 0, data, state.llama_state_size))
        self.input_ids[: len(state.input_ids)] = state.input_ids[: self._n_ctx]
        self.n_tokens = state.n_tokens
        if self._logits_all:
            self.scores[: state.n_tokens, :] = state.scores[: state.n_tokens]
        elif len(state.scores):
            self.scores[0, :] = state.scores[-1]
        self._has_logits = False  # (the logits are not part of the state: the next prompt re-evaluates a token)
        self._seed = state.seed
        self._sync()

    def set_cache(self, cache: Optional[BaseLlamaCache]) -> None:
        """Completions look up their prompt's longest cached prefix in `cache` first (loading
        that state when it keeps more than the sequence's own memory), and store their state
        in it when they end, keyed by prompt and completion tokens. None: no cache."""
        self.cache = cache

    def _cache_lookup(self, prompt: List[int]) -> None:
        if self.cache is None:
            return
        try:
            item = self.cache[prompt]
        except KeyError:
            if self.verbose:
                print("lockstep: prompt cache miss", file=sys.stderr)
            return
        self._sync()
        held = self.longest_token_prefix(item.input_ids[: item.n_tokens].tolist(), prompt)
        if held > self.longest_token_prefix(self.input_ids[: self.n_tokens].tolist(), prompt):
            self.load_state(item)
            if self.verbose:
                print(f"lockstep: prompt cache hit ({held} tokens)", file=sys.stderr)

    def _cache_store(self, tokens: List[int]) -> None:
        if self.cache is not None:
            self.cache[tokens] = self.save_state()

    def set_seed(self, seed: int) -> None:
        """The seed of the next generations."""
        self._seed = int(seed)

    # ---- lifetime ----------------------------------------------------------------------------

    def close(self) -> None:
        """Frees the session and the model now."""
        lib = getattr(self, "_lib", None)
        if lib is None:
            return
        if getattr(self, "_vision", None):
            lib.lockstep_vision_free(self._vision)
            self._vision = c_void_p()
        if getattr(self, "_session", None):
            lib.lockstep_session_free(self._session)
            self._session = c_void_p()
        if getattr(self, "_model", None):
            lib.lockstep_model_free(self._model)
            self._model = c_void_p()

    def __del__(self) -> None:
        self.close()

    def __getstate__(self) -> Dict[str, Any]:
        return dict(model_path=self.model_path, **self._init_kwargs)

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]

    @staticmethod
    def logits_to_logprobs(logits: Union[npt.NDArray[np.single], List[float]], axis: int = -1) -> npt.NDArray[np.single]:
        """log-softmax."""
        x = np.asarray(logits, dtype=np.single)
        m = np.max(x, axis=axis, keepdims=True)
        m = np.where(np.isfinite(m), m, 0)
        y = x - m
        with np.errstate(divide="ignore"):
            return (y - np.log(np.sum(np.exp(y), axis=axis, keepdims=True))).astype(np.single)

    longest_token_prefix = staticmethod(longest_token_prefix)
