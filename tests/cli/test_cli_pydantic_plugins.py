"""pydantic's own plugins under the ``lits`` command: skipped unless the user asks for them (issue 42).

pydantic finds its plugins by parsing every installed distribution's entry points when the first model class is
built; the CLI sets ``PYDANTIC_DISABLE_PLUGINS=__all__`` when the user has not set it, and a user of such a
plugin (logfire's) sets the variable to empty to keep it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

LOADED = "FAKE PYDANTIC PLUGIN LOADED"


@pytest.fixture
def fake_plugin_path(tmp_path: Path) -> Path:
    """A folder that, on ``PYTHONPATH``, installs a pydantic plugin announcing on stderr that it was loaded."""
    site = tmp_path / "site"
    (site / "fake_pydantic_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "fake_pydantic_plugin-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fake-pydantic-plugin\nVersion: 1.0\n"
    )
    (site / "fake_pydantic_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[pydantic]\nfake = fake_pydantic_plugin:plugin\n"
    )
    (site / "fake_pydantic_plugin.py").write_text(
        "import sys\n"
        f"print({LOADED!r}, file=sys.stderr)\n"
        "class _Plugin:\n"
        "    def new_schema_validator(self, *args, **kwargs):\n"
        "        return None, None, None\n"
        "plugin = _Plugin()\n"
    )
    return site


def _search_help(site: Path, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``lits search --help`` (its parser builds the run settings' models) with ``site`` on the path."""
    base = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    done = subprocess.run(
        [sys.executable, "-m", "lits", "search", "--help"],
        capture_output=True,
        text=True,
        env={**base, "PYTHONPATH": str(site), **env},
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_the_cli_does_not_load_pydantic_plugins_by_default(fake_plugin_path: Path, tmp_path: Path) -> None:
    assert LOADED not in _search_help(fake_plugin_path, tmp_path).stderr


def test_the_cli_loads_pydantic_plugins_when_the_variable_is_set_to_empty(
    fake_plugin_path: Path, tmp_path: Path
) -> None:
    assert LOADED in _search_help(fake_plugin_path, tmp_path, PYDANTIC_DISABLE_PLUGINS="").stderr


def test_importing_lits_leaves_the_pydantic_plugins_variable_unset(fake_plugin_path: Path, tmp_path: Path) -> None:
    base = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    code = "import os, lits, lits.cli.main; print(os.environ.get('PYDANTIC_DISABLE_PLUGINS'))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=base, timeout=300)
    assert done.stdout.strip() == "None", done.stderr[-2000:]
