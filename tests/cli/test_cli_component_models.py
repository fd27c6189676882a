"""A model per component: --policy-model / --eval-model / --transition-model, their servers and settings."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Callable, Iterator

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer
from tests.cli.conftest import SECRET, first_listed_action, one_line_error
from tests.commands import blocksworld_search

Run = Callable[..., subprocess.CompletedProcess[str]]
EVAL_KEY = "sk-eval-ONLY-IN-THE-ENVIRONMENT-9876543210"


@pytest.fixture
def eval_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=first_listed_action) as srv:
        yield srv


@pytest.fixture
def two_server_args(server: FakeOpenAIServer, eval_server: FakeOpenAIServer) -> list[str]:
    return [
        *blocksworld_search(),
        "--policy-model",
        "policy-A",
        "--policy-base-url",
        server.base_url,
        "--eval-model",
        "judge-B",
        "--eval-base-url",
        eval_server.base_url,
    ]


@pytest.fixture
def two_server_run(lits_cmd: Run, two_server_args: list[str], tmp_path: Path) -> Path:
    # No hedged copies: a test below matches the judge's logged calls to its server's requests one to one.
    result = lits_cmd(
        *two_server_args,
        "--eval-model-arg",
        "api_key_env=JUDGE_KEY",
        env={"JUDGE_KEY": EVAL_KEY, "LITS_HEDGE_SHARE": "0"},
    )
    assert result.returncode == 0, result.stderr
    return tmp_path / "run"


def _records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "inference.jsonl").read_text().splitlines() if line.strip()]


def test_each_component_calls_its_own_server(
    two_server_run: Path, server: FakeOpenAIServer, eval_server: FakeOpenAIServer
) -> None:
    assert server.requests and eval_server.requests
    assert {body["model"] for body in server.requests} == {"policy-A"}
    assert {body["model"] for body in eval_server.requests} == {"judge-B"}


def test_inference_log_names_each_components_model(two_server_run: Path, eval_server: FakeOpenAIServer) -> None:
    by_model: dict[str, set[str]] = {}
    for record in _records(two_server_run):
        if not record.get("cached"):
            by_model.setdefault(record["model"], set()).add(record["context"]["component"])
    assert set(by_model) == {"policy-A", "judge-B"}
    assert by_model == {"policy-A": {"policy"}, "judge-B": {"reward"}}
    assert sum(1 for r in _records(two_server_run) if r["model"] == "judge-B" and not r.get("cached")) == len(
        eval_server.requests
    )


def test_config_records_each_components_model_without_keys(
    two_server_run: Path, server: FakeOpenAIServer, eval_server: FakeOpenAIServer
) -> None:
    text = (two_server_run / "config.json").read_text()
    config = json.loads(text)
    models = config["models"]
    assert models["policy"]["model"] == "policy-A" and models["policy"]["base_url"] == server.base_url
    assert models["eval"]["model"] == "judge-B" and models["eval"]["base_url"] == eval_server.base_url
    assert models["eval"]["model_info"]["name"] == "judge-B"
    assert models["eval"]["args"] == {"key_env": "JUDGE_KEY"}  # the name is kept, for --resume
    assert EVAL_KEY not in text and SECRET not in text


def test_api_key_env_is_sent_only_to_its_model_and_never_written(
    two_server_run: Path, server: FakeOpenAIServer, eval_server: FakeOpenAIServer
) -> None:
    assert {h.get("Authorization") for h in eval_server.headers} == {f"Bearer {EVAL_KEY}"}
    assert {h.get("Authorization") for h in server.headers} == {f"Bearer {SECRET}"}
    for path in two_server_run.rglob("*"):
        if path.is_file():
            assert EVAL_KEY.encode() not in path.read_bytes(), path


def test_summary_names_the_models(two_server_run: Path) -> None:
    assert "models" in (two_server_run / "eval.log").read_text()
    assert "eval=judge-B" in (two_server_run / "eval.log").read_text()


def test_resume_refuses_a_changed_eval_model(two_server_run: Path, lits_cmd: Run) -> None:
    line = one_line_error(lits_cmd("search", "--resume", "--save-dir", "run", "--eval-model", "judge-C"))
    assert "--eval-model judge-C" in line and "judge-B" in line


def test_resume_accepts_a_new_eval_base_url(two_server_run: Path, lits_cmd: Run) -> None:
    with FakeOpenAIServer(responder=first_listed_action) as moved:
        result = lits_cmd(
            "search", "--resume", "--save-dir", "run", "--eval-base-url", moved.base_url, env={"JUDGE_KEY": EVAL_KEY}
        )
        assert result.returncode == 0, result.stderr
    assert {h.get("Authorization") for h in moved.headers} <= {f"Bearer {EVAL_KEY}"}
    config = json.loads((two_server_run / "config.json").read_text())
    assert config["component_models"]["eval"]["base_url"] == moved.base_url
    assert config["models"]["eval"]["base_url"] == moved.base_url
    assert config["resumed"][-1]["changed"]["component_models"]["eval"]["model"] == "judge-B"


def test_components_with_one_spec_share_one_server(
    lits_cmd: Run, server: FakeOpenAIServer, eval_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    result = lits_cmd(*blocksworld_search(), "--model", "policy-A", "--base-url", server.base_url)
    assert result.returncode == 0, result.stderr
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["model_info"]["name"] == "policy-A" and config["component_models"] == {}
    assert not eval_server.requests


def test_unknown_model_arg_names_the_closest(lits_cmd: Run, two_server_args: list[str]) -> None:
    line = one_line_error(lits_cmd(*two_server_args, "--eval-model-arg", "temprature=0.1"))
    assert "temprature" in line and "'temperature'" in line


def test_unset_api_key_env_is_one_line(lits_cmd: Run, two_server_args: list[str]) -> None:
    line = one_line_error(lits_cmd(*two_server_args, "--eval-model-arg", "api_key_env=NOT_SET_ANYWHERE"))
    assert "$NOT_SET_ANYWHERE is not set" in line


def test_model_arg_sampling_settings_reach_the_server(
    lits_cmd: Run, two_server_args: list[str], eval_server: FakeOpenAIServer
) -> None:
    result = lits_cmd(*two_server_args, "--eval-model-arg", "temperature=0.25", "--eval-model-arg", "max_tokens=7")
    assert result.returncode == 0, result.stderr
    assert {(b.get("temperature"), b.get("max_tokens")) for b in eval_server.requests} == {(0.25, 7)}


def test_missing_gguf_file_is_one_line(lits_cmd: Run, tmp_path: Path) -> None:
    line = one_line_error(
        lits_cmd("search", "--dataset", "blocksworld", "--limit", "1", "--model", str(tmp_path / "nowhere.gguf"))
    )
    assert "nowhere.gguf not found" in line


def test_missing_gguf_for_one_component_is_one_line(lits_cmd: Run, server: FakeOpenAIServer, tmp_path: Path) -> None:
    line = one_line_error(
        lits_cmd(
            "search",
            "--dataset",
            "blocksworld",
            "--limit",
            "1",
            "--model",
            "policy-A",
            "--base-url",
            server.base_url,
            "--eval-model",
            "missing.gguf",
        )
    )
    assert "missing.gguf not found" in line
    assert not server.requests


@pytest.mark.slow
def test_gguf_model_spec_loads_the_file_in_process(lits_cmd: Run, tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp")
    from lits.lm.local import file_sha256, model_path

    gguf = tmp_path / "my-model.gguf"
    shutil.copyfile(model_path(), gguf)
    result = lits_cmd(
        "chain",
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        "steps=2",
        "--limit",
        "1",
        "--save-dir",
        "run",
        "--model",
        str(gguf),
        env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"},
    )  # a remote call would fail
    assert result.returncode == 0, result.stderr
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    info = config["model_info"]
    assert info["backend"] == "LocalLlamaModel" and info["file"] == "my-model.gguf"
    assert info["sha256"] == file_sha256(gguf) and config["concurrency"] == 1


def test_rest_mcts_policy_and_process_reward_model_are_one_command(
    lits_cmd: Run, server: FakeOpenAIServer, eval_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """ReST-MCTS*: a policy model at one server and a separate process reward model at another."""
    result = lits_cmd(
        "search",
        "--dataset",
        "math500",
        "--limit",
        "1",
        "--search-framework",
        "rest",
        "--search-arg",
        "n_iterations=1",
        "--save-dir",
        "run",
        "--model",
        "policy-A",
        "--base-url",
        server.base_url,
        "--eval-model",
        "prm-B",
        "--eval-base-url",
        eval_server.base_url,
    )
    assert result.returncode == 0, result.stderr
    assert {b["model"] for b in server.requests} == {"policy-A"}
    assert {b["model"] for b in eval_server.requests} == {"prm-B"}
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["model_info"]["name"] == "policy-A" and config["models"]["eval"]["model_info"]["name"] == "prm-B"


def test_viewer_run_page_names_each_components_model(two_server_run: Path, eval_server: FakeOpenAIServer) -> None:
    from lits.view.model import build_report

    models = build_report(two_server_run)["run"]["models"]
    assert models.startswith("policy=policy-A@") and f"eval=judge-B@{eval_server.base_url}" in models


def test_viewer_shows_no_models_line_for_one_model(lits_cmd: Run, server_args: list[str], tmp_path: Path) -> None:
    from lits.view.model import build_report

    assert lits_cmd("search", *server_args, "--save-dir", "run").returncode == 0
    assert build_report(tmp_path / "run")["run"]["models"] is None


def test_model_arg_api_completion_uses_that_endpoint_for_that_model(
    lits_cmd: Run, two_server_args: list[str], server: FakeOpenAIServer, eval_server: FakeOpenAIServer
) -> None:
    result = lits_cmd(*two_server_args, "--eval-model-arg", "api=completion")
    assert result.returncode == 0, result.stderr
    assert all("prompt" in body and "messages" not in body for body in eval_server.requests)
    assert all("messages" in body for body in server.requests)


def test_resume_refuses_a_changed_sampling_setting(lits_cmd: Run, two_server_args: list[str]) -> None:
    assert lits_cmd(*two_server_args, "--eval-model-arg", "temperature=0.5").returncode == 0
    line = one_line_error(lits_cmd("search", "--resume", "--save-dir", "run", "--eval-model-arg", "temperature=0.9"))
    assert "--eval-model-arg temperature=0.9" in line and "0.5" in line
