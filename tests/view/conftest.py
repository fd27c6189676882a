"""Real small runs (scripted model) made once per session, and a headless Chromium to look at them."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from lits.agents.tree.journal import TreeJournal
from lits.structures.node import MCTSNode, SearchNode

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"

#: name -> the `lits` arguments of one small run (every domain; MCTS, BFS, RAP and chains).
RUNS: dict[str, list[str]] = {
    "blocksworld-mcts": ["search", "--dataset", "blocksworld", "--limit", "2"],
    "blocksworld-bfs": ["search", "--dataset", "blocksworld", "--search", "bfs", "--limit", "2"],
    "blocksworld-chain": ["chain", "--dataset", "blocksworld", "--limit", "1"],
    "crosswords-mcts": ["search", "--dataset", "crosswords", "--limit", "1"],
    "mapeval-mcts": ["search", "--dataset", "mapeval-sql", "--limit", "1"],
    "mapeval-react": ["chain", "--dataset", "mapeval-sql", "--limit", "1", "--log-prompts"],
    "gsm8k-rap": ["search", "--dataset", "gsm8k", "--search-framework", "rap", "--limit", "1"],
    "math500-cot": ["chain", "--dataset", "math500", "--limit", "1"],
}


def lits(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lits", *args],
        check=False,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every run of RUNS, made once with the scripted model (in parallel: each is a process)."""
    root = tmp_path_factory.mktemp("view-runs")
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-m", "lits", *args, "--model", "scripted", "--save-dir", str(root / name)],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, args in RUNS.items()
    }
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=180)
        assert proc.returncode in (0, 1), f"{name}: {err or out}"
        assert (root / name / "eval_results.json").is_file(), f"{name} did not finish: {err}"
    return {name: root / name for name in RUNS}


@pytest.fixture(scope="session")
def reports(runs: dict[str, Path]) -> dict[str, dict[str, Any]]:
    from lits.view.model import build_report

    return {name: build_report(path) for name, path in runs.items()}


def journal_nodes(run: Path, idx: int) -> list[dict[str, Any]]:
    """The finished instance's nodes as its compacted journal holds them."""
    lines = (run / "checkpoints" / f"{idx}.journal.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1, "a finished instance's journal is compacted to one line"
    return json.loads(lines[0])["nodes"]


# ---------------------------------------------------------------- browser
@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from lits.testing.browser import INSTALL_HINT, find_chromium, launch_chromium

    if find_chromium() is None:
        pytest.skip(f"no Chromium: {INSTALL_HINT}")
    pytest.importorskip("playwright.sync_api", reason="Playwright is missing: pip install -r requirements-dev.txt")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        try:
            yield browser
        finally:
            browser.close()


class Page:
    """A browser page that records console errors and uncaught exceptions."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))

    def open(self, report: Path, hash_: str = "#/") -> Any:
        self.page.goto(report.resolve().as_uri() + hash_)
        if hash_.startswith("#/tree/"):
            self.page.wait_for_function(
                "window.litsView && window.litsView.page === 'tree' && "
                "document.querySelector('#tree-canvas') && document.querySelector('#tree-canvas').dataset.rendered === '1'",
                timeout=15000,
            )
        else:
            self.page.wait_for_function("window.litsView && window.litsView.rendered === true", timeout=15000)
        return self.page

    def click_node(self, node_id: int) -> None:
        """Bring the node to the middle of the canvas and click it, as a person would."""
        self.page.evaluate(f"litsView.tree.centerOn({node_id})")
        spot = self.page.evaluate(f"litsView.tree.screenPos({node_id})")
        assert spot is not None, f"node {node_id} is not laid out"
        self.page.mouse.click(spot["x"], spot["y"])

    def screenshot(self, name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        self.page.screenshot(path=str(path))
        return path


@pytest.fixture
def page(browser: Any) -> Iterator[Page]:
    """A fresh page; the test fails if the page logged an error or threw."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    wrapped = Page(context.new_page())
    yield wrapped
    context.close()
    assert not wrapped.errors, wrapped.errors


@pytest.fixture(scope="session")
def written(runs: dict[str, Path]) -> Callable[[str], Path]:
    """``lits view`` run through the real command once per run; returns report.html's path."""
    done: dict[str, Path] = {}

    def report(name: str) -> Path:
        if name not in done:
            result = lits("view", str(runs[name]), cwd=runs[name].parent)
            assert result.returncode == 0, result.stderr
            done[name] = runs[name] / "report.html"
        return done[name]

    return report


# ---------------------------------------------------------------- a large tree without a search
@pytest.fixture
def synthetic_run() -> Callable[..., Path]:
    """Writes a run dir whose tree is built directly and journaled by the real TreeJournal."""
    return write_synthetic_run


def write_synthetic_run(
    root: Path,
    nodes: int = 10_000,
    branching: int = 4,
    seed: int = 0,
    invalid: tuple[int, ...] = (),
    proposals: tuple[tuple[str, bool], ...] = (),
) -> Path:
    """A finished one-instance MCTS run dir whose tree has ``nodes`` nodes (no model calls).

    Nodes in ``invalid`` get a step with an error (an illegal move); ``proposals``
    are the policy's sampled actions with their duplicate flags.
    """
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    tree: list[SearchNode] = [MCTSNode(id=0)]
    frontier = [tree[0]]
    while len(tree) < nodes:
        parent = frontier.pop(0)
        for _ in range(min(branching, nodes - len(tree))):
            child = parent.add_child(MCTSNode(id=len(tree), action=f"step {len(tree)}"))
            child.fast_reward, child.reward = rng.random(), rng.random()
            child.state = {"text": f"state after step {child.id}"}
            if child.id in invalid:
                child.step = {"action": child.action, "error": "that move is not allowed here"}
            tree.append(child)
            frontier.append(child)
    leaves = [n for n in tree if not n.children]
    paths = [rng.choice(leaves).id for _ in range(200)]
    best = max(leaves, key=lambda n: (n.reward, -n.id)).path()
    journal = TreeJournal(root / "checkpoints" / "0.journal.jsonl")
    journal.append(len(paths), len(tree), {"nodes": len(tree)}, tree, paths, list(proposals))
    journal.close()
    _json(
        root / "config.json",
        {
            "command": "search",
            "dataset": "synthetic",
            "search": "mcts",
            "model": "none",
            "search_args": {"aggregate": "mean", "n_iterations": len(paths)},
        },
    )
    _json(root / "paths" / "0.json", [{"id": n.id} for n in best])
    _json(root / "terminal_nodes" / "0.json", [])
    _json(
        root / "results" / "0.json",
        {
            "idx": 0,
            "id": "synthetic-0",
            "query": "a large tree",
            "mode": "search",
            "final_state": None,
            "stopped": "budget",
            "iterations": len(paths),
            "eval": {"solved": False},
        },
    )
    return root


def _json(path: Path, payload: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload), encoding="utf-8")
