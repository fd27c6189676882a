"""``lits export RUN [RUN ...]``: training data from finished runs (see :mod:`lits.export`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lits.cli.errors import UserError


def add_export_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("export", help="write training data (SFT, preference pairs, process labels) from runs")
    p.add_argument("runs", nargs="+", metavar="RUN", help="finished runs' save dirs (search or chain)")
    p.add_argument("--out", default=None, metavar="DIR", help="where the files go (default: RUN-export)")
    p.add_argument(
        "--kind",
        action="append",
        default=None,
        choices=["sft", "preference", "process"],
        help="what to write (repeatable; default all three)",
    )
    p.add_argument(
        "--format",
        dest="fmt",
        default="jsonl",
        choices=["jsonl", "parquet"],
        help="jsonl (default) or parquet (needs lits-core[export])",
    )
    p.add_argument(
        "--style",
        default="trl",
        choices=["trl", "openrlhf"],
        help="process labels as TRL's stepwise format (default) or OpenRLHF's PRM format",
    )
    p.add_argument(
        "--placeholder",
        default="ки",
        metavar="TOKEN",
        help="with --style openrlhf: the token after each step (OpenRLHF's --placeholder_token)",
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        help="a step's hard label is true when its Monte-Carlo value is at least this (default 0.5)",
    )
    p.add_argument(
        "--values-from",
        default="auto",
        choices=["auto", "rollouts", "terminals"],
        help="Monte-Carlo values from backed-up rollouts (MCTS) or terminal nodes under the node "
        "(default auto: rollouts when the search backed any up)",
    )
    p.add_argument(
        "--min-visits",
        type=int,
        default=1,
        metavar="N",
        help="label only nodes with at least N outcomes under them (default 1)",
    )
    p.add_argument(
        "--min-margin",
        type=float,
        default=None,
        metavar="M",
        help="also pair siblings whose values differ by at least M (default: only pairs where one "
        "reaches a correct answer and the other none)",
    )
    p.add_argument(
        "--all-solved", action="store_true", help="SFT: one row per distinct correct path, not one per solved instance"
    )
    p.add_argument(
        "--sft-per-step",
        action="store_true",
        help="SFT: one row per step of a solved path (the policy's prompt before the step), not per path",
    )
    p.add_argument(
        "--no-examples",
        action="store_true",
        help="prompts without the policy's worked examples (system prompt and the ask only)",
    )
    p.add_argument(
        "--finished-only",
        action="store_true",
        default=True,
        help="only finished instances (the default and, as the gold lives in the result, the only choice)",
    )
    p.add_argument(
        "--holdout-ids",
        default=None,
        metavar="FILE",
        help="instance ids (one a line) written to KIND.holdout.* instead",
    )
    p.add_argument(
        "--holdout-share",
        type=float,
        default=0.0,
        metavar="F",
        help="hold out this share of instances, chosen by a hash of their id (deterministic)",
    )
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from lits.export import KINDS, export_runs, read_holdout_ids
    from lits.export.rows import RowOptions

    if args.min_visits < 1:
        raise UserError(f"--min-visits must be at least 1, not {args.min_visits}")
    if args.holdout_ids and args.holdout_share:
        raise UserError("give --holdout-ids or --holdout-share, not both")
    out = Path(args.out) if args.out else Path(f"{Path(args.runs[0]).resolve()}-export")
    options = RowOptions(
        all_solved=args.all_solved,
        per_step=args.sft_per_step,
        examples=not args.no_examples,
        min_visits=args.min_visits,
        min_margin=args.min_margin,
        threshold=args.threshold,
        style=args.style,
        placeholder=args.placeholder,
    )
    held = read_holdout_ids(Path(args.holdout_ids)) if args.holdout_ids else None
    try:
        report = export_runs(
            [Path(r) for r in args.runs],
            out,
            kinds=args.kind or KINDS,
            fmt=args.fmt,
            options=options,
            source=args.values_from,
            holdout_ids=held,
            holdout_share=args.holdout_share,
        )
    except OSError as exc:
        raise UserError(f"cannot write {exc.filename or out}: {exc.strerror or exc}") from None
    for note in report.notes:
        print(f"lits: note: {note}", file=sys.stderr)
    for kind, counts in report.counts.items():
        rows = f"{counts['rows']} row" + ("" if counts["rows"] == 1 else "s")
        print(f"{kind}: {rows}" + (f" (+{counts['holdout']} held out)" if counts["holdout"] else ""))
    print(f"wrote {report.out}")
    return 0
