"""lockstep: GGUF models through lockstep's C API, with llama-cpp-python's interface.

    from lockstep import Llama
    llm = Llama(model_path="model.gguf", n_ctx=2048)
    llm.create_chat_completion(messages=[{"role": "user", "content": "Hi"}])
"""

from ._capi import (
    LockstepError,
    LockstepFileError,
    LockstepFormatError,
    LockstepGrammarError,
    LockstepTemplateError,
    LockstepUnsupportedError,
    LockstepValueError,
)
from .cache import BaseLlamaCache, LlamaCache, LlamaRAMCache
from .llama import (
    LLAMA_DEFAULT_SEED,
    Llama,
    LlamaGrammar,
    LlamaState,
    LogitsProcessor,
    LogitsProcessorList,
    StoppingCriteria,
    StoppingCriteriaList,
)


def library_version() -> str:
    """The version of the liblockstep these bindings loaded."""
    from ._capi import library

    return library().lockstep_version().decode()


__all__ = [
    "BaseLlamaCache",
    "LLAMA_DEFAULT_SEED",
    "Llama",
    "LlamaCache",
    "LlamaRAMCache",
    "LlamaGrammar",
    "LlamaState",
    "LockstepError",
    "LockstepFileError",
    "LockstepFormatError",
    "LockstepGrammarError",
    "LockstepTemplateError",
    "LockstepUnsupportedError",
    "LockstepValueError",
    "LogitsProcessor",
    "LogitsProcessorList",
    "StoppingCriteria",
    "StoppingCriteriaList",
    "library_version",
]
