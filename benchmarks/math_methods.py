"""CoT, ReST-MCTS*, ToT-BFS and RAP on MATH500 with one model: one comparable table.

Runs the real CLI for each method (same problems, same model, same budget
per tree search) and prints ``lits compare --markdown`` of the four runs.

    python benchmarks/math_methods.py --limit 10                         # embedded model
    python benchmarks/math_methods.py --model gemma --base-url http://127.0.0.1:8080/v1 --api completion
    python benchmarks/math_methods.py --dataset-arg path=../shared/data/math --limit 10
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def methods(iterations: int, actions: int, depth: int) -> dict[str, list[str]]:
    budget = ["--search-arg", f"n_actions={actions}", "--search-arg", f"max_depth={depth}"]
    return {
        "cot": ["chain", "--chain-arg", f"max_steps={depth}"],
        "rest": ["search", "--search-framework", "rest", "--search-arg", f"n_iterations={iterations}", *budget],
        "tot_bfs": ["search", "--search-framework", "tot_bfs", "--search-arg", f"beam_width={actions}", *budget],
        "rap": ["search", "--search-framework", "rap", "--search-arg", f"n_iterations={iterations}", *budget],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="math500")
    parser.add_argument("--dataset-arg", action="append", default=[])
    parser.add_argument("--limit", type=int, default=5)
    parser.add_argument("--model", default=None, help="default: the embedded model")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--api", default=None)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--actions", type=int, default=2)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--out", type=Path, default=None, help="keep the runs here (default: a temp dir)")
    args = parser.parse_args()

    common = ["--dataset", args.dataset, "--limit", str(args.limit), "--no-cache"]
    common += [x for pair in args.dataset_arg for x in ("--dataset-arg", pair)]
    for flag, value in (("--model", args.model), ("--base-url", args.base_url), ("--api", args.api)):
        if value:
            common += [flag, value]
    with tempfile.TemporaryDirectory() as tmp:
        root = args.out or Path(tmp)
        dirs = []
        for name, command in methods(args.iterations, args.actions, args.depth).items():
            save = root / name
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "lits", *command, *common, "--save-dir", str(save)],
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                raise SystemExit(f"{name} failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
            print(f"{name}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
            dirs.append(str(save))
        table = subprocess.run(
            [sys.executable, "-m", "lits", "compare", *dirs, "--markdown"], capture_output=True, text=True, check=True
        )
        print(table.stdout, end="")


if __name__ == "__main__":
    main()
