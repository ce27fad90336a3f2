"""ctypes declarations of lockstep's C API (include/lockstep.h), and its errors as Python exceptions.

The bindings are plain ctypes over liblockstep: no compiled extension, so one wheel serves
every CPython 3 (one ABI: the C one), and the C API, versioned and checked by its own tests,
is the only surface the package depends on. Every declaration below mirrors the header; a
mismatch of the interface version is refused when the library is loaded.
"""

from __future__ import annotations

import ctypes
import os
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_float,
    c_int,
    c_int8,
    c_int32,
    c_int64,
    c_size_t,
    c_uint8,
    c_uint64,
    c_void_p,
)
from typing import Optional

API_VERSION = 2  # LOCKSTEP_API_VERSION of the header these declarations follow

OK = 0
ERR_INVALID_ARGUMENT = -1
ERR_OUT_OF_RANGE = -2
ERR_BUFFER_TOO_SMALL = -3
ERR_NOT_FOUND = -4
ERR_IO = -5
ERR_FORMAT = -6
ERR_TOO_LONG = -7
ERR_UNSUPPORTED = -8
ERR_TEMPLATE = -9
ERR_GRAMMAR = -10
ERR_OUT_OF_MEMORY = -11
ERR_RUNTIME = -12
ERR_INTERNAL = -13

TYPE_F32 = 0
TYPE_F16 = 1
TYPE_Q4_0 = 2
TYPE_Q8_0 = 8

POOLING_MODEL = -1
POOLING_NONE = 0
POOLING_MEAN = 1
POOLING_CLS = 2
POOLING_LAST = 3

END_EOG = 0
END_STOPPED = 1
END_LIMIT = 2
END_CONTEXT_FULL = 3


# ---- errors ---------------------------------------------------------------------------------


class LockstepError(RuntimeError):
    """A call into liblockstep failed. `status` is the C status code (LOCKSTEP_ERR_*),
    `status_name` its name, and the text is the library's own message."""

    def __init__(self, status: int, status_name: str, message: str):
        super().__init__(message)
        self.status = status
        self.status_name = status_name
        self.message = message


class LockstepValueError(LockstepError, ValueError):
    """A bad argument, an id or position out of range, or more tokens than the context holds."""


class LockstepFileError(LockstepError, OSError):
    """A file that cannot be opened, read or written (a model path that does not exist)."""

    def __str__(self) -> str:  # (OSError's own would print the arguments' tuple)
        return self.message


class LockstepFormatError(LockstepError, ValueError):
    """A broken or truncated GGUF file, or a damaged or foreign state."""


class LockstepUnsupportedError(LockstepError, NotImplementedError):
    """What the model or its memory cannot do."""


class LockstepTemplateError(LockstepError, ValueError):
    """A chat template that does not parse or render."""


class LockstepGrammarError(LockstepError, ValueError):
    """A grammar or JSON schema that does not parse, or that no token can continue."""


_ERROR_CLASSES = {
    ERR_INVALID_ARGUMENT: LockstepValueError,
    ERR_OUT_OF_RANGE: LockstepValueError,
    ERR_TOO_LONG: LockstepValueError,
    ERR_NOT_FOUND: LockstepValueError,
    ERR_IO: LockstepFileError,
    ERR_FORMAT: LockstepFormatError,
    ERR_UNSUPPORTED: LockstepUnsupportedError,
    ERR_TEMPLATE: LockstepTemplateError,
    ERR_GRAMMAR: LockstepGrammarError,
    ERR_OUT_OF_MEMORY: LockstepError,
}


def error(status: int) -> LockstepError:
    """The exception for a failed call's status, with this thread's message from the library."""
    lib = library()
    message = lib.lockstep_last_error().decode("utf-8", "replace")
    name = lib.lockstep_status_name(status).decode("ascii")
    cls = _ERROR_CLASSES.get(status, LockstepError)
    if status == ERR_OUT_OF_MEMORY:
        return MemoryError(message)  # type: ignore[return-value]
    return cls(status, name, message)


def check(status: int) -> None:
    """Raises the exception for a status other than LOCKSTEP_OK."""
    if status != OK:
        raise error(status)


# ---- structs (the header's, field for field) --------------------------------------------------


class ModelParams(Structure):
    _fields_ = [
        ("backend", c_char_p),
        ("device", c_int32),
        ("n_threads", c_int32),
        ("devices", c_char_p),
        ("n_gpu_layers", c_int32),
        ("split_mode", c_int32),
        ("tensor_split", POINTER(c_float)),
        ("n_tensor_split", c_int32),
        ("use_mmap", c_int32),
        ("vocab_only", c_int32),
    ]


class SessionParams(Structure):
    _fields_ = [
        ("n_ctx", c_int64),
        ("n_batch", c_int64),
        ("n_ubatch", c_int64),
        ("n_seq", c_int32),
        ("type_k", c_int32),
        ("type_v", c_int32),
    ]


class Batch(Structure):
    _fields_ = [
        ("n_tokens", c_int32),
        ("tokens", POINTER(c_int32)),
        ("pos", POINTER(c_int32)),
        ("seq_id", POINTER(c_int32)),
        ("logits", POINTER(c_int8)),
    ]


class SamplerParams(Structure):
    _fields_ = [
        ("temp", c_float),
        ("top_k", c_int32),
        ("top_p", c_float),
        ("min_p", c_float),
        ("repeat_penalty", c_float),
        ("frequency_penalty", c_float),
        ("presence_penalty", c_float),
        ("repeat_last_n", c_int32),
        ("seed", c_uint64),
        ("stream", c_uint64),
        ("logit_bias_tokens", POINTER(c_int32)),
        ("logit_bias_values", POINTER(c_float)),
        ("n_logit_bias", c_int32),
        ("grammar", c_char_p),
        ("json_schema", c_char_p),
        ("n_logprobs", c_int32),
    ]


class GenerateResult(Structure):
    _fields_ = [
        ("n_generated", c_int32),
        ("end_reason", c_int32),
        ("n_reused", c_int64),
        ("n_evaluated", c_int64),
    ]


class ChatParams(Structure):
    _fields_ = [
        ("messages_json", c_char_p),
        ("tools_json", c_char_p),
        ("kwargs_json", c_char_p),
        ("template_source", c_char_p),
        ("template_name", c_char_p),
        ("add_generation_prompt", c_int32),
    ]


TokenCallback = CFUNCTYPE(c_int32, c_void_p, c_int32, POINTER(c_char), c_int32)

# name: (restype, argtypes)
_P = c_void_p  # opaque handles
_SIGNATURES = {
    "lockstep_api_version": (c_int32, []),
    "lockstep_version": (c_char_p, []),
    "lockstep_last_error": (c_char_p, []),
    "lockstep_status_name": (c_char_p, [c_int]),
    # models
    "lockstep_model_default_params": (ModelParams, []),
    "lockstep_model_load": (c_int, [c_char_p, POINTER(ModelParams), POINTER(_P)]),
    "lockstep_model_free": (None, [_P]),
    "lockstep_model_n_vocab": (c_int32, [_P]),
    "lockstep_model_n_ctx_train": (c_int64, [_P]),
    "lockstep_model_n_embd": (c_int64, [_P]),
    "lockstep_model_n_layer": (c_int32, [_P]),
    "lockstep_model_has_logits": (c_int32, [_P]),
    "lockstep_model_is_recurrent": (c_int32, [_P]),
    "lockstep_model_is_hybrid": (c_int32, [_P]),
    "lockstep_model_vocab_only": (c_int32, [_P]),
    "lockstep_model_pooling": (c_int32, [_P]),
    "lockstep_model_size": (c_int64, [_P]),
    "lockstep_model_meta_count": (c_int32, [_P]),
    "lockstep_model_meta_key": (c_int, [_P, c_int32, c_char_p, c_size_t, POINTER(c_size_t)]),
    "lockstep_model_meta_get": (c_int, [_P, c_char_p, c_char_p, c_size_t, POINTER(c_size_t)]),
    "lockstep_model_chat_template": (c_int, [_P, c_char_p, c_char_p, c_size_t, POINTER(c_size_t)]),
    # tokens
    "lockstep_token_bos": (c_int32, [_P]),
    "lockstep_token_eos": (c_int32, [_P]),
    "lockstep_token_eot": (c_int32, [_P]),
    "lockstep_model_add_bos": (c_int32, [_P]),
    "lockstep_token_is_eog": (c_int32, [_P, c_int32]),
    "lockstep_token_type": (c_int32, [_P, c_int32]),
    "lockstep_tokenize": (c_int, [_P, c_char_p, c_size_t, c_int32, c_int32, POINTER(c_int32), c_int32, POINTER(c_int32)]),
    "lockstep_detokenize": (c_int, [_P, POINTER(c_int32), c_int32, c_int32, c_char_p, c_size_t, POINTER(c_size_t)]),
    "lockstep_token_piece": (c_int, [_P, c_int32, c_int32, POINTER(c_void_p), POINTER(c_int32)]),
    # sessions
    "lockstep_session_default_params": (SessionParams, []),
    "lockstep_session_new": (c_int, [_P, POINTER(SessionParams), POINTER(_P)]),
    "lockstep_session_free": (None, [_P]),
    "lockstep_session_n_ctx": (c_int64, [_P]),
    "lockstep_session_n_ubatch": (c_int64, [_P]),
    "lockstep_session_n_seq": (c_int32, [_P]),
    "lockstep_decode": (c_int, [_P, POINTER(Batch)]),
    "lockstep_decode_hidden": (c_int, [_P, POINTER(Batch)]),
    "lockstep_get_logits": (c_int, [_P, c_int32, POINTER(POINTER(c_float))]),
    "lockstep_get_hidden": (c_int, [_P, c_int32, POINTER(POINTER(c_float))]),
    "lockstep_get_outputs": (c_int, [_P, POINTER(POINTER(c_float)), POINTER(c_int32), POINTER(c_int64)]),
    "lockstep_seq_len": (c_int64, [_P, c_int32]),
    "lockstep_seq_tokens": (c_int, [_P, c_int32, POINTER(POINTER(c_int32)), POINTER(c_int64)]),
    "lockstep_seq_rm": (c_int, [_P, c_int32, c_int64]),
    "lockstep_seq_cp": (c_int, [_P, c_int32, c_int32, c_int64]),
    "lockstep_seq_keep": (c_int, [_P, c_int32]),
    "lockstep_session_reset": (c_int, [_P]),
    "lockstep_seq_reuse_prefix": (c_int, [_P, c_int32, POINTER(c_int32), c_int64, POINTER(c_int64)]),
    "lockstep_seq_checkpoint": (c_int, [_P, c_int32, POINTER(c_int32)]),
    # state
    "lockstep_state_seq_size": (c_int, [_P, c_int32, POINTER(c_size_t)]),
    "lockstep_state_seq_save": (c_int, [_P, c_int32, POINTER(c_uint8), c_size_t, POINTER(c_size_t)]),
    "lockstep_state_seq_load": (c_int, [_P, c_int32, POINTER(c_uint8), c_size_t]),
    "lockstep_state_seq_save_file": (c_int, [_P, c_int32, c_char_p]),
    "lockstep_state_seq_load_file": (c_int, [_P, c_int32, c_char_p]),
    # embeddings
    "lockstep_embed": (c_int, [_P, c_int32, POINTER(c_int32), c_int32, c_int32, c_int32, POINTER(c_float), c_int64]),
    # sampling
    "lockstep_sampler_default_params": (SamplerParams, []),
    "lockstep_sampler_new": (c_int, [_P, POINTER(SamplerParams), POINTER(_P)]),
    "lockstep_sampler_free": (None, [_P]),
    "lockstep_sampler_reset": (c_int, [_P]),
    "lockstep_sampler_sample": (c_int, [_P, _P, c_int32, c_int32, POINTER(c_int32)]),
    "lockstep_sampler_sample_logits": (
        c_int,
        [_P, POINTER(c_float), c_int32, POINTER(c_int32), c_int64, c_int64, POINTER(c_int32)],
    ),
    "lockstep_sampler_logprobs": (c_int, [_P, POINTER(c_float), POINTER(c_int32), POINTER(c_float), c_int32, POINTER(c_int32)]),
    # generation
    "lockstep_generate": (
        c_int,
        [_P, _P, c_int32, POINTER(c_int32), c_int32, c_int32, TokenCallback, c_void_p, POINTER(GenerateResult)],
    ),
    # images
    "lockstep_vision_load": (c_int, [c_char_p, _P, POINTER(_P)]),
    "lockstep_vision_free": (None, [_P]),
    "lockstep_vision_prompt": (
        c_int,
        [_P, _P, c_int32, c_char_p, c_size_t, c_int32, POINTER(c_char_p), POINTER(c_size_t), c_int32, POINTER(c_int32), c_int32,
         POINTER(c_int32), POINTER(c_int32)],
    ),
    # chat
    "lockstep_chat_default_params": (ChatParams, []),
    "lockstep_chat_render": (c_int, [_P, POINTER(ChatParams), c_char_p, c_size_t, POINTER(c_size_t), POINTER(c_int32)]),
    "lockstep_chat_tool_format": (c_int, [_P, POINTER(ChatParams), c_char_p, c_size_t, POINTER(c_size_t)]),
    "lockstep_chat_tool_grammar": (c_int, [_P, POINTER(ChatParams), c_char_p, c_int32, c_char_p, c_size_t, POINTER(c_size_t)]),
    "lockstep_chat_parse": (c_int, [_P, POINTER(ChatParams), c_char_p, c_size_t, c_char_p, c_size_t, POINTER(c_size_t)]),
    # reading a reply
    "lockstep_reply_reader_new": (c_int, [_P, POINTER(ChatParams), c_int32, c_char_p, c_char_p, POINTER(_P)]),
    "lockstep_reply_reader_push": (c_int, [_P, c_int32, POINTER(c_int32)]),
    "lockstep_reply_reader_finish": (c_int, [_P]),
    "lockstep_reply_reader_take": (c_int, [_P, c_char_p, c_size_t, POINTER(c_size_t)]),
    "lockstep_reply_reader_message": (c_int, [_P, c_char_p, c_size_t, POINTER(c_size_t)]),
    "lockstep_reply_reader_free": (None, [_P]),
}

_lib: Optional[ctypes.CDLL] = None


def library_path() -> str:
    """Where liblockstep is loaded from: $LOCKSTEP_LIBRARY (a development build's
    build/liblockstep.so), else the copy inside this package."""
    env = os.environ.get("LOCKSTEP_LIBRARY")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "liblockstep.so")


def library() -> ctypes.CDLL:
    """liblockstep, loaded once, its functions declared; refuses another interface version."""
    global _lib
    if _lib is not None:
        return _lib
    path = library_path()
    if not os.path.exists(path):
        raise ImportError(
            f"lockstep: no liblockstep at {path} (install the package with pip, or set LOCKSTEP_LIBRARY to a built liblockstep.so)"
        )
    lib = ctypes.CDLL(path)
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    version = lib.lockstep_api_version()
    if version != API_VERSION:
        raise ImportError(f"lockstep: {path} has C API version {version}; these bindings are for version {API_VERSION}")
    _lib = lib
    return lib


def read_text(call, *args) -> bytes:
    """Calls a function that fills a caller's buffer by the header's buffer rule (..., buf,
    buf_len, n_out): asks with a modest buffer, and again with the size it said it needs."""
    n = c_size_t(0)
    cap = 4096
    while True:
        buf = ctypes.create_string_buffer(cap)
        status = call(*args, buf, cap, ctypes.byref(n))
        if status == OK:
            return buf.raw[: n.value]
        if status == ERR_BUFFER_TOO_SMALL and n.value + 1 > cap:
            cap = n.value + 1
            continue
        raise error(status)
