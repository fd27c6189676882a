"""Fixtures that build and really install throw-away plugin distributions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable

import pytest


def _write_distribution(root: Path, dist: str, module: str, source: str, entry_name: str | None = None) -> Path:
    pkg = root / dist
    (pkg / module).mkdir(parents=True)
    (pkg / module / "__init__.py").write_text(textwrap.dedent(source))
    (pkg / "pyproject.toml").write_text(
        textwrap.dedent(f"""
        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"

        [project]
        name = "{dist}"
        version = "0.0.1"

        [project.entry-points."lits.plugins"]
        {entry_name or dist} = "{module}"

        [tool.hatch.build.targets.wheel]
        packages = ["{module}"]
    """)
    )
    return pkg


@pytest.fixture
def site_dir(tmp_path: Path) -> Path:
    target = tmp_path / "site"
    target.mkdir()
    return target


@pytest.fixture
def install_path(site_dir: Path) -> Callable[[Path], None]:
    """Really pip-install the distribution at a path into ``site_dir``."""

    def install(path: Path) -> None:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--no-index",
                "--no-build-isolation",
                "--target",
                str(site_dir),
                str(path),
            ],
            check=True,
            capture_output=True,
            text=True,
        )

    return install


class ChildVenv:
    """A venv layered over the test venv: sees everything installed there, installs only into itself.

    So a test can run a user's literal ``pip install -e x`` without touching the venv the suite runs in.
    """

    def __init__(self, root: Path) -> None:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
        self.python = root / "bin" / "python"
        site_packages = next((root / "lib").glob("python3*/site-packages"))
        parent = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
        (site_packages / "_lits_test_parent.pth").write_text(f"import site; site.addsitedir({parent!r})\n")

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        """``python ARGS`` in the child venv (``-m pip ...``, ``-m pytest ...``, ``-m lits ...``)."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        return subprocess.run([str(self.python), *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
def child_venv(tmp_path: Path) -> ChildVenv:
    return ChildVenv(tmp_path / "venv")


@pytest.fixture
def install_plugin(tmp_path: Path, install_path: Callable[[Path], None]) -> Callable[..., None]:
    """``install_plugin(dist, module, source)`` writes a distribution and really pip-installs it."""

    def install(dist: str, module: str, source: str, entry_name: str | None = None) -> None:
        install_path(_write_distribution(tmp_path / "src", dist, module, source, entry_name))

    return install


@pytest.fixture
def run_lits(site_dir: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run ``python -m lits ...`` in a fresh interpreter that sees ``site_dir``."""

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        full_env = {**os.environ, "PYTHONPATH": str(site_dir), **(env or {})}
        return subprocess.run(
            [sys.executable, "-m", "lits", *args],
            capture_output=True,
            text=True,
            env=full_env,
            timeout=120,
            cwd=site_dir.parent,
        )

    return run


@pytest.fixture
def run_python(site_dir: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    def run(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        full_env = {**os.environ, "PYTHONPATH": str(site_dir), **(env or {})}
        return subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=full_env, timeout=120
        )

    return run


#: A plugin implementing every hook spec once (test_hooks_have_tests checks that it does).
EVERY_HOOK_PLUGIN = """
from lits.plugin_host.hookspecs import hookimpl

class Thing:
    pass

@hookimpl
def register_transitions(register):
    register("every_t", Thing, task_type="env_grounded")

@hookimpl
def register_policies(register):
    register("every_p", Thing)

@hookimpl
def register_reward_models(register):
    register("every_r", Thing)

@hookimpl
def register_datasets(register):
    register("every_d", lambda **kw: [{"query": "q"}], task_type="tool_use")

@hookimpl
def register_resources(register):
    register("every_d", lambda **kw: {"tools": [], "tool_context": "none"})

@hookimpl
def register_searches(register):
    register("every_s", Thing, config_class=None)

@hookimpl
def register_chains(register):
    register("every_c", Thing, config_class=None)

@hookimpl
def register_prompts(register):
    register("policy", "every", "every_d", {"state": "x"}, user=True)

@hookimpl
def register_search_frameworks(register):
    register("every_f", policy="every_p", transition="every_t", reward_model="every_r", search="every_s")

@hookimpl
def register_models(register):
    register("every_m", lambda spec, **options: Thing(), description="a backend")

class Hello:
    @staticmethod
    def add_arguments(parser):
        parser.add_argument("--who", default="world")
        parser.set_defaults(func=lambda args: print(f"hello {args.who}") or 0)

@hookimpl
def register_commands(register):
    register("every-cmd", Hello.add_arguments, help="say hello")

@hookimpl
def register_augmentors(register):
    register("every_a", Thing, description="remembers nothing")
"""


def plugins_json(result: subprocess.CompletedProcess[str]) -> dict[str, dict]:
    return {p["distribution"]: p for p in json.loads(result.stdout)}
