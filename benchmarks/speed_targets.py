"""Every speed target of short and wide runs, measured in one run, with each figure's spread and verdict.

Short runs (``short_runs.py``: ``--repeats`` fresh processes of the original's
BlocksWorld MCTS shape at 10 iterations on the scripted model) give the ratio
to the original, the framework cost per model call and the time to the first
iteration.  With ``--original PATH`` (a checkout of xinzhel/lits-llm at
8823d65; set-up in ``original_lits.py``) the ratio is side by side: the
original runs the same cases with a stub model that answers like ours, in
pairs alternating with ours, and the target is met on ours over the original's
CPU time of the search per iteration (the wall-time ratio, each side's ms per
iteration and the load average are printed beside it).  Without it the ratio
is ours over a constant 25 ms per iteration, and the table says so: that is
not side by side.  Wide runs (``concurrency.py`` without its
concurrency-1 pass, ``--rounds`` times: 30 instances against a loopback server
answering after 0.1 s) give concurrency 32 against its critical-path bound and
tree-parallel MCTS (K = 4 rollouts, 64 slots) against the sequential search's
bound, with both passes' solved counts.  A figure is met when its median is
within the target; how many single runs met it is printed beside it.

    python benchmarks/speed_targets.py --data ../shared/data/blocksworld [--repeats 11] [--rounds 3]
        [--work-dir DIR] [--out FILE] [--original /tmp/lits-llm [--original-python PYTHON]]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).parent))

import concurrency  # noqa: E402  (the benchmarks folder is not a package)
import short_runs  # noqa: E402

#: (figure, target, is a value within it, how the target reads)
TARGETS: list[tuple[str, float, Callable[[float, float], bool], str]] = [
    ("ratio", 0.06, lambda v, t: v <= t, "≤ 0.06 of the original's CPU per iteration, side by side (stretch 0.04)"),
    ("framework_ms_per_call", 0.3, lambda v, t: v <= t, "≤ 0.3 ms framework cost per model call"),
    ("first_iteration_s", 0.4, lambda v, t: v <= t, "≤ 0.4 s from start to the first iteration"),
    ("c32_to_critical_path", 1.10, lambda v, t: v <= t, "concurrency 32 ≤ 1.10 × its critical-path bound"),
    ("k4_c64_to_sequential", 0.6, lambda v, t: v <= t, "K = 4 ≤ 0.6 × the sequential bound"),
    ("k4_solved_minus_sequential", 1, lambda v, t: abs(v) <= t, "K = 4 solves as many as sequential ± 1"),
]


def wide_figures(rounds: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {
        "c32_to_critical_path": [],
        "k4_c64_to_sequential": [],
        "k4_solved_minus_sequential": [],
    }
    for _ in range(rounds):
        report = concurrency.wide_runs(serial=False, echo=False)
        figures["c32_to_critical_path"].append(report["ratio_c32_to_critical_path"])
        figures["k4_c64_to_sequential"].append(report["ratio_k4_c64_to_sequential_critical_path"])
        figures["k4_solved_minus_sequential"].append(
            report["concurrency_64_k4"]["solved"] - report["concurrency_32"]["solved"]
        )
    return figures


#: The ratio target's text when the original was not run beside ours.
AGAINST_CONSTANT = (
    f"≤ 0.06 of the constant {short_runs.ORIGINAL_MS_PER_ITERATION} ms per iteration "
    "(not side by side: give --original; stretch 0.04)"
)


def table(figures: dict[str, list[float]]) -> list[str]:
    lines = ["| target | runs | median (range) | met in | verdict |", "|---|---|---|---|---|"]
    for name, target, within, text in TARGETS:
        if name == "ratio" and "wall_ratio" not in figures:
            text = AGAINST_CONSTANT
        values = figures[name]
        median = statistics.median(values)
        met = sum(within(v, target) for v in values)
        lines.append(
            f"| {text} | {len(values)} | {short_runs.spread(values, 3)} | {met}/{len(values)} "
            f"| {'met' if within(median, target) else '**missed**'} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/blocksworld")
    parser.add_argument("--repeats", type=int, default=11, help="short runs (fresh processes)")
    parser.add_argument("--rounds", type=int, default=3, help="wide runs (each ~25 s)")
    parser.add_argument("--work-dir", default=".", help="where the short runs' directories are made")
    parser.add_argument("--out", type=Path, default=None, help="write every single figure as JSON here")
    parser.add_argument(
        "--original",
        default=None,
        help="a checkout of the original LiTS (xinzhel/lits-llm at 8823d65): the ratio side by side",
    )
    parser.add_argument(
        "--original-python",
        default=short_runs.ORIGINAL_PYTHON,
        help=f"the interpreter that runs the original (default: {short_runs.ORIGINAL_PYTHON})",
    )
    args = parser.parse_args()
    if not Path(args.data).is_dir():
        parser.error(f"--data {args.data} is not a directory (the BlocksWorld data set)")
    if args.repeats < 1 or args.rounds < 1:
        parser.error("--repeats and --rounds must be at least 1")
    short_runs.check_original(parser, args.original, args.original_python)
    figures: dict[str, Any] = short_runs.measure(
        args.data, args.repeats, work_dir=args.work_dir, original=args.original, original_python=args.original_python
    )
    figures.update(wide_figures(args.rounds))
    print("\n".join(table(figures)))
    print("\n| beside the ratio | median (range) |\n|---|---|")
    print("\n".join(f"| {figure} | {value} |" for figure, value in short_runs.side_by_side_rows(figures)))
    if args.out:
        args.out.write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
