"""Training data and the verifier's report card from a real-model search (issue 45).

Runs GSM8K ToT-BFS with Qwen2.5-Coder-0.5B-Instruct Q4_K_M on llama-cpp-python's
server (started here on 127.0.0.1, as ``fidelity.py`` does), then ``lits export``
and ``lits eval --verifier`` on the run, and prints the rows exported per kind,
the process labels' balance and the reward model's AUROC by depth.

    python benchmarks/training_data.py [--data ../shared/data] [--limit 20] [--out DIR] [--base-url URL]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from fidelity import MODEL_NAME, model_server, run_method

#: Beam 2, 2 children, depth 3, steps capped at 96 tokens: 20 problems in about an hour on 2 CPU cores.
SEARCH = [
    "search",
    "--dataset",
    "gsm8k",
    "--search-framework",
    "tot_bfs",
    "--search-arg",
    "beam_width=2",
    "--search-arg",
    "n_actions=2",
    "--search-arg",
    "max_depth=3",
    "--policy-model-arg",
    "max_tokens=96",
]


def lits(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lits", *args], capture_output=True, text=True)


def rows_in(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def report(run: Path, export: Path) -> dict[str, Any]:
    """What the export wrote and what the verifier found, from their own files."""
    process = rows_in(export / "process.jsonl")
    labels = [label for row in process for label in row.get("labels", [])]
    verifier = json.loads((run / "eval_results.json").read_text()).get("verifier") or {}
    return {
        "sft": len(rows_in(export / "sft.jsonl")),
        "preference": len(rows_in(export / "preference.jsonl")),
        "process": len(process),
        "steps labelled": len(labels),
        "positive labels": sum(map(bool, labels)),
        "verifier": verifier,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible server (default: start llama.cpp)")
    parser.add_argument("--model", default=MODEL_NAME)
    parser.add_argument("--out", default=None, help="keep the run and the export here (default: a temp dir)")
    args = parser.parse_args()
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="lits-training-data-"))
    out.mkdir(parents=True, exist_ok=True)
    run, export = out / "gsm8k-tot_bfs", out / "export"
    command = [*SEARCH, "--dataset-arg", f"path={Path(args.data) / 'math'}"]
    with model_server(args.base_url, out / "server.log") as base_url:
        searched = run_method(command, base_url, args.model, run, args.limit)
    print(json.dumps(searched), file=sys.stderr, flush=True)
    for step in (["export", str(run), "--out", str(export)], ["eval", "--save-dir", str(run), "--verifier"]):
        done = lits(*step)
        if done.returncode:
            print(f"lits {step[0]} failed: {(done.stderr.strip().splitlines() or ['no output'])[-1]}", file=sys.stderr)
            return 1
    print(json.dumps({"search": searched, **report(run, export)}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
