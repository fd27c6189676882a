"""Chain vs MCTS on the embedded model: BlocksWorld RAP cases with 2 and 4 steps.

Runs the real CLI (``lits chain`` / ``lits search``) on the local Gemma 3 270M
model and prints solve rate, seconds per case and model calls per method.

    python benchmarks/embedded_blocksworld.py --data ../shared/data/blocksworld --per-step 10
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def run(kind: list[str], data: Path, steps: int, limit: int, save: Path) -> dict:
    cmd = [sys.executable, "-m", "lits", *kind, "--dataset", "blocksworld", "--dataset-arg", f"path={data}",
           "--dataset-arg", f"steps={steps}", "--limit", str(limit), "--save-dir", str(save), "--no-cache"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.strip().splitlines()[-1]}")
    return json.loads((save / "eval_results.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/blocksworld")
    parser.add_argument("--per-step", type=int, default=10)
    parser.add_argument("--methods", default="chain,mcts,mcts-k4", help="comma-separated: chain, mcts, mcts-k4")
    args = parser.parse_args()
    methods = {
        "chain": ["chain"],
        "mcts": ["search", "--search", "mcts", "--search-arg", "n_iterations=10", "--search-arg", "n_actions=3",
                 "--search-arg", "max_depth=6"],
        "mcts-k4": ["search", "--search", "mcts", "--search-arg", "n_iterations=10", "--search-arg", "n_actions=3",
                    "--search-arg", "max_depth=6", "--search-arg", "parallel_iterations=4"],
    }
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, kind in methods.items():
            if name not in args.methods.split(","):
                continue
            solved = cases = calls = 0
            seconds = 0.0
            for steps in (2, 4):
                res = run(kind, args.data, steps, args.per_step, Path(tmp) / f"{name}-{steps}")
                solved += res["solved"]
                cases += res["instances"]
                calls += res["inference"]["calls"]
                seconds += res["seconds_per_instance"] * res["instances"]
                rows.append(f"| {name} | {steps} | {res['solved']}/{res['instances']} | "
                            f"{res['seconds_per_instance']:.1f} | {res['inference']['calls']} |")
            rows.append(f"| **{name}** | 2+4 | **{solved}/{cases} ({solved / cases:.0%})** | "
                        f"**{seconds / cases:.1f}** | {calls} |")
    print("| method | steps | solved | s / case | model calls |\n|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
