"""Calls in flight: 30 BlocksWorld instances x MCTS against a loopback server.

The server answers deterministically after a fixed latency, so wall time is
all waiting. Reported: wall time at concurrency 1 and at concurrency 32, the
critical-path bound (the most dependent rounds of any instance x latency,
counted by LiTS's logical clock), the capacity bound (calls x latency /
concurrency), each ratio, the speed-up, and a second pass at concurrency 32
served from the response cache (it must make 0 paid calls).

    python benchmarks/concurrency.py [--instances 30] [--latency 0.2] [--out FILE]
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from lits.agents import MCTS, MCTSConfig
from lits.components.factory import create_components
from lits.lm.cache import ResponseCache
from lits.lm.openai_compat import OpenAICompatibleModel
from lits.observability import InferenceLog
from lits.registry import load_dataset
from lits.runs.artifacts import RunDir
from lits.runs.runner import run_instances
from lits.testing.server import FakeOpenAIServer


def answer(prompt: str, body: dict[str, Any]) -> str:
    """A deterministic 'model': self-evaluations say Yes, action requests get a listed action."""
    if "Answer Yes or No" in prompt:
        return "Yes"
    lines = prompt.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Legal actions:"):
            return lines[i + 1].strip()
    return "wait"


def one_pass(base_url: str, examples: list, concurrency: int, root: Path, cache: Path) -> dict[str, Any]:
    model = OpenAICompatibleModel("bench", base_url, concurrency=concurrency)
    model.use_cache(ResponseCache(cache))
    parts = create_components("blocksworld", model, n_actions=3)
    config = MCTSConfig(n_iterations=10, n_actions=3, max_depth=6, early_stop=False)
    run_dir = RunDir(root).create()
    started = time.perf_counter()
    outcome = run_instances(
        lambda: MCTS(config, parts.policy, parts.transition, parts.reward_model, checkpoint_dir=run_dir.checkpoints),
        parts, examples, run_dir, mode="search", concurrency=concurrency, progress_stream=io.StringIO(),
    )
    wall = time.perf_counter() - started
    model.close()
    assert not outcome.failed, outcome.failed
    results = run_dir.read_timings()
    log = InferenceLog.read(run_dir.inference_log_path)
    return {
        "concurrency": concurrency,
        "wall_s": round(wall, 2),
        "paid_calls": log.summary()["calls"],
        "cache_hits": log.summary()["cache_hits"],
        "max_rounds": max(r["dependent_rounds"] for r in results.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=30)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args()
    examples = list(enumerate(load_dataset("blocksworld", steps="2,4,6", n=args.instances)))[: args.instances]
    work = Path(tempfile.mkdtemp(prefix="lits-bench-"))
    try:
        with FakeOpenAIServer(responder=answer, latency=args.latency) as srv:
            serial = one_pass(srv.base_url, examples, 1, work / "c1", work / "c1.sqlite")
            wide = one_pass(srv.base_url, examples, 32, work / "c32", work / "c32.sqlite")
            cached = one_pass(srv.base_url, examples, 32, work / "c32-again", work / "c32.sqlite")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    critical = wide["max_rounds"] * args.latency
    capacity = wide["paid_calls"] * args.latency / 32
    report = {
        "instances": len(examples),
        "latency_s": args.latency,
        "concurrency_1": serial,
        "concurrency_32": wide,
        "critical_path_bound_s": round(critical, 2),
        "capacity_bound_s": round(capacity, 2),
        "ratio_c32_to_critical_path": round(wide["wall_s"] / critical, 3),
        "ratio_c32_to_max_bound": round(wide["wall_s"] / max(critical, capacity), 3),
        "ratio_c1_to_serial_bound": round(serial["wall_s"] / (serial["paid_calls"] * args.latency), 3),
        "speedup_c32_over_c1": round(serial["wall_s"] / wide["wall_s"], 2),
        "second_pass_from_cache": cached,
    }
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
