"""The viewer on a 10,000-node tree: time until headless Chromium has drawn the tree page.

A real run makes the tree: BlocksWorld MCTS with the zero-latency scripted
model, early stop off, enough iterations for >= 10,000 nodes (the whole
`lits search` path: journal, inference log).  Then `lits view` writes
report.html, and Debian's Chromium (Playwright) opens ``report.html#/tree/0``
REPEATS times in fresh pages.  Reported (median of the repeats):

- page load to tree drawn: ``performance.now()`` when the first frame of the
  tree was on the canvas (from navigation start: HTML and JSON parse, layout, draw);
- wall time from ``goto`` to drawn, as the test harness sees it;
- "expand all": laying out and drawing every node (the default view collapses
  a tree this large to ~1,500 visible nodes around the selected path);
- one redraw of the fully expanded tree fitted to the window, every node in view
  (what a pan or zoom step costs at its worst).

    python benchmarks/view_large_tree.py [--iterations 2100] [--repeats 5] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lits.testing.browser import launch_chromium
from lits.view.html import write_report

READY = (
    "window.litsView && window.litsView.page === 'tree' && document.querySelector('#tree-canvas') "
    "&& document.querySelector('#tree-canvas').dataset.rendered === '1'"
)


def make_run(root: Path, iterations: int) -> Path:
    run = root / "large-mcts"
    args = [
        sys.executable,
        "-m",
        "lits",
        "search",
        "--dataset",
        "blocksworld",
        "--model",
        "scripted",
        "--limit",
        "1",
        "--search-arg",
        f"n_iterations={iterations}",
        "--search-arg",
        "early_stop=false",
        "--search-arg",
        "max_depth=10",
        "--no-cache",
        "--save-dir",
        str(run),
    ]
    subprocess.run(args, check=True, capture_output=True, cwd=root)
    return run


def measure(report: Path, repeats: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    loads, walls, expands, redraws = [], [], [], []
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright)
        for _ in range(repeats):
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda e, seen=errors: seen.append(str(e)))
            start = time.perf_counter()
            page.goto(report.resolve().as_uri() + "#/tree/0")
            page.wait_for_function(READY, timeout=120_000)
            walls.append(1000 * (time.perf_counter() - start))
            loads.append(page.evaluate("window.litsView.drawnAt"))
            nodes = int(page.locator("#tree-canvas").get_attribute("data-node-count") or 0)
            shown = int(page.locator("#tree-canvas").get_attribute("data-visible-count") or 0)
            expands.append(
                page.evaluate("""() => { const t = performance.now();
                [...document.querySelectorAll('button')].find(b => b.textContent === 'expand all').click();
                return performance.now() - t; }""")
            )
            page.get_by_role("button", name="fit").click()  # every node in view: nothing is culled
            redraws.append(
                page.evaluate("""() => { const t = performance.now();
                window.litsView.tree.setIteration(window.litsView.tree.iteration); return performance.now() - t; }""")
            )
            drawn = int(page.locator("#tree-canvas").get_attribute("data-drawn-count") or 0)
            if errors:
                raise RuntimeError(f"the page threw: {errors}")
            page.close()
        browser.close()
    return {
        "nodes": nodes,
        "visible_at_first": shown,
        "load_to_drawn_ms": round(statistics.median(loads)),
        "wall_ms": round(statistics.median(walls)),
        "expand_all_ms": round(statistics.median(expands)),
        "redraw_all_ms": round(statistics.median(redraws)),
        "drawn_in_redraw": drawn,
        "repeats": repeats,
        "load_to_drawn_all_ms": [round(x) for x in loads],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=2100)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--keep", default=None, help="make the run in this directory and keep it")
    args = parser.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="lits-view-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        run = make_run(root, args.iterations)
        start = time.perf_counter()
        report = write_report(run)
        write_seconds = time.perf_counter() - start
        figures = {
            "write_report_s": round(write_seconds, 2),
            "html_mb": round(report.stat().st_size / 1e6, 1),
            **measure(report, args.repeats),
        }
        print(json.dumps(figures, indent=1))
        if figures["nodes"] < 10_000:
            print(f"note: only {figures['nodes']} nodes; raise --iterations", file=sys.stderr)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
