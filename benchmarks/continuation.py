"""Chain-in-Tree continuation: model calls and solved, with and without, on BlocksWorld and MATH500 (issue 24).

Runs the same cases once without continuation and once per BN method given,
with no response cache, and prints one markdown row per run: solved, model
calls (all of them, the BN evaluator's included), the BN model's own calls,
how many expansions continued and branched (and chains reopened), and wall
time.  ``--tier scripted`` uses the offline scripted model; ``--tier real``
starts llama.cpp's server with Qwen2.5-Coder-0.5B-Instruct (cached weights,
see docs/models.md).

    python benchmarks/continuation.py --tier scripted --dataset blocksworld --limit 10
    python benchmarks/continuation.py --tier real --dataset math500 --limit 3 --methods direct,sc_exact
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

#: Per dataset: the data flags and the search (small budgets: the real tier runs on a CPU).
SETUPS = {
    "blocksworld": (
        ["--dataset", "blocksworld", "--dataset-arg", "path={data}/blocksworld"],
        [
            "--search",
            "mcts",
            "--search-arg",
            "n_iterations={iterations}",
            "--search-arg",
            "max_depth=4",
            "--search-arg",
            "n_actions=3",
        ],
    ),
    "math500": (
        ["--dataset", "math500", "--dataset-arg", "path={data}/math"],
        [
            "--search-framework",
            "tot_bfs",
            "--search-arg",
            "n_actions=3",
            "--search-arg",
            "beam_width=2",
            "--search-arg",
            "max_depth=3",
        ],
    ),
}


@contextlib.contextmanager
def model_flags(tier: str, out: Path) -> Iterator[list[str]]:
    if tier == "scripted":
        yield ["--model", "scripted"]
        return
    from lits.testing.instruct_model import instruct_model_path
    from lits.testing.llama_server import llama_server

    with llama_server(instruct_model_path(), log=out / "server.log") as url:
        # A shared 2-core machine answers slowly: wait for replies rather than count them as faults.
        yield [
            "--model",
            "qwen2.5-coder-0.5b-instruct",
            "--base-url",
            url,
            "--read-timeout",
            "240",
            "--call-budget",
            "600",
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=["scripted", "real"], default="scripted")
    parser.add_argument("--dataset", choices=sorted(SETUPS), default="blocksworld")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--iterations", type=int, default=10, help="MCTS rollouts (BlocksWorld)")
    parser.add_argument("--dataset-arg", action="append", default=[], help="more dataset flags, e.g. steps=2")
    parser.add_argument("--search-arg", action="append", default=[], help="more search flags, e.g. beam_width=1")
    parser.add_argument(
        "--model-flag",
        action="append",
        default=[],
        help="more model flags (real tier), e.g. --model-flag=--policy-model-arg --model-flag=max_tokens=64",
    )
    parser.add_argument(
        "--methods", default="direct,sc_exact,sc,entropy,confidence", help="BN methods to run, comma-separated"
    )
    parser.add_argument("--skip-without", action="store_true", help="only the runs with continuation")
    parser.add_argument("--out", type=Path, default=None, help="keep the runs here (default: a temporary dir)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="lits-continuation-"))
    out.mkdir(parents=True, exist_ok=True)
    data, search = SETUPS[args.dataset]
    fill = {"data": args.data, "iterations": args.iterations}
    base = [a.format(**fill) for a in data + search]
    base += [f for pair in args.dataset_arg for f in ("--dataset-arg", pair)]
    base += [f for pair in args.search_arg for f in ("--search-arg", pair)]
    runs: list[tuple[str, list[str]]] = [] if args.skip_without else [("without", [])]
    runs += [
        (m, ["--search-arg", "add_continuation=true", "--search-arg", f"bn_method={m}"])
        for m in args.methods.split(",")
        if m
    ]
    print("| setting | solved | model calls | BN model calls | continued / branched / reopened | wall s |")
    print("|---|---|---|---|---|---|")
    with model_flags(args.tier, out) as model:
        for name, extra in runs:
            run = out / f"{args.dataset}-{name}"
            started = time.time()
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "lits",
                    "search",
                    *base,
                    "--offset",
                    str(args.offset),
                    "--limit",
                    str(args.limit),
                    *model,
                    *args.model_flag,
                    "--no-cache",
                    "--save-dir",
                    str(run),
                    *extra,
                ],
                capture_output=True,
                text=True,
            )
            if done.returncode:
                raise SystemExit(done.stderr.strip()[-2000:])
            summary = json.loads((run / "eval_results.json").read_text())
            stats = [json.loads(p.read_text()).get("search_stats") or {} for p in sorted((run / "results").iterdir())]
            total = {
                k: sum(int(s.get(k, 0)) for s in stats)
                for k in ("bn_calls", "bn_continued", "bn_branched", "bn_reopened")
            }
            bn = f"{total['bn_continued']} / {total['bn_branched']} / {total['bn_reopened']}" if extra else "-"
            print(
                f"| {name} | {summary['solved']}/{summary['instances']} | {summary['inference']['calls']} | "
                f"{total['bn_calls'] if extra else '-'} | {bn} | {round(time.time() - started)} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
