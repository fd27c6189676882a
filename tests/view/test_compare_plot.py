"""``lits compare --plot``: accuracy against tokens, calls, seconds, cost and the per-solved figures, one point
per run."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.view.conftest import lits

SVG = "{http://www.w3.org/2000/svg}"
COMPARED = ["blocksworld-mcts", "blocksworld-bfs", "blocksworld-chain"]


def test_the_svg_has_one_point_per_run_in_each_panel_and_labelled_axes(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "acc.svg"
    result = lits("compare", *(str(runs[n]) for n in COMPARED), "--plot", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "accuracy" in result.stdout and f"wrote {out}" in result.stdout  # the table is still printed
    root = ET.parse(out).getroot()
    panels = {str(g.get("id")): g for g in root.iter(f"{SVG}g") if (g.get("id") or "").startswith("points-")}
    assert sorted(panels) == [
        "points-calls",
        "points-cost",
        "points-evaluated_prompt_tokens_per_solved",
        "points-model_seconds_per_solved",
        "points-seconds",
        "points-tokens",
    ]
    for group in panels.values():
        assert len(list(group.iter(f"{SVG}use"))) == len(COMPARED)
    texts = {"".join(t.itertext()).strip() for t in root.iter(f"{SVG}text")}
    assert {
        "tokens (in + out)",
        "model calls",
        "seconds (all instances)",
        "cost ($)",
        "accuracy (%)",
        "evaluated prompt tokens / solved",
        "model seconds / solved",
    } <= texts
    assert {"mcts", "bfs", "env_chain (chain)"} <= texts


def test_the_png_is_an_image_of_the_figure_with_one_point_per_run(runs: dict[str, Path], tmp_path: Path) -> None:
    import matplotlib.image
    from lits.runs.results.compare import compare_rows
    from lits.view.plot import compare_figure, save_compare_plot

    rows = compare_rows([runs[n] for n in COMPARED])
    figure = compare_figure(rows)
    for ax in figure.axes:
        assert ax.get_ylabel() == "accuracy (%)" and ax.get_xlabel()
        (points,) = [c for c in ax.collections if str(c.get_gid()).startswith("points-")]
        assert len(points.get_offsets()) == len(rows)
    assert sorted(a.get_text() for a in figure.axes[0].texts) == sorted(r["method"] for r in rows)
    image = matplotlib.image.imread(save_compare_plot(rows, tmp_path / "acc.png"))
    assert image.shape[0] > 300 and image.shape[1] > 300


def test_another_format_is_refused_before_anything_is_drawn(runs: dict[str, Path], tmp_path: Path) -> None:
    result = lits("compare", str(runs["blocksworld-mcts"]), "--plot", str(tmp_path / "acc.pdf"), cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert (
        result.stderr.strip()
        == "lits: error: --plot writes a .png or .svg file, not '" + str(tmp_path / "acc.pdf") + "'"
    )


def test_without_matplotlib_one_line_says_how_to_install_it(runs: dict[str, Path], tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['matplotlib'] = None; from lits.cli.main import main; "
        f"sys.exit(main(['compare', {str(runs['blocksworld-mcts'])!r}, '--plot', 'x.png']))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "lits: error: lits compare --plot needs matplotlib: pip install 'lits-core[plot]'"
    ]
    assert not (tmp_path / "x.png").exists()


def test_each_run_after_the_first_has_its_paired_interval_as_an_error_bar(runs: dict[str, Path]) -> None:
    from lits.runs.results.compare import compare_rows
    from lits.view.plot import compare_figure

    rows = compare_rows([runs[n] for n in COMPARED])
    for ax in compare_figure(rows).axes:
        bars = [c for c in ax.collections if str(c.get_gid()).startswith("interval-")]
        assert len(bars) == len(rows) - 1  # the first run is the reference: no bar
        for bar, row in zip(bars, rows[1:], strict=True):
            (segment,) = bar.get_segments()
            low, high = sorted(y for _, y in segment)
            paired = row["paired_with_first"]
            accuracy = 100 * row["accuracy"]
            assert low <= accuracy <= high
            assert high - low == pytest.approx(100 * (paired["interval"][1] - paired["interval"][0]), abs=1e-6)
