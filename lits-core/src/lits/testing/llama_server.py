"""A real llama.cpp server on 127.0.0.1 for tests and benchmarks, started and stopped by the caller.

By default ``python -m llama_cpp.server`` from llama-cpp-python (``lits-core[local]``),
which serves one request at a time; given ``binary``, upstream llama.cpp's C++
``llama-server`` (see :mod:`lits.testing.llama_cpp_build`), which serves ``slots``
requests at once, each slot with its own prompt cache.  Either way the chat
template comes from the GGUF itself.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Iterator, Sequence

import httpx

from lits.lm.base import ModelError
from lits.lm.local import llama_threads


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def llama_server(
    model: Path,
    *,
    n_ctx: int = 4096,
    threads: int | None = None,
    extra: Sequence[str] = (),
    log: Path | None = None,
    ready_within: float = 120.0,
    binary: Path | None = None,
    slots: int = 1,
) -> Iterator[str]:
    """Serve ``model`` on a free loopback port; yields the base URL (``http://127.0.0.1:PORT/v1``).

    ``threads``: llama.cpp's compute threads (default :func:`lits.lm.local.llama_threads`).
    ``n_ctx`` is each slot's context (``llama-server`` splits its context among its slots)."""
    port = free_port()
    threads_text = str(threads or llama_threads())
    if binary is None:
        command = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_threads",
            threads_text,
            "--n_ctx",
            str(n_ctx),
            *extra,
        ]
    else:
        command = [
            str(binary),
            "--model",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--threads",
            threads_text,
            "--ctx-size",
            str(n_ctx * slots),
            "--parallel",
            str(slots),
            *extra,
        ]
    sink: IO[str] | int = log.open("w") if log is not None else subprocess.DEVNULL  # never a pipe: it could fill
    proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_ready(proc, base, ready_within, log)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if not isinstance(sink, int):
            sink.close()


def _wait_ready(proc: subprocess.Popen[bytes], base: str, within: float, log: Path | None) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-400:] if log is not None else ""
            raise ModelError(f"llama.cpp server exited with status {proc.returncode}: {tail}")
        try:
            if httpx.get(f"{base}/models", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.3)
    raise ModelError(f"llama.cpp server at {base} was not ready within {within:.0f} s")
