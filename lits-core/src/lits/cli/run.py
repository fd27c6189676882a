"""``lits search`` / ``lits chain``: flags to a run, the run (:mod:`lits.runs.session`), and one line on how it ended.

Every way a run can stop early ends with the summary written for what finished
and one line: Ctrl-C (exit 130), a server that fails instance after instance
(exit 1), a full disk or a broken cache (exit 2); each names ``--resume``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from lits.cli.errors import UserError
from lits.cli.settings import resumed_settings, spec_from_args
from lits.runs.artifacts import RunDir
from lits.runs.control import BREAKER, INTERRUPT
from lits.runs.session import Finished, execute, format_summary, new_run
from lits.runs.spec import RunSpec, apply_overrides

__all__ = ["run_command", "rerun_command", "report"]


def run_command(args: argparse.Namespace, mode: str) -> int:
    if args.resume:
        if args.config or args.set:
            raise UserError("--config and --set describe a new run; --resume continues the run in --save-dir as "
                            "it was (only operational flags may be given again)")
        run_dir, settings = resumed_settings(args, mode)
    else:
        run_dir, settings = new_run(spec_from_args(args, mode), check_only=args.dry_run)
    if args.dry_run:
        return dry_run(settings)
    return report(execute(run_dir, settings, resume=args.resume))


def rerun_command(args: argparse.Namespace) -> int:
    """``lits rerun RUN_DIR``: the same run again from its ``config.json``, into a new save dir."""
    source = RunDir(Path(args.run_dir))
    saved = source.read_config()
    save_dir = args.save_dir or f"{source.root}-rerun-{time.strftime('%Y%m%d-%H%M%S')}"
    values = apply_overrides({"save_dir": save_dir}, args.set)
    spec = RunSpec.from_config(saved, **values)
    run_dir, settings = new_run(spec, check_only=args.dry_run)
    if args.dry_run:
        return dry_run(settings)
    print(f"lits: rerun of {source.root}", file=sys.stderr)
    return report(execute(run_dir, settings))


def dry_run(settings: dict[str, Any]) -> int:
    """Print the resolved run and its plan; nothing is written and no model is called."""
    from lits.runs.artifacts import redact
    from lits.runs.planning import format_plan, plan

    planned = plan(settings)
    shown = {k: v for k, v in redact(planned["settings"]).items() if k not in ("created", "lits_version")}
    print(json.dumps(shown, indent=1, sort_keys=True, default=str))
    print(format_plan(planned))
    return 0


def report(done: Finished) -> int:
    """Print the summary and the line that says how the run ended; the exit status."""
    outcome, summary, hint = done.outcome, done.summary, done.run_dir.resume_hint(done.mode)
    print(format_summary(summary))
    if outcome.skipped:
        print(f"lits: {len(outcome.skipped)} instances were already done and were skipped", file=sys.stderr)
    code = 0
    if outcome.stop_reason == INTERRUPT:
        unfinished = done.total - summary["instances"]
        print(f"lits: interrupted: {summary['instances']} of {done.total} instances finished and kept, "
              f"{unfinished} not; continue with `{hint}`", file=sys.stderr, flush=True)
        code = 130
    elif outcome.stop_reason == BREAKER:
        print(f"lits: error: {outcome.stop_message}, then run `{hint}`", file=sys.stderr)
        code = 1
    elif outcome.failed:
        first_idx, first = next(iter(outcome.failed.items()))
        print(f"lits: {len(outcome.failed)} instances failed (instance {first_idx}: {first}); "
              f"see {done.run_dir.root / 'execution.log'}, then run `{hint}`", file=sys.stderr)
        code = 1
    if outcome.stragglers:  # a call past the grace period: exit without waiting for it
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
