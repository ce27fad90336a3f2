"""Prompt caches with llama-cpp-python's interface: a Llama with a cache (Llama.set_cache)
looks up the longest cached prefix of each prompt before it evaluates it, loads that state
when it keeps more than the sequence's own memory does, and stores the state after each
completion, keyed by its prompt and completion tokens. So one Llama can serve several
conversations in turn and resume each where it was."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from typing import TYPE_CHECKING, Optional, Sequence, Tuple

if TYPE_CHECKING:
    from .llama import LlamaState


def longest_token_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens a and b share (Llama.longest_token_prefix)."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class BaseLlamaCache(ABC):
    """A cache of sequence states keyed by their token sequences, up to capacity_bytes."""

    def __init__(self, capacity_bytes: int = (2 << 30)):
        self.capacity_bytes = capacity_bytes

    @property
    @abstractmethod
    def cache_size(self) -> int:
        """The bytes the states held take."""

    @abstractmethod
    def __getitem__(self, key: Sequence[int]) -> "LlamaState":
        """The state whose key shares the longest prefix with `key` (KeyError: none shares any)."""

    @abstractmethod
    def __contains__(self, key: Sequence[int]) -> bool:
        ...

    @abstractmethod
    def __setitem__(self, key: Sequence[int], value: "LlamaState") -> None:
        ...


class LlamaRAMCache(BaseLlamaCache):
    """States in memory, the least recently used dropped first beyond capacity_bytes."""

    def __init__(self, capacity_bytes: int = (2 << 30)):
        super().__init__(capacity_bytes)
        self.cache_state: "OrderedDict[Tuple[int, ...], LlamaState]" = OrderedDict()

    @property
    def cache_size(self) -> int:
        return sum(state.llama_state_size for state in self.cache_state.values())

    def _find_longest_prefix_key(self, key: Tuple[int, ...]) -> Optional[Tuple[int, ...]]:
        best, best_key = 0, None
        for k in self.cache_state:
            n = longest_token_prefix(k, key)
            if n > best:
                best, best_key = n, k
        return best_key

    def __getitem__(self, key: Sequence[int]) -> "LlamaState":
        found = self._find_longest_prefix_key(tuple(key))
        if found is None:
            raise KeyError("Key not found")
        self.cache_state.move_to_end(found)
        return self.cache_state[found]

    def __contains__(self, key: Sequence[int]) -> bool:
        return self._find_longest_prefix_key(tuple(key)) is not None

    def __setitem__(self, key: Sequence[int], value: "LlamaState") -> None:
        key = tuple(key)
        self.cache_state.pop(key, None)
        self.cache_state[key] = value
        while self.cache_size > self.capacity_bytes and len(self.cache_state) > 0:
            self.cache_state.popitem(last=False)


LlamaCache = LlamaRAMCache  # (llama-cpp-python's older name)
