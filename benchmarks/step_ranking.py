"""Step rewards on a real instruct model: how often each reward model scores the right step of a pair first.

Both rankers the real-model tests pin on a few clear pairs (the log-probability
PRM and the Yes/No generative judge) over every hand-written GSM8K-like pair
in ``tests/realmodel/step_pairs.json``, on Qwen2.5-Coder-0.5B-Instruct Q4_K_M
served by a llama.cpp server this script starts on 127.0.0.1 (or any server
given with ``--base-url``).  Printed as Markdown: each pair's two scores per
ranker, then per ranker the pairs won with the Wilson 95 % interval, the
requests and the prompt tokens.

    python benchmarks/step_ranking.py [--pairs tests/realmodel/step_pairs.json] [--base-url URL --model NAME]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from fidelity import model_server  # noqa: E402  (the benchmarks folder is not a package)

PAIRS = Path(__file__).resolve().parents[1] / "tests" / "realmodel" / "step_pairs.json"
MODEL_NAME = "qwen2.5-coder-0.5b-instruct"


def rankers(model: Any) -> dict[str, Any]:
    from lits.components.reward.generative import GenerativePRM
    from lits_math.prm import LogprobPRM

    return {
        "logprob PRM": LogprobPRM(base_model=model, task_name="gsm8k"),
        "generative judge": GenerativePRM(base_model=model, task_name="gsm8k"),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, default=PAIRS)
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible server (default: start llama.cpp's)")
    parser.add_argument("--model", default=MODEL_NAME)
    parser.add_argument("--log", type=Path, default=Path("step_ranking_server.log"))
    args = parser.parse_args()

    from lits.lm.openai_compat import OpenAICompatibleModel
    from lits.runtime.observability import InferenceLog, collecting
    from lits.export.step_ranking import load_step_pairs, rank_all, right_first_share

    pairs = load_step_pairs(args.pairs)
    rows: dict[str, list[Any]] = {}
    totals: list[str] = []
    with model_server(args.base_url, args.log) as url:
        model = OpenAICompatibleModel(args.model, url, read_timeout=240.0, adaptive_read_timeout=False, hedge="off")
        try:
            for name, prm in rankers(model).items():
                started = time.perf_counter()
                with collecting(InferenceLog()) as log:
                    rows[name] = rank_all(prm, pairs)
                seconds = time.perf_counter() - started
                wins, (lo, hi) = right_first_share(rows[name])
                prompt = sum(r.tokens_in for r in log.records)
                totals.append(
                    f"| {name} | {wins} of {len(pairs)} | {lo:.2f}-{hi:.2f} | {len(log.records)} | {prompt} "
                    f"| {seconds:.0f} |"
                )
        finally:
            model.close()
    names = list(rows)
    print("| pair | " + " | ".join(f"{n}: right / wrong" for n in names) + " |")
    print("|---|" + "---|" * len(names))
    for i, pair in enumerate(pairs):
        cells = [
            f"{rows[n][i].right:.3f} / {rows[n][i].wrong:.3f}" + ("" if rows[n][i].right_first else " x") for n in names
        ]
        print(f"| {i}: {pair.wrong} | " + " | ".join(cells) + " |")
    print()
    print("| ranker | right step first | Wilson 95 % | requests | prompt tokens | wall s |")
    print("|---|---|---|---|---|---|")
    print("\n".join(totals))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
