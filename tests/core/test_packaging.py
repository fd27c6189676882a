"""Every distribution builds into wheels and sdists that an index accepts, with its license and metadata."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from email.parser import Parser
from email.message import Message
from pathlib import Path
from typing import Callable

import pytest

import lits
from lits.cli.main import main
from lits.cli.new import write_distribution

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTIONS = [
    "lits-core",
    "lits-plugin-blocksworld",
    "lits-plugin-crosswords",
    "lits-plugin-mapeval",
    "lits-plugin-math",
    "lits-plugin-hosted",
]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    """``python -m build`` (sdist and wheel) of every distribution, without network (no isolation)."""
    out = tmp_path_factory.mktemp("dist")
    made: dict[str, list[Path]] = {}
    for dist in DISTRIBUTIONS:
        target = out / dist
        done = subprocess.run(
            [sys.executable, "-m", "build", "--no-isolation", "-o", str(target), str(ROOT / dist)],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        made[dist] = sorted(target.iterdir())
    return made


def _metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        return Parser().parsestr(zf.read(name).decode())


def _wheel(files: list[Path]) -> Path:
    return next(f for f in files if f.suffix == ".whl")


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_every_distribution_passes_twine_check(built: dict[str, list[Path]], dist: str) -> None:
    assert len(built[dist]) == 2  # an sdist and a wheel
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, built[dist])], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_every_wheel_carries_its_license_classifiers_and_urls(built: dict[str, list[Path]], dist: str) -> None:
    wheel = _wheel(built[dist])
    meta = _metadata(wheel)
    assert meta["License"] == "Apache-2.0"
    urls = dict(entry.split(", ", 1) for entry in meta.get_all("Project-URL", []))
    assert urls["Paper reference code"].startswith("https://")
    assert "License :: OSI Approved :: Apache Software License" in meta.get_all("Classifier", [])
    with zipfile.ZipFile(wheel) as zf:
        license_text = next(zf.read(n) for n in zf.namelist() if n.endswith("licenses/LICENSE"))
    assert b"Apache License" in license_text and b"Version 2.0" in license_text


def test_the_core_wheel_has_one_version_source(built: dict[str, list[Path]]) -> None:
    assert _metadata(_wheel(built["lits-core"]))["Version"] == lits.__version__


def test_the_core_readme_renders_as_markdown(built: dict[str, list[Path]]) -> None:
    meta = _metadata(_wheel(built["lits-core"]))
    assert meta["Description-Content-Type"] == "text/markdown"
    body = meta.get_payload()
    assert isinstance(body, str) and body.startswith("# lits-core\n\n") and "\\n" not in body


def test_lits_version_prints_the_core_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--version"])
    assert stopped.value.code == 0
    assert capsys.readouterr().out.strip() == f"lits {lits.__version__}"


@pytest.mark.parametrize("kind", ["domain", "search"])
def test_a_new_plugin_pins_the_compatible_core_releases(tmp_path: Path, kind: str) -> None:
    write_distribution(kind, "x", tmp_path / "x")
    major, minor = (int(p) for p in lits.__version__.split(".")[:2])
    upper = f"{major + 1}.0" if major else f"0.{minor + 1}"
    assert f'"lits-core>={major}.{minor},<{upper}"' in (tmp_path / "x" / "pyproject.toml").read_text()


def test_the_hosted_backend_installs_from_its_folder_with_pip_and_lits_plugins_lists_it(
    install_path: Callable[[Path], None],
    run_lits: Callable[..., subprocess.CompletedProcess[str]],
    run_python: Callable[..., subprocess.CompletedProcess[str]],
    site_dir: Path,
) -> None:
    install_path(ROOT / "lits-plugin-hosted")  # a wheel built from the folder, as `pip install ./lits-plugin-hosted`
    found = run_python("import importlib.metadata as m; print(m.distribution('lits-plugin-hosted').locate_file(''))")
    assert Path(found.stdout.strip()) == site_dir, found.stderr  # the copy just installed, ahead of the dev venv's
    listed = {p["distribution"]: p for p in json.loads(run_lits("plugins", "--json").stdout)}
    assert listed["lits-plugin-hosted"]["registered"] == {"model": ["anthropic", "bedrock"]}
