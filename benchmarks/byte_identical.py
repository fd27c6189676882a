"""Do two LiTS versions write the same run directories? Every registered search and chain, on the scripted model.

    python benchmarks/byte_identical.py --before OLD/.venv/bin/python --after NEW/.venv/bin/python

Each interpreter runs every workload below (small: two instances, few iterations, ``--no-cache``) into its own
save dir; the two run dirs are then compared file by file (results/, terminal_nodes/, paths/,
checkpoints/*.journal.jsonl, eval_results.json) as parsed JSON, leaving out only the fields in ``VOLATILE``.
Prints a table (method, dataset, files compared, identical or where the first differing file first differs); exits 1 if any differ.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from lits.testing.conformance import first_difference

MATH = "/work/shared/data/math/gsm8k_test.jsonl"
SMALL = ["--search-arg", "n_iterations=3"]

#: (method, dataset, arguments): each registered search (mcts, bfs), search framework (tot_bfs, rap, rest) and
#: chain (cot, env_chain, react, sc) on a dataset it serves.
WORKLOADS: list[tuple[str, str, list[str]]] = [
    ("search mcts", "blocksworld", ["search", "--search", "mcts", "--dataset", "blocksworld", *SMALL]),
    ("search bfs", "blocksworld", ["search", "--search", "bfs", "--dataset", "blocksworld"]),
    ("search mcts", "crosswords", ["search", "--search", "mcts", "--dataset", "crosswords", *SMALL]),
    (
        "search mcts",
        "gsm8k (shared)",
        ["search", "--search", "mcts", "--dataset", "gsm8k", "--dataset-arg", f"path={MATH}", *SMALL],
    ),
    ("search mcts", "gsm8k", ["search", "--search", "mcts", "--dataset", "gsm8k", *SMALL]),
    ("search tot_bfs", "gsm8k", ["search", "--search-framework", "tot_bfs", "--dataset", "gsm8k"]),
    ("search rap", "gsm8k", ["search", "--search-framework", "rap", "--dataset", "gsm8k", *SMALL]),
    ("search rest", "gsm8k", ["search", "--search-framework", "rest", "--dataset", "gsm8k", *SMALL]),
    ("search mcts", "mapeval-sql", ["search", "--search", "mcts", "--dataset", "mapeval-sql", *SMALL]),
    ("chain cot", "gsm8k", ["chain", "--chain", "cot", "--dataset", "gsm8k"]),
    ("chain sc", "gsm8k", ["chain", "--chain", "sc", "--dataset", "gsm8k"]),
    ("chain env_chain", "blocksworld", ["chain", "--chain", "env_chain", "--dataset", "blocksworld"]),
    ("chain react", "mapeval-sql", ["chain", "--chain", "react", "--dataset", "mapeval-sql"]),
]
COMMON = ["--limit", "2", "--model", "scripted", "--no-cache", "--concurrency", "1"]

#: Keys left out wherever they occur, each a duration measured on the clock, not something the run decided. Two
#: runs of one version differ in exactly these (all in eval_results.json): seconds, queued_seconds,
#: model_seconds, server_seconds (inference/spend blocks: time in and waiting for model calls),
#: seconds_per_instance, run_seconds, model_seconds_per_solved (wall time per instance, per run, per solve),
#: calls_in_flight_avg (model seconds over run seconds). The run dirs hold no dates, versions, pids or
#: absolute paths in the compared files (config.json, timings/ and the logs, which do, are not compared).
VOLATILE = frozenset(
    "seconds queued_seconds model_seconds server_seconds seconds_per_instance run_seconds "
    "model_seconds_per_solved calls_in_flight_avg".split()
)
COMPARED = (
    "results/*.json",
    "terminal_nodes/*.json",
    "paths/*.json",
    "checkpoints/*.journal.jsonl",
    "eval_results.json",
)


def _load(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.name.endswith(".jsonl"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


def compare_runs(before: Path, after: Path) -> tuple[int, list[str]]:
    """Files compared and one line per differing file ("file: where it first differs")."""
    names = sorted(
        {str(p.relative_to(run)) for run in (before, after) for pattern in COMPARED for p in run.glob(pattern)}
    )
    differing = []
    for name in names:
        if not (before / name).is_file() or not (after / name).is_file():
            differing.append(f"{name}: only in {'before' if (before / name).is_file() else 'after'}")
            continue
        found = first_difference(_load(before / name), _load(after / name), ignore=VOLATILE, strict_types=True)
        if found:
            differing.append(f"{name}: {found}")
    return len(names), differing


def _run(python: str, args: list[str], save_dir: Path) -> None:
    done = subprocess.run(
        [python, "-m", "lits", *args, *COMMON, "--save-dir", str(save_dir)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"{python} {' '.join(args)} failed (exit {done.returncode}): {last}")


def main() -> int:
    parser = argparse.ArgumentParser(description="Do two LiTS versions write the same run directories?")
    parser.add_argument("--before", required=True, help="python of the older LiTS install")
    parser.add_argument("--after", required=True, help="python of the newer LiTS install")
    parser.add_argument("--keep", type=Path, help="write the run dirs here (default: a temporary folder)")
    parser.add_argument("--only", help="run only workloads whose method contains this text")
    opts = parser.parse_args()
    root = opts.keep or Path(tempfile.mkdtemp(prefix="byte_identical-"))
    rows, failed = [], False
    for i, (method, dataset, args) in enumerate(WORKLOADS):
        if opts.only and opts.only not in method:
            continue
        dirs = {
            side: root / side / f"{i:02d}-{method.replace(' ', '-')}-{dataset.split()[0]}"
            for side in ("before", "after")
        }
        for side, python in (("before", opts.before), ("after", opts.after)):
            dirs[side].parent.mkdir(parents=True, exist_ok=True)
            _run(python, args, dirs[side])
        count, differing = compare_runs(dirs["before"], dirs["after"])
        failed |= bool(differing) or count == 0
        verdict = "identical" if not differing else f"{len(differing)} differ; first {differing[0]}"
        rows.append((method, dataset, str(count), verdict if count else "no files"))
        print(f"{method:<16} {dataset:<15} {count:>5}  {rows[-1][3]}", flush=True)
        for line in differing[1:]:
            print(f"{'':<38}{line}")
    print(f"\nrun dirs: {root}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
