"""``lits compare --plot``: accuracy against tokens, calls, seconds, cost, and evaluated prompt tokens and
model seconds per solved instance, one point per run; ``lits curve --plot``: accuracy against a budget, one
line per run (:mod:`lits.runs.sweeps.curve`).

The compute-matched picture: a method is only better if it is better at the
same spend.  matplotlib (the ``plot`` extra) is imported here only, and
drawn through a bare Figure on the Agg canvas, never pyplot's global state.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Callable, Mapping

if TYPE_CHECKING:
    from lits.runs.results.compare import CompareRow
    from lits.runs.sweeps.curve import RunCurve
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

#: (row key, axis label) of each panel's x axis.
SPEND_AXES = (
    ("tokens", "tokens (in + out)"),
    ("calls", "model calls"),
    ("seconds", "seconds (all instances)"),
    ("cost", "cost ($)"),
    ("evaluated_prompt_tokens_per_solved", "evaluated prompt tokens / solved"),
    ("model_seconds_per_solved", "model seconds / solved"),
)
ACCURACY_LABEL = "accuracy (%)"
FORMATS = (".png", ".svg")
INSTALL_HINT = "pip install 'lits-core[plot]'"


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def _matplotlib() -> tuple[ModuleType, type[Figure], type[FigureCanvasAgg]]:
    from lits.runtime.extras import MissingExtra, require

    try:
        matplotlib = require("matplotlib", install="lits-core[plot]", what="lits compare --plot")
    except MissingExtra as exc:
        raise PlotUnavailable(str(exc)) from None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    return matplotlib, Figure, FigureCanvasAgg


def spend(row: CompareRow, key: str) -> float:
    if key == "tokens":
        return float(row.get("tokens_in") or 0) + float(row.get("tokens_out") or 0)
    values: Mapping[str, object] = row
    value = values.get(key)
    return float(value) if isinstance(value, (int, float)) else 0.0


def _paired_bar(row: CompareRow) -> tuple[float, float] | None:
    """How far below and above its accuracy (in points) a run's error bar reaches: the 95 % paired interval of
    its difference from the first run, around its own accuracy (None: the first run, or nothing shared)."""
    paired = row.get("paired_with_first")
    if not paired or paired["interval"] is None or paired["difference"] is None:
        return None
    low, high = paired["interval"]
    diff = paired["difference"]
    return 100.0 * max(0.0, diff - low), 100.0 * max(0.0, high - diff)


def compare_figure(rows: list[CompareRow]) -> Figure:
    """A 2×3 figure: accuracy (y) against each spend (x); each run one labelled point (a run that solved
    nothing has no per-solved figure: it sits at 0 there).  Each run after the first carries an error bar:
    the 95 % paired-bootstrap interval of its difference from the first run, over their shared instances.

    Each panel's points are one collection whose gid is ``points-<spend>``
    (so an SVG can be read back point by point).
    """
    _, Figure, FigureCanvasAgg = _matplotlib()
    fig = Figure(figsize=(15, 7.5), layout="constrained")
    FigureCanvasAgg(fig)
    methods = sorted({str(r["method"]) for r in rows})
    colours = {m: f"C{i % 10}" for i, m in enumerate(methods)}
    for ax, (key, label) in zip(fig.subplots(2, 3).flat, SPEND_AXES, strict=True):
        xs = [spend(r, key) for r in rows]
        ys = [100.0 * float(r.get("accuracy") or 0.0) for r in rows]
        points = ax.scatter(xs, ys, c=[colours[str(r["method"])] for r in rows], s=46, zorder=3)
        points.set_gid(f"points-{key}")
        for x, y, row in zip(xs, ys, rows, strict=True):
            ax.annotate(str(row["method"]), (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
            bar = _paired_bar(row)
            if bar is not None:
                drawn = ax.errorbar(
                    [x],
                    [y],
                    yerr=[[bar[0]], [bar[1]]],
                    fmt="none",
                    capsize=3,
                    zorder=2,
                    ecolor=colours[str(row["method"])],
                )
                drawn.lines[2][0].set_gid(f"interval-{key}")
        ax.set_xlabel(label)
        ax.set_ylabel(ACCURACY_LABEL)
        ax.set_ylim(-5, 105)
        positive = [x for x in xs if x > 0]
        if positive and len(positive) == len(xs) and max(positive) / min(positive) >= 50:
            ax.set_xscale("log")
        elif xs and max(xs) > 0:
            ax.set_xlim(left=0, right=max(xs) * 1.25)
        else:  # nothing spent on this axis (e.g. no --price-in/--price-out): say so, not 1e-9
            ax.set_xlim(-0.05, 1)
            ax.text(
                0.5,
                0.5,
                f"every run: 0 {'(no prices set)' if key == 'cost' else ''}".strip(),
                transform=ax.transAxes,
                ha="center",
                color="0.45",
            )
        ax.grid(True, alpha=0.3)
    datasets = sorted({str(r.get("dataset")) for r in rows})
    fig.suptitle(f"Accuracy against compute — {', '.join(datasets)} ({len(rows)} runs)")
    return fig


#: x-axis label of each ``lits curve --budget``.
BUDGET_LABELS = {
    "iterations": "iterations (MCTS) / depths (BFS)",
    "calls": "model calls per instance",
    "tokens": "tokens (in + out) per instance",
}


def curve_figure(curves: list[RunCurve]) -> Figure:
    """Accuracy (y) against the budget (x), one line per run (gid ``curve-<k>``).

    A run after the first carries error bars: the 95 % paired-bootstrap interval of its difference to the
    first run, drawn around the first run's accuracy at that point, so a bar that does not reach the first
    run's line is a difference the instances support.
    """
    _, Figure, FigureCanvasAgg = _matplotlib()
    fig = Figure(figsize=(8, 5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    first = curves[0]
    for k, curve in enumerate(curves):
        rows = curve.rows(first if k else None)
        known = [
            (p["budget"], 100.0 * p["accuracy"], p["paired_with_first"]) for p in rows if p["accuracy"] is not None
        ]
        xs, ys = [x for x, _, _ in known], [y for _, y, _ in known]
        # later runs hollow and larger, so a point two runs share shows both
        (line,) = ax.plot(
            xs,
            ys,
            marker="osD^v<>"[k % 7],
            linestyle=("-", "--", "-.", ":")[k % 4],
            color=f"C{k % 10}",
            label=f"[{k}] {curve.label}",
            zorder=3 + k,
            markersize=6 + 3 * min(k, 2),
            markerfacecolor="none" if k else None,
            markeredgewidth=1.5,
        )
        line.set_gid(f"curve-{k}")
        bars = [
            (x, y, paired)
            for x, y, paired in known
            if paired is not None and paired["interval"] is not None and paired["accuracy_a"] is not None
        ]
        if bars:
            lows = [y - 100.0 * (p["accuracy_a"] + p["interval"][0]) for _, y, p in bars]  # type: ignore[index,operator]
            highs = [100.0 * (p["accuracy_a"] + p["interval"][1]) - y for _, y, p in bars]  # type: ignore[index,operator]
            ax.errorbar(
                [x for x, _, _ in bars],
                [y for _, y, _ in bars],
                yerr=[[max(0.0, v) for v in lows], [max(0.0, v) for v in highs]],
                fmt="none",
                ecolor=f"C{k % 10}",
                elinewidth=1.2,
                capsize=4,
                alpha=0.7,
                zorder=2,
            )
    ax.set_xlabel(BUDGET_LABELS.get(first.budget, first.budget))
    ax.set_ylabel(ACCURACY_LABEL)
    ax.set_ylim(-5, 105)
    ax.set_xlim(left=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)
    ax.set_title(
        f"Anytime accuracy by {first.budget} ({len(curves)} run{'s' if len(curves) > 1 else ''}; "
        "bars: 95 % paired interval against [0])"
        if len(curves) > 1
        else f"Anytime accuracy by {first.budget}",
        fontsize=10,
    )
    return fig


def save_compare_plot(rows: list[CompareRow], path: Path) -> Path:
    """Write the figure as PNG or SVG (by ``path``'s suffix); SVG keeps its text as text."""
    return _save(lambda: compare_figure(rows), path)


def save_curve_plot(curves: list[RunCurve], path: Path) -> Path:
    """Write :func:`curve_figure` as PNG or SVG (by ``path``'s suffix)."""
    return _save(lambda: curve_figure(curves), path)


def _save(draw: Callable[[], Figure], path: Path) -> Path:
    matplotlib, _, _ = _matplotlib()
    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise ValueError(f"--plot writes .png or .svg, not {path.name!r}")
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "lits"}):
        fig = draw()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110, metadata={"Date": None} if path.suffix.lower() == ".svg" else None)
    return path
