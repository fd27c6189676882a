"""A save dir is held for the life of its run: a second run into it (a new run started at the same instant,
``--resume``, ``lits rerun``, the Python API) gets one line naming the holder and pays no model call, and a
holder killed with SIGKILL leaves nothing held."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable, Iterator

import pytest

import lits
from lits.errors import UserError
from lits.testing.servers.openai_compat import FakeOpenAIServer
from tests.cli.conftest import SECRET, first_listed_action, one_line_error

#: Bounds that only keep a broken test from hanging the suite; nothing waits for them to pass.
GUARD = 120.0


class HeldReplies:
    """Replies that wait until :attr:`release` is set: a run holding a call is a run that is surely inside."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0
        self.changed = threading.Condition()

    def __call__(self, prompt: str, body: dict) -> str:
        with self.changed:
            self.calls += 1
            self.changed.notify_all()
        self.release.wait(GUARD)
        return first_listed_action(prompt, body)

    def watch(self, *procs: subprocess.Popen[str]) -> None:
        """Wake :meth:`wait_for_calls` when one of ``procs`` exits."""
        for proc in procs:
            threading.Thread(target=self._notify_after, args=(proc,), daemon=True).start()

    def _notify_after(self, proc: subprocess.Popen[str]) -> None:
        proc.wait()
        with self.changed:
            self.changed.notify_all()

    def wait_for_calls(self, count: int, *, until: Callable[[], bool] = lambda: False) -> bool:
        """True once ``count`` calls are held; False if ``until`` (a watched process exited) came first."""
        with self.changed:
            return self.changed.wait_for(lambda: self.calls >= count or until(), GUARD) and self.calls >= count


@pytest.fixture
def held() -> HeldReplies:
    return HeldReplies()


@pytest.fixture
def server(held: HeldReplies) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=held) as srv:
        yield srv
        held.release.set()


@pytest.fixture
def run_args(server: FakeOpenAIServer) -> list[str]:
    return [
        "--model",
        "fake-model",
        "--base-url",
        server.base_url,
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        "steps=2",
        "--limit",
        "1",
        "--concurrency",
        "1",
        "--search-arg",
        "n_iterations=2",
    ]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """``start(ARGS)``: ``python -m lits ARGS`` in the background; killed at the end if still running."""
    started: list[subprocess.Popen[str]] = []

    def launch(*args: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lits", *args],
            cwd=tmp_path,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "OPENAI_API_KEY": SECRET},
        )
        started.append(proc)
        return proc

    yield launch
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def _holding(held: HeldReplies, proc: subprocess.Popen[str]) -> None:
    """Wait until ``proc``'s run holds a model call (or say why it never did)."""
    held.watch(proc)
    if not held.wait_for_calls(1, until=lambda: proc.poll() is not None):
        raise AssertionError(f"the first run never called the model: {proc.communicate()[1]}")


def _refused(result: subprocess.CompletedProcess[str], holder: subprocess.Popen[str], save_dir: str) -> None:
    assert one_line_error(result).startswith(
        f"lits: error: {save_dir} is in use by another run (pid {holder.pid}); wait for it to end"
    )


@pytest.mark.parametrize("second", ["resume", "rerun", "new"])
def test_a_second_run_into_a_held_save_dir_is_one_line_and_pays_no_call(
    second, server, held, run_args, start, lits_cmd
):
    first = start("search", *run_args, "--save-dir", "run")
    _holding(held, first)
    again = {
        "resume": ["search", "--resume", "--save-dir", "run"],
        "rerun": ["rerun", "run", "--save-dir", "run"],
        "new": ["search", *run_args, "--save-dir", "run"],
    }[second]
    refused = lits_cmd(*again, timeout=GUARD)
    _refused(refused, first, "run")
    assert held.calls == 1  # the second run called nothing
    held.release.set()
    _, err = first.communicate(timeout=GUARD)
    assert first.returncode == 0, err


def test_two_new_runs_started_at_once_into_one_new_dir_run_once(server, held, run_args, start):
    both = [start("search", *run_args, "--save-dir", "fresh") for _ in range(2)]
    held.watch(*both)
    # Either one run is refused (it exits), or both run (two calls are held): whichever comes first.
    assert not held.wait_for_calls(2, until=lambda: any(p.poll() is not None for p in both)), (
        "both runs are running in one save dir"
    )
    loser = next(p for p in both if p.poll() is not None)
    winner = next(p for p in both if p is not loser)
    _, err = loser.communicate()
    _refused(subprocess.CompletedProcess(loser.args, loser.returncode, "", err), winner, "fresh")
    held.release.set()
    _, err = winner.communicate(timeout=GUARD)
    assert winner.returncode == 0, err


def test_the_python_api_is_refused_while_a_run_holds_the_save_dir(server, held, run_args, start, tmp_path):
    first = start("search", *run_args, "--save-dir", "run")
    _holding(held, first)
    with pytest.raises(UserError, match=rf"is in use by another run \(pid {first.pid}\)"):
        lits.resume(tmp_path / "run")
    with pytest.raises(UserError, match=rf"is in use by another run \(pid {first.pid}\)"):
        lits.search("blocksworld", model="scripted", limit=1, save_dir=tmp_path / "run")
    assert held.calls == 1


def test_a_holder_killed_with_sigkill_leaves_the_save_dir_free_to_resume(
    server, held, run_args, start, lits_cmd, tmp_path
):
    first = start("search", *run_args, "--save-dir", "run")
    _holding(held, first)
    first.kill()
    first.communicate()
    held.release.set()
    resumed = lits_cmd("search", "--resume", "--save-dir", "run", timeout=GUARD)
    assert resumed.returncode == 0, resumed.stderr
    assert (tmp_path / "run" / "results" / "0.json").exists()


def test_a_dry_run_and_the_readers_work_on_a_held_save_dir(server, held, run_args, start, lits_cmd):
    first = start("search", *run_args, "--save-dir", "run")
    _holding(held, first)
    planned = lits_cmd("search", "--resume", "--save-dir", "run", "--dry-run", timeout=GUARD)
    assert planned.returncode == 0, planned.stderr
    viewed = lits_cmd("view", "run", "--out", "report.html", timeout=GUARD)
    assert viewed.returncode == 0, viewed.stderr
    held.release.set()
    _, err = first.communicate(timeout=GUARD)
    assert first.returncode == 0, err
