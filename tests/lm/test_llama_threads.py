"""How many threads llama.cpp computes with (the embedded model and the test servers): ``$LITS_LLAMA_THREADS``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lits.errors import UserError
from lits.lm.base import ModelError
from lits.lm.local import llama_threads
from lits.testing import llama_server as server_module


def test_without_the_setting_llama_cpp_uses_every_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LITS_LLAMA_THREADS", raising=False)
    assert llama_threads() == (os.cpu_count() or 1)


def test_the_setting_gives_the_thread_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LITS_LLAMA_THREADS", " 3 ")
    assert llama_threads() == 3


@pytest.mark.parametrize("bad", ["two", "0", "-1", "1.5"])
def test_a_setting_that_is_not_a_thread_count_is_one_line_naming_it(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv("LITS_LLAMA_THREADS", bad)
    with pytest.raises(UserError, match=r"^LITS_LLAMA_THREADS=.* is not a number of threads .*unset it") as caught:
        llama_threads()
    assert "\n" not in str(caught.value)


class _ExitedAtOnce:
    """A server process that exits before it serves (the command is all this test needs)."""

    returncode = 1

    def __init__(self, command: list[str], **_: Any) -> None:
        started.append(command)

    def poll(self) -> int:
        return 1

    def terminate(self) -> None: ...

    def wait(self, timeout: float | None = None) -> int:
        return 1


started: list[list[str]] = []


@pytest.mark.parametrize("binary", [None, Path("/opt/llama-server")], ids=["llama-cpp-python", "upstream"])
def test_a_test_server_starts_with_the_settings_thread_count(
    monkeypatch: pytest.MonkeyPatch, binary: Path | None
) -> None:
    monkeypatch.setenv("LITS_LLAMA_THREADS", "1")
    monkeypatch.setattr(subprocess, "Popen", _ExitedAtOnce)
    started.clear()
    with pytest.raises(ModelError, match="exited"):
        with server_module.llama_server(Path("m.gguf"), binary=binary):
            pass
    flag = "--n_threads" if binary is None else "--threads"
    assert started[0][started[0].index(flag) + 1] == "1"
