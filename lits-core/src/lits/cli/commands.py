"""The work behind each ``lits`` sub-command."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable

from lits.io import layout
from lits.cli.errors import UserError


def cmd_plugins(args: argparse.Namespace) -> int:
    from lits.cli.plugin_commands import cmd_plugins as run

    return run(args)


def cmd_search(args: argparse.Namespace) -> int:
    return run_command(args, "search")


def cmd_chain(args: argparse.Namespace) -> int:
    return run_command(args, "chain")


def run_command(args: argparse.Namespace, mode: str) -> int:
    """``lits search`` / ``lits chain``: the flags become a run (or a resume request); the run goes to the end
    below the CLI (:func:`lits.runs.session.run_to_end`), which prints how it ended."""
    from lits.cli.settings import run_request
    from lits.runs.session import run_to_end

    dry_run = bool(args.dry_run)
    request = run_request(args, mode)
    return run_to_end(request, dry_run=dry_run)


def cmd_rerun(args: argparse.Namespace) -> int:
    """``lits rerun RUN_DIR``: the same run again from its ``config.json``, into a new save dir."""
    import time

    from lits.runs.results.artifacts import RunDir
    from lits.runs.session import run_to_end
    from lits.runs.spec import RunSpec, SpecError, apply_overrides

    source = RunDir(Path(args.run_dir))
    saved = source.read_config()
    save_dir = args.save_dir or f"{source.root}-rerun-{time.strftime('%Y%m%d-%H%M%S')}"
    changes = apply_overrides({"save_dir": save_dir}, args.set)
    try:
        spec = RunSpec.from_config(saved.as_config(), **changes, trust_config=bool(args.trust_config))
    except SpecError as exc:  # a bad value read from config.json: the line names the file
        if exc.field.split(".")[0] not in changes:
            exc.source = str(source.config_path)
        raise
    if not args.dry_run:
        print(f"lits: rerun of {source.root}", file=sys.stderr)
    return run_to_end(spec, dry_run=args.dry_run)


def cmd_compare(args: argparse.Namespace) -> int:
    from lits.runs.results.compare import compare_rows, format_rows, paired_lines, replay_lines

    plot = getattr(args, "plot", None)
    if plot and Path(plot).suffix.lower() not in (".png", ".svg"):
        raise UserError(f"--plot writes a .png or .svg file, not {plot!r}")
    rows = compare_rows([Path(d) for d in args.save_dirs])
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(format_rows(rows, markdown=args.markdown))
        for notes in (replay_lines(rows), paired_lines(rows)):
            if notes:
                print("\n" + "\n".join(notes))
    if plot:
        from lits.view.plot import save_compare_plot

        _write_plot(lambda path: save_compare_plot(rows, path), plot, to_stderr=args.json)
    return 0


def cmd_curve(args: argparse.Namespace) -> int:
    """``lits curve``: accuracy at each budget point, from each run's journals (:mod:`lits.runs.sweeps.curve`)."""
    from lits.runs.sweeps.curve import curves, dump, format_curves, parse_points

    plot = args.plot
    if plot and Path(plot).suffix.lower() not in (".png", ".svg"):
        raise UserError(f"--plot writes a .png or .svg file, not {plot!r}")
    points = parse_points(args.points) if args.points else None
    found = curves([Path(d) for d in args.save_dirs], args.budget, points)
    print(dump(found) if args.json else format_curves(found))
    if plot:
        from lits.view.plot import save_curve_plot

        _write_plot(lambda path: save_curve_plot(found, path), plot, to_stderr=args.json)
    return 0


def _write_plot(save: Callable[[Path], Path], plot: str, *, to_stderr: bool) -> None:
    """Draw a ``--plot`` file and say where; no matplotlib or an unwritable file is one line."""
    from lits.view.plot import PlotUnavailable

    try:
        written = save(Path(plot))
    except PlotUnavailable as exc:
        raise UserError(str(exc)) from None
    except OSError as exc:
        raise UserError(f"cannot write {plot}: {exc.strerror or exc}") from None
    print(f"wrote {written}", file=sys.stderr if to_stderr else sys.stdout)


def cmd_eval(args: argparse.Namespace) -> int:
    """Re-judge a run's results from its save dir alone; what only the run measured is kept."""
    from lits.runs.session import constrained_by, format_summary, read_inference_log, write_eval
    from lits.components.factory import create_components
    from lits.runs.results.artifacts import RunDir
    from lits.runs.results.evaluation import aggregate, instance_counts, reevaluate
    from lits.runs.results.stats import whole_run

    run_dir = RunDir(Path(args.save_dir))
    config = run_dir.read_config()
    results = run_dir.read_results(config.command)
    if not results:
        raise UserError(f"{run_dir.root} has no finished instances to evaluate")
    components = create_components(
        config.dataset,
        None,
        transition=config.transition,
        resource_args=config.dataset_args,
        framework=config.search_framework,
    )

    def attempt(idx: int, k: int) -> dict[str, object] | None:
        saved = _read_json(run_dir.root / layout.attempt(idx, k)).get("record")
        return saved if isinstance(saved, dict) else None

    results = reevaluate(components, results, {}, attempt)
    summary = aggregate(results, read_inference_log(run_dir), run_dir.read_timings(), config.attempts)
    previous = _read_json(run_dir.root / layout.SUMMARY)
    summary.update(instance_counts(len(results), previous.get("total"), previous.get("failed")))
    measured = whole_run(run_dir.root)
    if not measured["processes"]:  # a run from before stats/ existed
        measured = {
            "policy_stats": previous.get("policy_stats"),
            "run_seconds": previous.get("run_seconds"),
            "calls_in_flight_avg": previous.get("calls_in_flight_avg"),
            "faults": previous.get("faults"),
        }
    summary.update(measured)
    summary["stopped"], summary["retried_instances"] = previous.get("stopped"), previous.get("retried_instances")
    constrained = constrained_by(config)
    if constrained:
        summary["constrained_replies"] = constrained
    verifier = None
    if getattr(args, "verifier", False):
        from lits.export.verifier import verifier_section

        verifier = summary["verifier"] = verifier_section(run_dir.root)
    elif isinstance(previous.get("verifier"), dict):
        summary["verifier"] = previous["verifier"]
    write_eval(run_dir, config, summary)
    print(json.dumps(summary, indent=1) if args.json else format_summary(summary))
    if verifier is not None and not args.json:
        from lits.export.verifier import format_report

        print(format_report(verifier))
    return 0


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
