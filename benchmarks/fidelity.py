"""Fidelity with a real instruct model: chain vs search on every shipped task, as a researcher would run them.

Each method is a real ``lits chain`` / ``lits search`` process against an
OpenAI-compatible server: by default a llama.cpp server this script starts on
127.0.0.1 for Qwen2.5-Coder-0.5B-Instruct Q4_K_M (fetched and checked by
:mod:`lits.testing.instruct_model`), or any server given with ``--base-url``
(a GPU vLLM, say).  Printed per method, as a Markdown table: accuracy,
invalid replies (unparseable model output, where the components count it),
fallbacks, model calls, tokens, server-fault retries and wall time.

    python benchmarks/fidelity.py [--data ../shared/data] [--limit 10] [--datasets blocksworld,gsm8k,...]
        [--methods env_chain,cot] [--base-url URL --model NAME] [--out DIR] [--markdown FILE]

Search sizes are small so that the default set fits in about 30 minutes on
2 CPU cores; they are printed with the table.
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
from typing import Any, Iterator

MODEL_NAME = "qwen2.5-coder-0.5b-instruct"


def methods(data: Path) -> dict[str, list[tuple[str, list[str]]]]:
    """dataset -> [(method label, lits arguments)], data from ``data`` (../shared/data)."""
    bw = ["--dataset", "blocksworld", "--dataset-arg", f"path={data / 'blocksworld'}", "--dataset-arg", "steps=2"]
    gsm = ["--dataset", "gsm8k", "--dataset-arg", f"path={data / 'math'}"]
    math = ["--dataset", "math500", "--dataset-arg", f"path={data / 'math'}"]
    cw = [
        "--dataset",
        "crosswords",
        "--dataset-arg",
        f"path={data / 'crosswords' / 'mini0505.json'}",
        "--dataset-arg",
        "every=5",
    ]
    mapeval = ["--dataset", "mapeval-sql"]
    small_mcts = ["--search-arg", "n_iterations=4", "--search-arg", "n_actions=2"]
    return {
        "blocksworld": [("env_chain", ["chain", *bw]), ("mcts", ["search", *bw, *small_mcts])],
        "gsm8k": [
            ("cot", ["chain", *gsm]),
            ("cot_whole", ["chain", *gsm, "--chain-arg", "whole_solution=true"]),
            (
                "tot_bfs",
                [
                    "search",
                    *gsm,
                    "--search-framework",
                    "tot_bfs",
                    "--search-arg",
                    "beam_width=2",
                    "--search-arg",
                    "n_actions=2",
                    "--search-arg",
                    "max_depth=5",
                ],
            ),
            ("rest", ["search", *gsm, "--search-framework", "rest", *small_mcts, "--search-arg", "max_depth=5"]),
        ],
        "math500": [
            ("cot", ["chain", *math]),
            ("cot_whole", ["chain", *math, "--chain-arg", "whole_solution=true"]),
            (
                "tot_bfs",
                [
                    "search",
                    *math,
                    "--search-framework",
                    "tot_bfs",
                    "--search-arg",
                    "beam_width=2",
                    "--search-arg",
                    "n_actions=2",
                    "--search-arg",
                    "max_depth=5",
                ],
            ),
        ],
        "crosswords": [("env_chain", ["chain", *cw]), ("mcts", ["search", *cw, *small_mcts])],
        "mapeval-sql": [("react", ["chain", *mapeval]), ("mcts", ["search", *mapeval, *small_mcts])],
    }


@contextlib.contextmanager
def model_server(base_url: str | None, log: Path) -> Iterator[str]:
    if base_url:
        yield base_url
        return
    from lits.testing.instruct_model import instruct_model_path
    from lits.testing.llama_server import llama_server

    with llama_server(instruct_model_path(), log=log) as url:
        yield url


def _number(found: Any) -> float:
    return float(found) if isinstance(found, (int, float)) else 0.0


def parse_counts(summary: dict[str, Any]) -> tuple[float | None, int]:
    """(invalid-reply rate, fallbacks) from whatever parse accounting the run recorded."""
    parse = summary.get("parse") or {}
    if parse.get("replies"):
        return _number(parse.get("unparseable")) / _number(parse["replies"]), int(_number(parse.get("fallbacks")))
    stats = summary.get("policy_stats") or {}
    outputs = _number(stats.get("outputs"))
    if outputs:
        return _number(stats.get("invalid")) / outputs, int(_number(stats.get("fallbacks")))
    return None, 0


def run_method(command: list[str], base_url: str, model: str, run: Path, limit: int) -> dict[str, Any]:
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lits",
            *command,
            "--limit",
            str(limit),
            "--model",
            model,
            "--base-url",
            base_url,
            "--save-dir",
            str(run),
        ],
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    path = run / "eval_results.json"
    if not path.exists():
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1], "seconds": seconds}
    summary = json.loads(path.read_text())
    invalid, fallbacks = parse_counts(summary)
    inference = summary.get("inference") or {}
    return {
        "solved": summary.get("solved", 0),
        "instances": summary.get("instances", 0),
        "accuracy": summary.get("accuracy", 0.0),
        "invalid": invalid,
        "fallbacks": fallbacks,
        "calls": inference.get("calls", 0),
        "tokens": inference.get("tokens_in", 0) + inference.get("tokens_out", 0),
        "retries": (summary.get("faults") or {}).get("retries", 0),
        "seconds": seconds,
        "exit": done.returncode,
    }


def table(rows: list[tuple[str, str, dict[str, Any]]]) -> str:
    lines = [
        "| dataset | method | solved | invalid replies | fallbacks | calls | tokens | fault retries | wall s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for dataset, method, r in rows:
        if "error" in r:
            lines.append(f"| {dataset} | {method} | error: {r['error']} | | | | | | {r['seconds']:.0f} |")
            continue
        invalid = "n/a" if r["invalid"] is None else f"{r['invalid']:.0%}"
        lines.append(
            f"| {dataset} | {method} | {r['solved']}/{r['instances']} | {invalid} | {r['fallbacks']} | "
            f"{r['calls']} | {r['tokens']} | {r['retries']} | {r['seconds']:.0f} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--datasets", default="blocksworld,gsm8k,math500,crosswords,mapeval-sql")
    parser.add_argument("--methods", default=None, help="only these methods, e.g. env_chain,cot (default: all)")
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible server (default: start llama.cpp)")
    parser.add_argument("--model", default=MODEL_NAME)
    parser.add_argument("--out", default=None, help="keep the run dirs here (default: a temp dir)")
    parser.add_argument("--markdown", default=None, help="also write the table to this file")
    args = parser.parse_args()
    plan = methods(Path(args.data))
    wanted = [d.strip() for d in args.datasets.split(",") if d.strip()]
    unknown = [d for d in wanted if d not in plan]
    if unknown:
        parser.error(f"unknown dataset {unknown[0]!r}; known: {', '.join(plan)}")
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="lits-fidelity-"))
    out.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, str, dict[str, Any]]] = []
    with model_server(args.base_url, out / "server.log") as base_url:
        for dataset in wanted:
            for label, command in plan[dataset]:
                if args.methods and label not in args.methods.split(","):
                    continue
                result = run_method(command, base_url, args.model, out / f"{dataset}-{label}", args.limit)
                rows.append((dataset, label, result))
                print(f"{dataset:12} {label:10} {json.dumps(result)}", file=sys.stderr, flush=True)
    text = table(rows)
    print(text)
    print(
        "\nsearch sizes: MCTS n_iterations=4 n_actions=2; BFS beam_width=2 n_actions=2 max_depth=5; "
        f"--limit {args.limit}; run dirs in {out}"
    )
    if args.markdown:
        Path(args.markdown).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
