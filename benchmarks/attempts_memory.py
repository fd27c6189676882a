"""pass@1 against pass@N, with and without memory between attempts (issue 24, ``--attempts``, ``--memory-arg``).

Offline (``--scripted``): BlocksWorld chains with the scripted model, whose pick depends on the prompt (so a
note changes the next attempt, and an attempt without notes repeats the first).  Real model (default): GSM8K
chains with Qwen2.5-Coder-0.5B-Instruct on llama-cpp-python's server on 127.0.0.1 (fetched once, then cached),
no response cache.  Prints one row per setting: solved at the first attempt, solved at any, attempts run, calls.

    python benchmarks/attempts_memory.py --scripted [--limit 10]
    python benchmarks/attempts_memory.py [--data ../shared/data/math] [--limit 5] [--attempts 3] [--out DIR]
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

SETTINGS = [
    ("1 attempt", ["--attempts", "1"]),
    ("{n} attempts", []),
    ("{n} attempts + reflection", ["--memory-arg", "augmentors=reflection"]),
    ("{n} attempts + fact, reflection", ["--memory-arg", "augmentors=fact,reflection"]),
]


@contextlib.contextmanager
def model(scripted: bool, out: Path) -> Iterator[list[str]]:
    if scripted:
        yield ["--model", "scripted"]
        return
    from lits.testing.instruct_model import instruct_model_path
    from lits.testing.llama_server import llama_server

    with llama_server(instruct_model_path(), log=out / "server.log") as url:
        yield ["--model", "qwen2.5-coder-0.5b-instruct", "--base-url", url, "--no-cache"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scripted", action="store_true", help="BlocksWorld with the scripted model, offline")
    parser.add_argument("--data", default="../shared/data/math", help="GSM8K's folder (real model)")
    parser.add_argument("--limit", type=int, default=None, help="cases (default: 10 scripted, 5 real)")
    parser.add_argument("--attempts", type=int, default=3)
    parser.add_argument("--settings", default="0,1,2,3", help="which rows to run (indices into SETTINGS)")
    parser.add_argument("--out", type=Path, default=None, help="keep the runs here (default: a temporary dir)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="lits-attempts-"))
    out.mkdir(parents=True, exist_ok=True)
    limit = args.limit or (10 if args.scripted else 5)
    data = (
        ["--dataset", "blocksworld"] if args.scripted else ["--dataset", "gsm8k", "--dataset-arg", f"path={args.data}"]
    )
    print("| setting | pass@1 | pass@N | attempts run | model calls (memory) | tokens in / out | wall s |")
    print("|---|---|---|---|---|---|---|")
    with model(args.scripted, out) as model_args:
        for index in (int(i) for i in args.settings.split(",")):
            name, extra = SETTINGS[index]
            name = name.format(n=args.attempts)
            run = out / f"setting-{index}"
            started = time.time()
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "lits",
                    "chain",
                    *data,
                    "--limit",
                    str(limit),
                    *model_args,
                    "--attempts",
                    str(args.attempts),
                    *extra,
                    "--save-dir",
                    str(run),
                ],
                capture_output=True,
                text=True,
            )
            if done.returncode:
                raise SystemExit(done.stderr.strip()[-2000:])
            s = json.loads((run / "eval_results.json").read_text())
            tried = s.get("pass_at") or {
                "solved_at_1": s["solved"],
                "solved_at_n": s["solved"],
                "attempts_run": s["instances"],
            }
            inf, memory = s["inference"], s["inference_by_component"].get("memory", {}).get("calls", 0)
            print(
                f"| {name} | {tried['solved_at_1']}/{s['instances']} | {tried['solved_at_n']}/{s['instances']} | "
                f"{tried['attempts_run']} | {inf['calls']} ({memory}) | {inf['tokens_in']} / {inf['tokens_out']} | "
                f"{round(time.time() - started)} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
