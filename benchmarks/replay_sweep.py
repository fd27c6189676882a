"""A 4-setting ToT-BFS sweep on GSM8K by replay against the same sweep run fresh, with the real embedded model.

One recorded run (``n_actions`` 4, beam 3; made alongside the fresh runs) is replayed (``--replay-from``) under four other settings of
samples per node and beam width; the same four settings are also run fresh.  Counts model calls (what a
replay pays against what the fresh runs pay) and checks each replay's answers against its fresh run's: the
embedded model seeds sample i of a request with seed + i, so a replay must be the fresh run, byte for byte.

    python benchmarks/replay_sweep.py [--data ../shared/data/math] [--limit 5] [--depth 3] [--model local]
        [--out DIR] [--report FILE] [--jobs N]

Problems are swept one at a time (each its own nine runs, ``--offset k --limit 1``, in ``DIR/problem-k``), and
after each one the table so far is printed and, with ``--report FILE``, written to FILE as JSON (the totals
and each problem's rows): a sweep stopped part-way keeps every problem it finished, and the same command with
the same ``--out`` goes on from there (finished runs are read back, a run cut short is resumed).

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
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
import zlib

RECORDED = (4, 3)
#: (samples per node, beam width) of the sweep.
SETTINGS = ((2, 1), (3, 1), (3, 2), (4, 2))


def run(out: Path, name: str, args: argparse.Namespace, offset: int, n_actions: int, beam: int, *extra: str) -> dict:
    """One ``lits search`` run's summary over problem ``offset`` (its answers under ``answers``)."""
    save = out / name
    started = time.time()
    if (save / "eval_results.json").exists():  # finished before the sweep was stopped: read it back
        return _summary(save, started)
    again = ["--resume"] if (save / "config.json").exists() else []  # a benchmark stopped half-way goes on
    model = ["--model", "m", "--base-url", args.fake] if args.fake else ["--model", args.model]
    command = [
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
        "--offset",
        str(offset),
        "--limit",
        "1",
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
    ]
    tail: deque[str] = deque(maxlen=40)
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as child:
        assert child.stderr is not None
        for line in child.stderr:  # the run's progress lines, as they come
            tail.append(line)
            print(f"  {out.name}/{name}: {line.rstrip()}", file=sys.stderr, flush=True)
    if child.returncode:
        raise SystemExit(f"{save}: {''.join(tail).strip()[-2000:]}")
    return _summary(save, started)


def _summary(save: Path, started: float) -> dict:
    summary = json.loads((save / "eval_results.json").read_text())
    summary["wall"] = round(time.time() - started)
    summary["answers"] = {
        p.name: json.loads(p.read_text()).get("eval", {}).get("answer") for p in sorted((save / "results").iterdir())
    }
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/math")
    parser.add_argument("--offset", type=int, default=0, help="the first problem")
    parser.add_argument("--limit", type=int, default=5, help="problems, swept one at a time")
    parser.add_argument("--depth", type=int, default=3)
    parser.add_argument("--model", default="local", help="'local' (embedded Gemma 3 270M) or a .gguf file")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="keep the runs here; again with the same DIR goes on (default: a temp dir)",
    )
    parser.add_argument("--report", type=Path, default=None, help="after each problem, the results so far as JSON")
    parser.add_argument(
        "--jobs", type=int, default=None, help="runs at once (default: 1 with a real model, 5 with --fake)"
    )
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
    jobs = args.jobs or (len(SETTINGS) + 1 if args.fake else 1)  # one embedded model per process: one at a time
    print(f"runs in {out}; {args.limit} problems from {args.offset}, depth {args.depth}, {jobs} run(s) at once")
    problems: list[dict] = []
    with ThreadPoolExecutor(jobs) as pool:  # one process each: counts do not depend on it
        for offset in range(args.offset, args.offset + args.limit):
            problems.append(_problem(pool, out / f"problem-{offset}", args, offset))
            report = _report(problems)
            _print(report)
            if args.report:
                args.report.write_text(json.dumps(report, indent=1))


def _problem(pool: ThreadPoolExecutor, out: Path, args: argparse.Namespace, offset: int) -> dict:
    """The nine runs of one problem: recorded, fresh and replayed per setting (each replay after the record)."""
    recording = pool.submit(run, out, "recorded", args, offset, *RECORDED)
    fresh_runs = [pool.submit(run, out, f"fresh-n{s[0]}-b{s[1]}", args, offset, *s) for s in SETTINGS]
    recorded = recording.result()
    replays = [
        pool.submit(run, out, f"replay-n{s[0]}-b{s[1]}", args, offset, *s, "--replay-from", str(out / "recorded"))
        for s in SETTINGS
    ]
    rows = []
    for (n_actions, beam), fresh, replay in zip(
        SETTINGS, (f.result() for f in fresh_runs), (r.result() for r in replays)
    ):
        rows.append(
            {
                "setting": f"n_actions={n_actions} beam={beam}",
                "fresh_calls": fresh["inference"]["calls"],
                "replayed": replay["replay"]["replayed"],
                "paid": replay["replay"]["paid"],
                "same_answers": fresh["answers"] == replay["answers"],
                "fresh_solved": fresh["solved"],
                "replay_solved": replay["solved"],
            }
        )
    return {
        "offset": offset,
        "recorded_calls": recorded["inference"]["calls"],
        "recorded_solved": recorded["solved"],
        "rows": rows,
    }


def _report(problems: list[dict]) -> dict:
    """The sweep so far: per setting summed over the problems done, and the paid share."""
    settings = []
    for i, (n_actions, beam) in enumerate(SETTINGS):
        rows = [p["rows"][i] for p in problems]
        settings.append(
            {
                "setting": f"n_actions={n_actions} beam={beam}",
                **{
                    k: sum(r[k] for r in rows)
                    for k in ("fresh_calls", "replayed", "paid", "fresh_solved", "replay_solved")
                },
                "same_answers": all(r["same_answers"] for r in rows),
            }
        )
    fresh = sum(s["fresh_calls"] for s in settings)
    paid = sum(s["paid"] for s in settings)
    return {
        "problems": len(problems),
        "recorded_calls": sum(p["recorded_calls"] for p in problems),
        "recorded_solved": sum(p["recorded_solved"] for p in problems),
        "fresh_calls": fresh,
        "paid_calls": paid,
        "paid_share": round(paid / max(fresh, 1), 4),
        "settings": settings,
        "per_problem": problems,
    }


def _print(report: dict) -> None:
    n = report["problems"]
    print(
        f"\nafter {n} problem(s): recorded n_actions={RECORDED[0]} beam={RECORDED[1]}: {report['recorded_calls']} calls, "
        f"{report['recorded_solved']}/{n} solved",
        flush=True,
    )
    print("| setting | fresh calls | replay: replayed / paid | same answers | fresh solved | replay solved |")
    print("|---|---|---|---|---|---|")
    for s in report["settings"]:
        print(
            f"| {s['setting']} | {s['fresh_calls']} | {s['replayed']} / {s['paid']} | {s['same_answers']} | "
            f"{s['fresh_solved']}/{n} | {s['replay_solved']}/{n} |"
        )
    print(
        f"sweep of {len(SETTINGS)} settings: fresh {report['fresh_calls']} calls, by replay {report['paid_calls']} "
        f"calls ({report['paid_share']:.1%}); the recorded run cost {report['recorded_calls']} calls",
        flush=True,
    )


if __name__ == "__main__":
    main()
