"""Mistakes with --executor ray are one line, before anything waits on Ray."""

from __future__ import annotations

import socket
from collections.abc import Callable

import pytest


def test_unreachable_ray_address_is_one_line_at_once(
    lits_here: Callable[..., int], capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{sock.getsockname()[1]}"
    assert (
        lits_here(
            "search",
            "--model",
            "scripted",
            "--dataset",
            "blocksworld",
            "--limit",
            "1",
            "--executor",
            "ray",
            "--ray-address",
            address,
            "--save-dir",
            "run",
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"lits: error: cannot reach the Ray cluster at {address} (")
    assert err[-1].endswith("start it with `ray start --head` or check --ray-address")
