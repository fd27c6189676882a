"""``--replay-from RUN``: another search over a recorded GSM8K ToT-BFS run, answered from its recorded replies."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from lits.testing.servers.openai_compat import FakeOpenAIServer
from lits_math.data import load_gsm8k

GOLD = {e["query"]: e["answer"] for e in load_gsm8k()}
#: The recorded run: 5 samples per node, a beam of 3, three steps deep.
RECORDED = ["--search-arg", "n_actions=5", "--search-arg", "beam_width=3"]
#: The replayed setting: 3 samples per node, a beam of 2 (same depth: the policy is told the last step).
REPLAYED = ["--search-arg", "n_actions=3", "--search-arg", "beam_width=2"]


def distinct_steps(prompt: str, body: dict[str, Any], index: int) -> str:
    """A chat model whose samples differ (sample i proposes part i), that judges every step good and answers
    at the third step."""
    last = str(body["messages"][-1]["content"]) if body.get("messages") else prompt
    if "Yes or No" in last:
        return "Yes"
    step = re.search(r"Write only step (\d+)", last)
    if step and int(step.group(1)) < 3:
        return f"Work out part {index + 1} of what step {step.group(1)} needs."
    gold = next((answer for question, answer in GOLD.items() if question in last), "0")
    return f"The answer is $\\boxed{{{gold}}}$."


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=distinct_steps) as srv:
        yield srv


@pytest.fixture
def lits(run_lits, server) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``lits search`` of GSM8K ToT-BFS, three steps deep, against the counting server."""

    def run(*args: str, limit: int = 2) -> subprocess.CompletedProcess[str]:
        return run_lits(
            "search",
            "--search-framework",
            "tot_bfs",
            "--search-arg",
            "max_depth=3",
            "--dataset",
            "gsm8k",
            "--limit",
            str(limit),
            "--model",
            "m",
            "--base-url",
            server.base_url,
            *args,
        )

    return run


@pytest.fixture
def recorded(lits, server) -> str:
    result = lits(*RECORDED, "--save-dir", "recorded")
    assert result.returncode == 0, result.stderr
    assert server.requests
    return "recorded"


def summary(tmp_path: Path, run: str) -> dict[str, Any]:
    return json.loads((tmp_path / run / "eval_results.json").read_text())


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("lits: error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_a_replay_with_fewer_samples_and_a_narrower_beam_sends_no_request(lits, server, recorded, tmp_path):
    before = len(server.requests)
    result = lits(*REPLAYED, "--replay-from", recorded, "--save-dir", "replay")
    assert result.returncode == 0, result.stderr
    assert len(server.requests) == before  # counted by the server: nothing reached it
    replay = summary(tmp_path, "replay")["replay"]
    assert (replay["paid"], replay["replayed"] > 0) == (0, True)
    assert f"replayed {replay['replayed']}, paid 0 from {tmp_path / recorded}" in result.stdout
    assert summary(tmp_path, "replay")["accuracy"] == 1.0
    config = json.loads((tmp_path / "replay" / "config.json").read_text())
    assert config["replay_from"] == str(tmp_path / recorded) and config["search_args"]["beam_width"] == 2


def test_a_replay_pays_only_for_the_samples_the_recorded_run_lacks(lits, server, recorded, tmp_path):
    before = len(server.requests)
    result = lits(
        "--search-arg", "n_actions=6", "--search-arg", "beam_width=3", "--replay-from", recorded, "--save-dir", "replay"
    )
    assert result.returncode == 0, result.stderr
    paid = [body for body in server.requests[before:]]
    replay = summary(tmp_path, "replay")["replay"]
    assert replay["paid"] == len(paid) > 0 and replay["replayed"] > 0
    assert all(body.get("n", 1) == 1 for body in paid)  # the 6th sample of each node; the first 5 were recorded


def test_an_offline_replay_pays_nothing_and_names_the_request_it_lacks(lits, server, recorded, tmp_path):
    before = len(server.requests)
    result = lits(
        "--search-arg", "n_actions=6", "--replay-from", recorded, "--offline", "--save-dir", "replay", limit=3
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert len(server.requests) == before
    # every instance was tried (a gap is no failing server: no breaker), each failure one line
    assert "3 instances failed (instance 0: ReplayMiss: offline replay:" in result.stderr
    assert "recorded 5 of the 6 sample(s) the policy (expand, depth 0) asked for" in result.stderr
    assert "stopped after" not in result.stderr


def test_a_replay_resumed_without_offline_pays_for_what_the_offline_pass_lacked(lits, server, recorded, tmp_path):
    first = lits(*REPLAYED, "--replay-from", recorded, "--offline", "--save-dir", "replay", limit=3)
    assert first.returncode == 1 and "1 instances failed (instance 2: ReplayMiss" in first.stderr  # not recorded
    before = len(server.requests)
    resumed = lits("--resume", "--replay-from", recorded, "--save-dir", "replay", limit=3)
    assert resumed.returncode == 0, resumed.stderr
    assert "2 instances were already done" in resumed.stderr
    replay = summary(tmp_path, "replay")["replay"]
    assert replay["paid"] == len(server.requests) - before > 0 and replay["offline"] is False
    assert summary(tmp_path, "replay")["instances"] == 3


def test_a_replay_of_a_replay_sends_no_request(lits, server, recorded, tmp_path):
    assert lits(*REPLAYED, "--replay-from", recorded, "--save-dir", "replay").returncode == 0
    before = len(server.requests)
    again = lits(
        "--search-arg",
        "n_actions=2",
        "--search-arg",
        "beam_width=1",
        "--replay-from",
        "replay",
        "--offline",
        "--save-dir",
        "replay-2",
    )
    assert again.returncode == 0, again.stderr
    assert len(server.requests) == before
    assert summary(tmp_path, "replay-2")["replay"]["paid"] == 0


@pytest.mark.parametrize(
    "made, said",
    [
        (lambda root: None, "no such run directory"),
        (lambda root: root.mkdir(), "not a LiTS run (no config.json)"),
    ],
)
def test_a_replay_from_a_folder_that_holds_no_run_is_a_one_line_error(lits, server, tmp_path, made, said):
    made(tmp_path / "nothing")
    line = one_line_error(lits("--replay-from", "nothing", "--save-dir", "replay"))
    assert (
        line == f"lits: error: --replay-from {tmp_path / 'nothing'}: {said}; pass the --save-dir of the run to replay"
    )
    assert not server.requests


def test_a_replay_of_another_models_run_is_a_one_line_error(run_lits, server, recorded):
    result = run_lits(
        "search",
        "--search-framework",
        "tot_bfs",
        "--dataset",
        "gsm8k",
        "--limit",
        "1",
        "--model",
        "other",
        "--base-url",
        server.base_url,
        "--replay-from",
        recorded,
    )
    assert "a replay answers the same model's requests only" in one_line_error(result)


def test_offline_without_a_replay_is_a_one_line_error(lits):
    assert "--offline needs --replay-from RUN" in one_line_error(lits("--offline"))


def test_resume_from_python_takes_offline_for_a_replay_and_refuses_it_for_another_run(tmp_path):
    import lits as api
    from lits.errors import UserError

    bfs = {"max_depth": 2, "early_stop": False}
    api.search("blocksworld", model="scripted", limit=1, search="bfs", search_args=bfs, save_dir=tmp_path / "rec")
    api.search(
        "blocksworld",
        model="scripted",
        limit=1,
        search="bfs",
        search_args={**bfs, "beam_width": 1},
        replay_from=str(tmp_path / "rec"),
        save_dir=tmp_path / "replay",
    )
    again = api.resume(tmp_path / "replay", offline=True)
    assert again.summary["replay"]["offline"] is True
    with pytest.raises(UserError, match="offline needs replay_from"):
        api.resume(tmp_path / "rec", offline=True)


def test_compare_shows_a_replays_replayed_and_paid_calls_and_the_run_it_replays(run_lits, lits, recorded, tmp_path):
    assert lits(*REPLAYED, "--replay-from", recorded, "--save-dir", "replay").returncode == 0
    replay = summary(tmp_path, "replay")["replay"]
    shown = run_lits("compare", recorded, "replay")
    assert shown.returncode == 0, shown.stderr
    header, first, second = shown.stdout.splitlines()[:3]
    assert "replayed / paid" in header and first.endswith("-")
    assert second.endswith(f"{replay['replayed']} / 0")
    assert f"run 2 (replay) replays run 1: {replay['replayed']} of its {replay['replayed']} calls answered" in (
        shown.stdout
    )


def test_compare_json_names_the_run_a_replay_replays(run_lits, lits, recorded, tmp_path):
    assert lits(*REPLAYED, "--replay-from", recorded, "--save-dir", "replay").returncode == 0
    rows = json.loads(run_lits("compare", "--json", recorded, "replay").stdout)
    assert rows[0]["replay"] is None
    assert rows[1]["replay"] == {
        "source": str(tmp_path / recorded),
        "replayed": summary(tmp_path, "replay")["replay"]["replayed"],
        "paid": 0,
    }
