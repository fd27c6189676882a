"""`lits mapeval ...`: the MapEval-SQL plugin's command, through the register_commands hook."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _lits(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lits", *args], capture_output=True, text=True, timeout=120)


def test_lits_mapeval_build_db_writes_what_lits_mapeval_writes(tmp_path: Path) -> None:
    bin_dir = Path(sys.executable).parent
    assert _lits("mapeval", "build-db", "--to", str(tmp_path / "a.sqlite"), "--seed", "2").returncode == 0
    old = subprocess.run(
        [str(bin_dir / "lits-mapeval"), "build-db", "--to", str(tmp_path / "b.sqlite"), "--seed", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert old.returncode == 0, old.stderr
    assert (tmp_path / "a.sqlite").read_bytes() == (tmp_path / "b.sqlite").read_bytes()


def test_lits_help_lists_the_plugins_command() -> None:
    listing = _lits("--help").stdout
    assert "mapeval" in listing and "serve its tools over MCP" in listing


def test_a_bad_option_of_the_plugins_command_is_argparses_one_line(tmp_path: Path) -> None:
    done = _lits("mapeval", "build-db")
    assert done.returncode == 2 and "the following arguments are required: --to" in done.stderr
