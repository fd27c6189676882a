"""Self-consistency against chain-of-thought on GSM8K with the real small instruct model (issue 24).

Starts llama-cpp-python's server on 127.0.0.1 with Qwen2.5-Coder-0.5B-Instruct
(fetched and verified once, then cached; see docs/models.md) and runs, with no
response cache, ``lits chain`` greedy CoT and ``--chain sc`` with ``k``
chains on the same GSM8K cases.  Prints solved, model calls, tokens and wall
time per method; per-instance votes are in each run's ``results/``.

With ``--budget-k K`` it compares, at the same total tokens, ``--chain sc`` with a
fixed ``k`` against ``--chain sc`` with up to ``K`` chains under ``--budget
tokens=T`` (T: what the fixed run spent), and prints ``lits compare``'s paired
difference and McNemar p-value.

    python benchmarks/self_consistency.py [--data ../shared/data/math] [--limit 10] [--k 5] [--out DIR]
    python benchmarks/self_consistency.py --limit 20 --k 4 --budget-k 16
    python benchmarks/self_consistency.py --limit 20 --k 4 --budget-k 16 --simulated   # offline, seconds

``--simulated`` runs the same comparison without a server, in process: a stand-in sampler that answers
each question right with a chance of its own (0.85, 0.5 or 0.25, fixed per question) and otherwise one of
two wrong answers; its replies cost the prompt's words and 30-60 tokens.

With the real model each reply (one step of a chain, at most 10 steps) is capped at ``--max-tokens`` (default
96; 0: the policy's own 200): on a loaded machine an uncapped chain took 524 model seconds, so a run of 20
problems did not finish.  The cap is the same for every run compared, so the comparison stays at equal
settings; a step cut by it goes on in the next step, and a chain that runs out of steps does not vote.

It reports as it goes: each run's per-instance progress lines, each method's row as soon as its run
finishes, and with ``--report FILE`` the rows so far as JSON after each run.  A run that was stopped goes on
with the same command and ``--out DIR`` (a finished run is read back, one cut short is resumed).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

from lits.testing.instruct_model import instruct_model_path
from lits.testing.llama_server import llama_server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/math")
    parser.add_argument("--limit", type=int, default=10)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="keep the runs here; again with the same DIR goes on (default: a temp dir)",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=96,
        help="cap each reply (a step) of the real model, every run alike (default 96; 0: no cap of ours)",
    )
    parser.add_argument("--report", type=Path, default=None, help="after each run, the rows so far as JSON")
    parser.add_argument(
        "--budget-k",
        type=int,
        default=None,
        metavar="K",
        help="compare sc k=--k against sc with up to K chains at the same total tokens (--budget)",
    )
    parser.add_argument("--simulated", action="store_true", help="a stand-in sampler in process (no server)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="lits-sc-"))
    out.mkdir(parents=True, exist_ok=True)
    REPORT["path"] = args.report
    if args.simulated:
        _simulated(args, out)
        return
    cap = f"replies capped at {args.max_tokens} tokens" if args.max_tokens else "replies uncapped"
    print(f"runs in {out}; {args.limit} problems, {cap}", flush=True)
    print("| method | solved | model calls | tokens in / out | wall s |")
    print("|---|---|---|---|---|")
    # a loaded machine loads the model slowly: the default 120 s wait for the server gave up before it served
    with llama_server(instruct_model_path(), log=out / "server.log", ready_within=1800) as url:
        fixed = ("sc k=" + str(args.k), ["--chain", "sc", "--chain-arg", f"k={args.k}"])
        if args.budget_k is None:
            for name, extra in [("cot", ["--chain", "cot"]), fixed]:
                _row(name, _run(out / _folder(name), url, args, extra))
            return
        spent = _row(fixed[0], _run(out / _folder(fixed[0]), url, args, fixed[1]))
        name = f"sc k<={args.budget_k} budget tokens={spent}"
        _row(
            name,
            _run(
                out / _folder(name),
                url,
                args,
                ["--chain", "sc", "--chain-arg", f"k={args.budget_k}", "--budget", f"tokens={spent}"],
            ),
        )
    compared = subprocess.run(
        [sys.executable, "-m", "lits", "compare", str(out / _folder(fixed[0])), str(out / _folder(name))],
        capture_output=True,
        text=True,
    )
    print(compared.stdout + compared.stderr)


def _simulated(args: argparse.Namespace, out: Path) -> None:
    """Fixed ``k`` against ``--budget`` at the same tokens, with the stand-in sampler (see the module's doc)."""
    import random

    import lits
    from lits.lm.base import Completion, GenerationParams, LanguageModel, Prompt
    from lits.registry import register_model
    from lits_math.data import load_gsm8k

    gold = {str(e["query"]): str(e["answer"]) for e in load_gsm8k(path=args.data, limit=args.limit)}

    class Sampler(LanguageModel):
        name = "stand-in-sampler"

        def _generate(self, prompt: Prompt, params: GenerationParams) -> list[Completion]:
            text = prompt if isinstance(prompt, str) else "\n".join(str(m["content"]) for m in prompt)
            query = next((q for q in gold if q in text), "")
            chance = random.Random(query).choice([0.85, 0.85, 0.5, 0.25])
            rng = random.Random(f"{query}:{params.seed}")
            right = gold.get(query, "0")
            answer = right if rng.random() < chance else rng.choice([f"{right}1", f"{right}0"])
            return [
                Completion(f"The answer is {answer}.", tokens_in=len(text.split()), tokens_out=rng.randint(30, 60))
                for _ in range(params.n)
            ]

    register_model("stand-in-sampler")(lambda spec, **options: Sampler())

    def run(name: str, **fields: object) -> tuple[Path, int]:
        started = time.time()
        lits.chain(
            "gsm8k",
            chain="sc",
            model="stand-in-sampler",
            limit=args.limit,
            no_cache=True,
            dataset_args={"path": args.data},
            save_dir=out / _folder(name),
            **fields,
        )
        return out / _folder(name), _row(name, (out / _folder(name), time.time() - started))

    fixed, spent = run(f"sc k={args.k}", chain_args={"k": args.k})
    k = args.budget_k or 16
    budgeted, _ = run(f"sc k<={k} budget tokens={spent}", chain_args={"k": k}, budget=f"tokens={spent}")
    compared = subprocess.run(
        [sys.executable, "-m", "lits", "compare", str(fixed), str(budgeted)], capture_output=True, text=True
    )
    print(compared.stdout + compared.stderr)


def _folder(name: str) -> str:
    return name.replace(" ", "-").replace("=", "").replace("<", "")


def _run(run: Path, url: str, args: argparse.Namespace, extra: list[str]) -> tuple[Path, float]:
    """One ``lits chain`` run, its progress lines passed on as they come; a finished run is read back."""
    started = time.time()
    if (run / "eval_results.json").exists():
        return run, 0.0
    again = ["--resume"] if (run / "config.json").exists() else []
    command = [
        sys.executable,
        "-m",
        "lits",
        "chain",
        *again,
        "--dataset",
        "gsm8k",
        "--dataset-arg",
        f"path={args.data}",
        "--limit",
        str(args.limit),
        "--model",
        "qwen2.5-coder-0.5b-instruct",
        "--base-url",
        url,
        "--no-cache",
        # one slot: one call at a time, and patience on a loaded machine (no retried replies)
        "--concurrency",
        "1",
        "--read-timeout",
        "3000",
        "--call-budget",
        "6000",
        "--save-dir",
        str(run),
        *extra,
        *(["--policy-model-arg", f"max_tokens={args.max_tokens}"] if args.max_tokens else []),
    ]
    tail: deque[str] = deque(maxlen=40)
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as child:
        assert child.stderr is not None
        for line in child.stderr:  # the run's progress ([3/20] solved 1 | calls ...), as it goes
            tail.append(line)
            print(f"  {run.name}: {line.rstrip()}", file=sys.stderr, flush=True)
    if child.returncode:
        raise SystemExit("".join(tail).strip()[-2000:])
    return run, time.time() - started


#: The rows printed so far, and where ``--report`` writes them (None: nowhere).
REPORT: dict[str, object] = {"path": None, "rows": []}


def _row(name: str, done: tuple[Path, float]) -> int:
    """Prints the method's row (and with ``--report`` writes the rows so far); returns the tokens it spent."""
    run, seconds = done
    s = json.loads((run / "eval_results.json").read_text())
    inf = s["inference"]
    budget = s.get("budget")
    spread = f" (chains: {budget['chains_per_instance']})" if budget else ""
    print(
        f"| {name}{spread} | {s['solved']}/{s['instances']} | {inf['calls']} | {inf.get('tokens_in')} / "
        f"{inf.get('tokens_out')} | {round(seconds)} |",
        flush=True,
    )
    tokens = int(inf.get("tokens_in") or 0) + int(inf.get("tokens_out") or 0)
    rows = REPORT["rows"]
    assert isinstance(rows, list)
    rows.append(
        {
            "method": name,
            "run": str(run),
            "solved": s["solved"],
            "instances": s["instances"],
            "calls": inf["calls"],
            "tokens": tokens,
            "seconds": round(seconds),
            "budget": budget,
        }
    )
    if isinstance(REPORT["path"], Path):
        REPORT["path"].write_text(json.dumps(rows, indent=1))
    return tokens


if __name__ == "__main__":
    main()
