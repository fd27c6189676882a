"""A 4-setting ToT-BFS sweep on GSM8K by replay against the same sweep run fresh, with the real embedded model.

One recorded run (``n_actions`` 4, beam 3; made alongside the fresh runs) is replayed (``--replay-from``) under four other settings of
samples per node and beam width; the same four settings are also run fresh.  Counts model calls (what a
replay pays against what the fresh runs pay) and checks each replay's answers against its fresh run's: the
embedded model seeds sample i of a request with seed + i, so a replay must be the fresh run, byte for byte.

    python benchmarks/replay_sweep.py [--data ../shared/data/math] [--limit 2] [--depth 2] [--model local] [--out DIR]

At depth 2 every setting of the sweep keeps a beam the recorded run expanded too, so a replay pays for nothing;
deeper, a narrower beam can keep a node the recorded run dropped, and its requests are paid.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
import zlib

RECORDED = (4, 3)
#: (samples per node, beam width) of the sweep.
SETTINGS = ((2, 1), (3, 1), (3, 2), (4, 2))


def run(out: Path, name: str, args: argparse.Namespace, n_actions: int, beam: int, *extra: str) -> dict:
    """One ``lits search`` run's summary (its answers under ``answers``)."""
    save = out / name
    started = time.time()
    again = ["--resume"] if (save / "config.json").exists() else []  # a benchmark stopped half-way goes on
    model = ["--model", "m", "--base-url", args.fake] if args.fake else ["--model", args.model]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "lits",
            "search",
            *again,
            "--search-framework",
            "tot_bfs",
            "--dataset",
            "gsm8k",
            "--dataset-arg",
            f"path={args.data}",
            "--limit",
            str(args.limit),
            *model,
            "--search-arg",
            f"max_depth={args.depth}",
            "--search-arg",
            f"n_actions={n_actions}",
            "--search-arg",
            f"beam_width={beam}",
            "--save-dir",
            str(save),
            *extra,
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise SystemExit(f"{name}: {done.stderr.strip()[-2000:]}")
    summary = json.loads((save / "eval_results.json").read_text())
    summary["wall"] = round(time.time() - started)
    summary["answers"] = {
        p.name: json.loads(p.read_text()).get("eval", {}).get("answer") for p in sorted((save / "results").iterdir())
    }
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/math")
    parser.add_argument("--limit", type=int, default=2)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--model", default="local", help="'local' (embedded Gemma 3 270M) or a .gguf file")
    parser.add_argument("--out", type=Path, default=None, help="keep the runs here (default: a temporary dir)")
    parser.add_argument(
        "--fake",
        action="store_true",
        help="a loopback stand-in instead of the model: distinct samples, judgements that vary "
        "with the step (the counts in seconds, on any machine)",
    )
    args = parser.parse_args()
    if args.fake:
        from lits.testing.servers.openai_compat import FakeOpenAIServer

        with FakeOpenAIServer(responder=_stand_in) as server:
            args.fake = server.base_url
            sweep(args)
    else:
        sweep(args)


def _stand_in(prompt: str, body: dict, index: int) -> str:
    """Sample i of a step proposes part i; the judge's Yes or No follows a hash of the step (beams differ)."""
    last = str(body["messages"][-1]["content"]) if body.get("messages") else prompt
    if "Yes or No" in last:
        return "Yes" if zlib.crc32(last.encode()) % 3 else "No"
    step = re.search(r"Write only step (\d+)", last)
    return f"Work out part {index + 1} of step {step.group(1)}." if step else "The answer is $\\boxed{0}$."


def sweep(args: argparse.Namespace) -> None:
    out = args.out or Path(tempfile.mkdtemp(prefix="lits-replay-"))
    out.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(len(SETTINGS) + 1) as pool:  # one process each: counts do not depend on it
        recording = pool.submit(run, out, "recorded", args, *RECORDED)
        fresh_runs = list(pool.map(lambda s: run(out, f"fresh-n{s[0]}-b{s[1]}", args, *s), SETTINGS))
        recorded = recording.result()
        replays = list(
            pool.map(
                lambda s: run(out, f"replay-n{s[0]}-b{s[1]}", args, *s, "--replay-from", str(out / "recorded")),
                SETTINGS,
            )
        )
    print(
        f"recorded n_actions={RECORDED[0]} beam={RECORDED[1]}: {recorded['inference']['calls']} calls, "
        f"{recorded['solved']}/{recorded['instances']} solved, {recorded['wall']} s",
        flush=True,
    )
    print("| setting | fresh calls | replay: replayed / paid | same answers | fresh solved | replay solved |")
    print("|---|---|---|---|---|---|")
    fresh_calls = paid = 0
    for (n_actions, beam), fresh, replay in zip(SETTINGS, fresh_runs, replays):
        fresh_calls += fresh["inference"]["calls"]
        paid += replay["replay"]["paid"]
        print(
            f"| n_actions={n_actions} beam={beam} | {fresh['inference']['calls']} | "
            f"{replay['replay']['replayed']} / {replay['replay']['paid']} | "
            f"{fresh['answers'] == replay['answers']} | {fresh['solved']}/{fresh['instances']} | "
            f"{replay['solved']}/{replay['instances']} |",
            flush=True,
        )
    print(
        f"sweep of {len(SETTINGS)} settings: fresh {fresh_calls} calls, by replay {paid} calls "
        f"({paid / max(fresh_calls, 1):.1%}); the recorded run cost {recorded['inference']['calls']} calls"
    )


if __name__ == "__main__":
    main()
