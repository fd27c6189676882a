"""``lits view``: the page file, its embedded data, bad input, and ``--serve``."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.view.conftest import lits

DATA_BLOCK = re.compile(r'<script id="lits-data" type="application/json">(.*?)</script>', re.DOTALL)


def embedded(page: str) -> Any:
    match = DATA_BLOCK.search(page)
    assert match, "the page embeds its data"
    return json.loads(match.group(1))


def test_the_page_is_one_file_that_fetches_nothing(written: Callable[[str], Path]) -> None:
    page = written("blocksworld-mcts").read_text(encoding="utf-8")
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page)
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in page


def test_the_page_embeds_the_report_of_the_run(
    written: Callable[[str], Path], reports: dict[str, dict[str, Any]]
) -> None:
    data = embedded(written("mapeval-react").read_text(encoding="utf-8"))
    expected = reports["mapeval-react"]
    assert data["instances"] == expected["instances"]
    assert data["trees"].keys() == expected["trees"].keys()


def test_text_from_the_run_cannot_close_the_data_script(runs: dict[str, Path], tmp_path: Path) -> None:
    from lits.view.html import write_report

    run = tmp_path / "hostile"
    shutil.copytree(runs["blocksworld-chain"], run)
    result = json.loads((run / "results" / "0.json").read_text())
    hostile = "</script><script>window.pwned=1</script><!-- \u2028 & __CSS__"
    result["query"] = hostile
    (run / "results" / "0.json").write_text(json.dumps(result))
    page = write_report(run).read_text(encoding="utf-8")
    assert "<script>window.pwned" not in page
    assert embedded(page)["instances"][0]["query"] == " ".join(hostile.split())


def test_nan_rewards_are_embedded_as_null() -> None:
    from lits.view.html import embed_json

    assert json.loads(embed_json({"reward": float("nan"), "q": [float("inf"), 0.5]})) == {
        "reward": None,
        "q": [None, 0.5],
    }


def test_out_writes_the_page_elsewhere(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "pages" / "mine.html"
    result = lits("view", str(runs["gsm8k-rap"]), "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert out.is_file() and str(out) in result.stdout


@pytest.mark.parametrize("target", ["missing", "empty"])
def test_a_bad_run_dir_is_one_line_and_exit_2(target: str, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = lits("view", str(tmp_path / target), cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("lits: error: ") and result.stderr.count("\n") == 1
    assert "Traceback" not in result.stderr


def test_serve_answers_on_loopback_rereads_the_run_and_stops_on_ctrl_c(runs: dict[str, Path], tmp_path: Path) -> None:
    run = tmp_path / "live"
    shutil.copytree(runs["blocksworld-mcts"], run)
    # Ctrl-C as a terminal sends it: with SIGINT's default action (a test worker may run with it ignored,
    # which a child would inherit).
    proc = subprocess.Popen(
        [sys.executable, "-m", "lits", "view", str(run), "--serve", "--port", "0", "--no-open"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout is not None
        proc.stdout.readline()  # wrote .../report.html
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url, line
        first = embedded(urllib.request.urlopen(url.group(0), timeout=10).read().decode("utf-8"))
        assert first["run"]["finished"] == 2
        (run / "results" / "1.json").unlink()  # the run changes: the next load must show it
        second = embedded(urllib.request.urlopen(url.group(0), timeout=10).read().decode("utf-8"))
        assert second["run"]["finished"] == 1 and second["run"]["running"] == 1
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)  # reads the pipes while waiting: a full pipe cannot block it
        assert proc.returncode == 0 and "Traceback" not in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_search_that_is_still_running_can_be_viewed(tmp_path: Path) -> None:
    import time

    from lits.testing.scripted import listed_actions
    from lits.testing.servers.openai_compat import FakeOpenAIServer
    from lits.view.model import build_report

    def first_listed(prompt: str, body: dict[str, Any]) -> str:
        listed = listed_actions(prompt)
        return listed[0] if listed else "Yes"

    run = tmp_path / "live-search"
    with FakeOpenAIServer(responder=first_listed, latency=0.05) as server:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lits",
                "search",
                "--dataset",
                "blocksworld",
                "--limit",
                "1",
                "--model",
                "fake",
                "--base-url",
                server.base_url,
                "--no-cache",
                "--search-arg",
                "n_iterations=40",
                "--search-arg",
                "early_stop=false",
                "--save-dir",
                str(run),
            ],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "OPENAI_API_KEY": "sk-test"},
        )
        try:
            journal = run / "checkpoints" / "0.journal.jsonl"
            deadline = time.monotonic() + 60
            while not (journal.is_file() and journal.stat().st_size) and time.monotonic() < deadline:
                time.sleep(0.05)
            report = build_report(run)
            viewed = lits("view", str(run), cwd=tmp_path)
            still_running = proc.poll() is None
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
    assert still_running, "the search finished before it could be looked at"
    assert [r["status"] for r in report["instances"]] == ["running"]
    assert report["run"]["summary"] is None and report["trees"]["0"]["nodes"][0]["id"] == 0
    assert viewed.returncode == 0, viewed.stderr


@pytest.mark.parametrize(
    "host, status",
    [("evil.example", 421), ("127.0.0.1.evil.example", 421), ("localhost", 200), ("127.0.0.1", 200), ("[::1]", 200)],
)
def test_serve_answers_only_requests_that_name_it_by_a_loopback_name(
    runs: dict[str, Path], host: str, status: int
) -> None:
    """A page elsewhere that re-points its own name at 127.0.0.1 (DNS rebinding) gets no run data."""
    import http.client
    import threading

    from lits.view.serve import make_server

    server = make_server(runs["blocksworld-mcts"], 0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/", headers={"Host": f"{host}:{port}"})
        answer = conn.getresponse()
        body = answer.read().decode("utf-8", errors="replace")
        conn.close()
    finally:
        server.shutdown()
        server.server_close()
    assert answer.status == status
    assert ('"finished"' in body) == (status == 200)
