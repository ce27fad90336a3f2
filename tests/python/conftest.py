"""Fixtures of the Python package's tests: where the models are (run_python_tests.sh says, in
LOCKSTEP_TEST_DATA, LOCKSTEP_TEST_MODELS and LOCKSTEP_TEST_CLI), and the tiny models' sizes
as the server tests use them."""

import os

import pytest


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run the suite through tests/python/run_python_tests.sh (CTest: python)")
    return value


@pytest.fixture(scope="session")
def data_dir() -> str:
    return _env("LOCKSTEP_TEST_DATA")


@pytest.fixture(scope="session")
def models_dir() -> str:
    return _env("LOCKSTEP_TEST_MODELS")


@pytest.fixture(scope="session")
def cli() -> str:
    return _env("LOCKSTEP_TEST_CLI")


@pytest.fixture(scope="session")
def default_model() -> str:
    """The default model (Gemma 3 270M), which tools/scripts/fetch_model.sh caches."""
    path = os.environ.get("LOCKSTEP_MODEL")
    if not path:
        cache = os.environ.get("LOCKSTEP_CACHE") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "lockstep"
        )
        path = os.path.join(cache, "gemma-3-270m-q4_k_m.gguf")
    if not os.path.exists(path):
        pytest.fail(f"no default model at {path} (bash tools/scripts/fetch_model.sh fetches it)")
    return path


# The tiny models with a sliding window, Gemma 4's geometry and a recurrent hybrid: (file,
# constructor arguments). Both Gemmas have windows of 8 and ubatches of 16, so their rings
# wrap within the first turn (and a ring can return up to a ubatch's worth of positions).
TINY = {
    "swa": ("models", "swa.gguf", dict(n_ctx=1024, n_ubatch=16)),
    "gemma4": ("data", "gemma4_tiny.gguf", dict(n_ctx=256, n_ubatch=16)),
    "hybrid": ("models", "hybrid.gguf", dict(n_ctx=1024, n_ubatch=4)),
}


@pytest.fixture(scope="session")
def tiny(data_dir, models_dir):
    """name -> (path, constructor arguments)."""
    out = {}
    for name, (where, file, kw) in TINY.items():
        path = os.path.join(data_dir if where == "data" else models_dir, file)
        if not os.path.exists(path):
            pytest.fail(f"no {path}")
        out[name] = (path, kw)
    return out
