"""Self-consistency against chain-of-thought on GSM8K with the real small instruct model (issue 24).

Starts llama-cpp-python's server on 127.0.0.1 with Qwen2.5-Coder-0.5B-Instruct
(fetched and verified once, then cached; see docs/models.md) and runs, with no
response cache, ``lits chain`` greedy CoT and ``--chain sc`` with ``k``
chains on the same GSM8K cases.  Prints solved, model calls, tokens and wall
time per method; per-instance votes are in each run's ``results/``.

    python benchmarks/self_consistency.py [--data ../shared/data/math] [--limit 10] [--k 5] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from lits.testing.instruct_model import instruct_model_path
from lits.testing.llama_server import llama_server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/math")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None, help="keep the runs here (default: a temporary dir)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="lits-sc-"))
    out.mkdir(parents=True, exist_ok=True)
    print("| method | solved | model calls | tokens in / out | wall s |")
    print("|---|---|---|---|---|")
    with llama_server(instruct_model_path(), log=out / "server.log") as url:
        methods = [("cot", ["--chain", "cot"]), (f"sc k={args.k}", ["--chain", "sc", "--chain-arg", f"k={args.k}"])]
        for name, extra in methods:
            run = out / name.replace(" ", "-").replace("=", "")
            started = time.time()
            done = subprocess.run([sys.executable, "-m", "lits", "chain", "--dataset", "gsm8k", "--dataset-arg",
                                   f"path={args.data}", "--limit", str(args.limit), "--model",
                                   "qwen2.5-coder-0.5b-instruct", "--base-url", url, "--no-cache",
                                   "--save-dir", str(run), *extra], capture_output=True, text=True)
            if done.returncode:
                raise SystemExit(done.stderr.strip()[-2000:])
            s = json.loads((run / "eval_results.json").read_text())
            inf = s["inference"]
            print(f"| {name} | {s['solved']}/{s['instances']} | {inf['calls']} | {inf.get('tokens_in')} / "
                  f"{inf.get('tokens_out')} | {round(time.time() - started)} |", flush=True)


if __name__ == "__main__":
    main()
