"""Peak memory of journal compaction and replay (resume) against the search that wrote the journal.

A real `lits search` (BlocksWorld, MCTS, the zero-latency scripted model, one 12-step case, a wide and deep
tree so it keeps growing) runs in a child process with its end-of-instance compaction switched off, so its
journal keeps one line per checkpoint; its peak RSS is the search's own.  Then, each in a fresh child process
on a copy of that journal: the streamed compaction (``TreeJournal.compact``), the previous whole-file
compaction (every line json-loaded, kept here as the reference) and a replay (what ``--resume`` does).
Peak RSS is each child's own high-water mark (VmHWM); "baseline" is a child that only imports lits.

    python benchmarks/journal_memory.py --data ../shared/data/blocksworld [--iterations 15000] [--markdown]
"""

from __future__ import annotations

import argparse
import io
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any


def _peak_mb() -> float:
    """This process's peak RSS: VmHWM (``ru_maxrss`` would include the parent's peak, kept across exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def search(data: str, iterations: int, run: Path) -> dict[str, Any]:
    """Run the search, keeping its journal uncompacted."""
    from lits.agents.tree.journal import TreeJournal
    from lits.cli.main import main

    TreeJournal.compact = TreeJournal.close  # type: ignore[method-assign]
    args = [
        "search",
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        f"path={data}",
        "--dataset-arg",
        "steps=12",
        "--limit",
        "1",
        "--model",
        "scripted",
        "--search",
        "mcts",
        "--search-arg",
        f"n_iterations={iterations}",
        "--search-arg",
        "n_actions=6",
        "--search-arg",
        "max_depth=14",
        "--search-arg",
        "early_stop=false",
        "--save-dir",
        str(run),
    ]
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        code = main(args)
    if code != 0:
        raise SystemExit(f"lits search exited {code}")
    result = json.loads(next((run / "results").iterdir()).read_text())
    return {"nodes": result["search_stats"]["nodes"], "peak_rss_mb": _peak_mb()}


def whole_file_compaction(path: Path) -> None:
    """The previous compaction: every line parsed and kept, then merged and dumped as one string."""
    records = [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]
    nodes: dict[int, dict[str, Any]] = {}
    merged: dict[str, Any] = {"compact": True, "nodes": [], "paths": [], "proposals": []}
    for record in records:
        for flat in record["nodes"]:
            nodes[int(flat["id"])] = flat
        merged["paths"].extend(record.get("paths") or [])
        merged["proposals"].extend(record.get("proposals") or [])
    merged.update({k: records[-1][k] for k in ("iteration", "next_id", "stats")})
    merged["nodes"] = [nodes[i] for i in sorted(nodes)]
    path.write_text(json.dumps(merged, separators=(",", ":")) + "\n")


def step(kind: str, path: Path) -> dict[str, Any]:
    """One measured step in this (fresh) process."""
    import lits.agents  # noqa: F401  (the baseline: what every step imports)
    from lits.agents.tree.journal import TreeJournal

    started = time.perf_counter()
    if kind == "compact":
        TreeJournal(path).compact()
    elif kind == "whole-file":
        whole_file_compaction(path)
    elif kind == "replay":
        from lits.agents import MCTS, MCTSConfig

        TreeJournal(path).replay(MCTS(MCTSConfig(), None, None, None).backup_values)
    return {"seconds": round(time.perf_counter() - started, 2), "peak_rss_mb": _peak_mb()}


def _child(*args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/blocksworld")
    parser.add_argument("--iterations", type=int, default=15000)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--search-into", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--step", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.search_into is not None:
        print(json.dumps(search(args.data, args.iterations, Path(args.search_into))))
        return
    if args.step is not None:
        print(json.dumps(step(args.step[0], Path(args.step[1]))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        row: dict[str, Any] = {
            "iterations": args.iterations,
            "search": _child("--data", args.data, "--iterations", str(args.iterations), "--search-into", str(run)),
        }
        journal = next((run / "checkpoints").glob("*.journal.jsonl"))
        row["journal_bytes"] = journal.stat().st_size
        with journal.open("rb") as fh:
            row["journal_lines"] = sum(1 for _ in fh)
        for kind in ("baseline", "compact", "whole-file", "replay"):
            copy = Path(tmp) / f"{kind}.journal.jsonl"
            shutil.copyfile(journal, copy)
            row[kind] = _child("--step", kind, str(copy))
            if kind == "compact":
                row["compact_bytes"] = copy.stat().st_size
    if not args.markdown:
        print(json.dumps(row, indent=1))
        return
    print(
        "| nodes | journal | search peak RSS | compaction (streamed) | compaction (whole file, before) "
        "| replay (resume) | baseline (imports) |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {row['search']['nodes']:,} | {row['journal_bytes'] / 1e6:.1f} MB, {row['journal_lines']:,} lines "
        f"| {row['search']['peak_rss_mb']} MB | {row['compact']['peak_rss_mb']} MB ({row['compact']['seconds']} s) "
        f"| {row['whole-file']['peak_rss_mb']} MB ({row['whole-file']['seconds']} s) "
        f"| {row['replay']['peak_rss_mb']} MB ({row['replay']['seconds']} s) | {row['baseline']['peak_rss_mb']} MB |"
    )


if __name__ == "__main__":
    main()
