"""Fault tolerance: BlocksWorld MCTS over 10 instances through a chaos proxy at 0 %, 5 % and 20 % faults.

The model server is the loopback fake in its own process (deterministic
obedient answers after a fixed latency); between it and ``lits search`` sits
:class:`lits.testing.ChaosProxy`, turning the given share of completion
requests into an even mix of every fault kind (429 with Retry-After, 500,
503, a hang, a dropped connection, a malformed, choice-less, empty or
truncated body).  Each rate is a real ``lits search`` process at the same
concurrency.  Printed per rate: wall time, slowdown against 0 %, instances
lost (not finished), retries and seconds lost to faults, and whether
results/, paths/ and terminal_nodes/ are byte-identical to the fault-free run.

    python benchmarks/faults.py [--rates 0,0.05,0.2] [--instances 10] [--latency 0.1]
        [--concurrency 16] [--read-timeout 1] [--hedge-share 0.1] [--repeats 1] [--out FILE]

With ``--repeats N`` the rates run N times in turn (0 %, 20 %, 0 %, 20 % ...),
each slowdown is taken against the fault-free run of the same round, and the
table gives each rate's median wall time and slowdown with their ranges.

The read timeout is what a hang costs; 1 s is ten replies of this server (the
default, 60 s with a learned patience of at least 10 s, suits slow generations).
"""

from __future__ import annotations

import argparse
import json
import statistics
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lits.testing import FAULT_KINDS, ChaosProxy, evenly
from lits.testing.servers.openai_compat import obedient_server_process as loopback_server

OUTPUTS = ("results", "paths", "terminal_nodes")


def outputs(run: Path) -> dict[str, bytes]:
    return {
        f"{sub}/{p.name}": p.read_bytes()
        for sub in OUTPUTS
        if (run / sub).is_dir()
        for p in sorted((run / sub).iterdir())
    }


def one_rate(upstream: str, rate: float, args: argparse.Namespace, run: Path) -> dict[str, Any]:
    kinds = args.kinds.split(",") if args.kinds else FAULT_KINDS
    with ChaosProxy(upstream, evenly(kinds, rate), seed=args.seed, hang_seconds=args.hang) as proxy:
        command = [
            sys.executable,
            "-m",
            "lits",
            "search",
            "--dataset",
            "blocksworld",
            "--dataset-arg",
            "steps=2,4,6",
            "--limit",
            str(args.instances),
            "--search-arg",
            "n_iterations=10",
            "--search-arg",
            "early_stop=false",
            "--model",
            "bench",
            "--base-url",
            proxy.base_url,
            "--concurrency",
            str(args.concurrency),
            "--save-dir",
            str(run),
        ]
        if args.read_timeout > 0:
            command += ["--read-timeout", str(args.read_timeout)]
        env = {**os.environ, "LITS_HEDGE_SHARE": str(args.hedge_share)}
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - started
        requests, faults = proxy.requests, sum(proxy.faults.values())
    summary = json.loads((run / "eval_results.json").read_text())
    return {
        "rate": rate,
        "exit": done.returncode,
        "wall_s": round(wall, 1),
        "requests": requests,
        "faults_injected": faults,
        "finished": summary["instances"],
        "lost": summary["total"] - summary["instances"],
        "retries": summary["faults"]["retries"],
        "seconds_lost": summary["faults"]["seconds_lost"],
        "retried_instances": summary["retried_instances"],
        "hedged": summary["faults"].get("hedged_calls", 0),
        "hedges_won": summary["faults"].get("hedges_won", 0),
    }


def spread(values: list[float], unit: str = "") -> str:
    """One value as it is, several as their median with the range."""
    if len(values) == 1:
        return f"{values[0]:g}{unit}"
    return f"{statistics.median(values):.2f}{unit} ({min(values):g}–{max(values):g})"


def table_row(runs: list[dict[str, Any]], instances: int) -> str:
    """One rate's runs: medians and ranges where it ran more than once."""

    def span(key: str) -> str:
        low, high = min(r[key] for r in runs), max(r[key] for r in runs)
        return f"{low:g}" if low == high else f"{low:g}–{high:g}"

    same = all(r["same_results_as_first"] for r in runs)
    return (
        f"| {runs[0]['rate']:.0%} | {spread([r['wall_s'] for r in runs], ' s')} | "
        f"{spread([r['slowdown'] for r in runs], 'x')} | {max(r['lost'] for r in runs)} of {instances} | "
        f"{span('faults_injected')} of {span('requests')} requests | {span('retries')} | {span('seconds_lost')} | "
        f"{span('hedged')} ({span('hedges_won')}) | {'yes' if same else 'NO'} ({len(runs)} runs) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="0,0.05,0.2", help="fault rates to run, comma-separated")
    parser.add_argument("--instances", type=int, default=10)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per server reply")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument(
        "--read-timeout",
        type=float,
        default=1.0,
        help="what a hang costs (lits --read-timeout; 0: lits's default, the learned patience)",
    )
    parser.add_argument("--hang", type=float, default=5.0, help="how long the proxy holds a hung request")
    parser.add_argument(
        "--hedge-share",
        type=float,
        default=0.1,
        help="share of calls that may get a hedged second copy ($LITS_HEDGE_SHARE; 0: none)",
    )
    parser.add_argument(
        "--kinds", default="", help=f"fault kinds to mix, comma-separated (default: all of {','.join(FAULT_KINDS)})"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1, help="rounds over the rates (medians and ranges)")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    work = Path(tempfile.mkdtemp(prefix="lits-faults-"))
    rows: list[dict[str, Any]] = []
    try:
        with loopback_server(args.latency) as upstream:
            for repeat in range(args.repeats):
                first: dict[str, Any] = {}
                for rate in rates:
                    run = work / f"rate-{rate}-{repeat}"
                    row = one_rate(upstream, rate, args, run)
                    row["repeat"] = repeat
                    # every run against the very first (fault-free) one: results never depend on faults
                    row["same_results_as_first"] = outputs(run) == outputs(work / f"rate-{rates[0]}-0")
                    row["slowdown"] = round(row["wall_s"] / first["wall_s"], 2) if first else 1.0
                    first = first or row
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                for rate in rates:
                    if repeat:
                        shutil.rmtree(work / f"rate-{rate}-{repeat}", ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        "\n| fault rate | wall time | slowdown | lost instances | faults injected | retries | "
        "seconds lost | hedged (won) | same results |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for rate in rates:
        print(table_row([r for r in rows if r["rate"] == rate], args.instances))
    if args.out:
        args.out.write_text(json.dumps({"args": vars(args) | {"out": str(args.out)}, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
