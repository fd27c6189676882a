"""Chain vs MCTS on the embedded model: BlocksWorld RAP cases with 2 and 4 steps.

Runs the real CLI (``lits chain`` / ``lits search``) on the local Gemma 3 270M
model and prints solve rate, seconds per case and model calls per method, and
what the server read: requests, prompt tokens, those served from its prompt
cache, and evaluated prompt tokens per solved instance.

    python benchmarks/embedded_blocksworld.py --data ../shared/data/blocksworld --per-step 10

``--server`` serves the same GGUF over HTTP instead of in-process:
``llama-cpp-python`` (its ``llama_cpp.server``, one slot, reports no cached
tokens) or ``llama-server`` (upstream llama.cpp's C++ server, built once by
``python -m lits.testing.llama_cpp_build``; its prompt cache is on and it
reports ``timings.cache_n``).  The issue 42 run on upstream llama-server:

    python benchmarks/embedded_blocksworld.py --server llama-server --steps 2 --per-step 5 --methods mcts
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

SERVERS = ("none", "llama-cpp-python", "llama-server")


@contextlib.contextmanager
def serving(server: str, log: Path) -> Iterator[list[str]]:
    """The ``lits`` arguments that reach the embedded GGUF through ``server`` (none: in-process)."""
    if server == "none":
        yield []
        return
    from lits.lm.local import model_path
    from lits.testing.llama_cpp_build import server_binary
    from lits.testing.llama_server import llama_server

    binary = None
    if server == "llama-server":
        binary = server_binary()
        if binary is None:
            raise SystemExit("--server llama-server: not built yet; run `python -m lits.testing.llama_cpp_build`")
    gguf = model_path()
    with llama_server(gguf, binary=binary, log=log) as url:
        yield ["--base-url", url, "--model", gguf.stem]


def run(kind: list[str], data: Path, steps: int, limit: int, save: Path, via: list[str]) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "lits",
        *kind,
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        f"path={data}",
        "--dataset-arg",
        f"steps={steps}",
        "--limit",
        str(limit),
        "--save-dir",
        str(save),
        "--no-cache",
        *via,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.strip().splitlines()[-1]}")
    return json.loads((save / "eval_results.json").read_text())


def cost_cells(res: dict) -> str:
    """Requests, prompt tokens, those served from the server's cache, and evaluated prompt tokens per solved."""
    spend = res.get("spend") or {}
    cached = spend.get("cached_prompt_tokens")
    per = spend.get("evaluated_prompt_tokens_per_solved")
    return (
        f"{spend.get('requests', '-')} | {spend.get('prompt_tokens', '-')} | "
        f"{'-' if cached is None else cached} | {'-' if per is None else f'{per:,.0f}'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/blocksworld")
    parser.add_argument("--per-step", type=int, default=10)
    parser.add_argument("--steps", default="2,4", help="comma-separated plan lengths (default: 2,4)")
    parser.add_argument(
        "--methods",
        default="chain,mcts,mcts-k4",
        help="comma-separated: chain, mcts, mcts-k4, mcts-issue42 (mcts at its default depth)",
    )
    parser.add_argument(
        "--server",
        choices=SERVERS,
        default="none",
        help="serve the GGUF over HTTP: llama-cpp-python or upstream llama-server (default: in-process)",
    )
    parser.add_argument("--out", type=Path, default=None, help="keep the runs and the server log here")
    args = parser.parse_args()
    mcts = ["search", "--search", "mcts", "--search-arg", "n_iterations=10", "--search-arg", "n_actions=3"]
    methods = {
        "chain": ["chain"],
        "mcts": [*mcts, "--search-arg", "max_depth=6"],
        "mcts-k4": [*mcts, "--search-arg", "max_depth=6", "--search-arg", "parallel_iterations=4"],
        "mcts-issue42": mcts,
    }
    steps_list = [int(s) for s in args.steps.split(",") if s]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        with serving(args.server, out / "server.log") as via:
            for name, kind in methods.items():
                if name not in args.methods.split(","):
                    continue
                solved = cases = calls = 0
                seconds = 0.0
                for steps in steps_list:
                    res = run(kind, args.data, steps, args.per_step, out / f"{name}-{steps}", via)
                    solved += res["solved"]
                    cases += res["instances"]
                    calls += res["inference"]["calls"]
                    seconds += res["seconds_per_instance"] * res["instances"]
                    rows.append(
                        f"| {name} | {steps} | {res['solved']}/{res['instances']} | "
                        f"{res['seconds_per_instance']:.1f} | {res['inference']['calls']} | {cost_cells(res)} |"
                    )
                if len(steps_list) > 1:
                    rows.append(
                        f"| **{name}** | {args.steps} | **{solved}/{cases} ({solved / cases:.0%})** | "
                        f"**{seconds / cases:.1f}** | {calls} | | | | |"
                    )
    print(f"server: {args.server}")
    print(
        "| method | steps | solved | s / case | model calls | requests | prompt tokens | cached prompt tokens | "
        "evaluated / solved |\n|---|---|---|---|---|---|---|---|---|"
    )
    print("\n".join(rows))


if __name__ == "__main__":
    main()
