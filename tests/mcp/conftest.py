"""MCP servers started by the tests: the toy server and ``lits-mapeval serve-mcp`` (stdio and HTTP)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

TOY = Path(__file__).with_name("toy_server.py")
BIN = Path(sys.executable).parent


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One LITS_CACHE_DIR (the plugin's city database) for every run and server of the session."""
    return tmp_path_factory.mktemp("lits-cache")


@pytest.fixture
def env(cache_dir: Path, tmp_path: Path) -> dict[str, str]:
    """The environment of a `lits` run: this venv's commands first, the shared cache, the toy's marker file."""
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "LITS_CACHE_DIR": str(cache_dir),
        "TOY_MARKER": str(tmp_path / "toy-marker"),
    }


@pytest.fixture
def toy_command() -> str:
    return f"{sys.executable} {TOY}"


@pytest.fixture
def in_env(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The same environment for servers started by this process (in-process resource tests)."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def serve_mapeval_http(cache_dir: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`lits-mapeval serve-mcp --http` on a free loopback port; up within 20 s, killed at the end."""
    port = _free_port()
    server = subprocess.Popen(
        [str(BIN / "lits-mapeval"), "serve-mcp", "--http", "--port", str(port)],
        env={**os.environ, "LITS_CACHE_DIR": str(cache_dir)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            assert server.poll() is None, server.stderr.read().decode() if server.stderr else "server exited"
            assert time.monotonic() < deadline, "serve-mcp --http did not listen within 20 s"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", server
    finally:
        server.kill()
        server.wait(10)


@pytest.fixture(scope="module")
def mapeval_http_url(cache_dir: Path) -> Iterator[str]:
    with serve_mapeval_http(cache_dir) as (url, _):
        yield url
