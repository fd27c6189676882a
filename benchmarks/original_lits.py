"""The original LiTS (xinzhel/lits-llm at 8823d65) on short_runs.py's workload, once, in this process.

Run by ``short_runs.py --original`` with the original's own interpreter, never
ours: nothing of the original is installed into our environment or copied into
this repository.  The checkout's path comes from the command line; this file
puts it (and its ``demos/``, where its BlocksWorld module lives) on
``sys.path`` and runs its ``lits-search`` entry point (``lits.cli.search.main``)
as a user would:

    lits-search --include lits_benchmark.blocksworld --dataset blocksworld
        --search-arg n_iters=10 n_actions=3 max_steps=6 roll_out_steps=6
                     force_terminating_on_depth_limit=True terminate_on_terminal_node=False
        --var limit=5

on the first 5 six-step RAP cases (ours: ``--limit 5``, the same PDDL files),
its other settings at their defaults (among them its DEBUG-level
``execution.log`` and console lines, captured here as ours are), with one
change: its ``load_models`` returns :class:`StubModel`, a zero-latency
model written against the original's ``LanguageModel`` interface that answers
like our scripted model (``lits.testing.scripted``): the policy gets one of the
listed actions (a fixed hash order per prompt, the next one at each ask, so the
three asks of one expansion differ), the judge "good" (our model's "Yes"), and
the world model the true [CHANGE] line, as the original's RAP transition asks
its model for each step.  Like the original's server-backed models, it writes
each call to the original's inference log.

Timed: each instance's ``run_tree_search`` (its search, checkpoints, result
files), as ``time.perf_counter`` (wall) and ``time.process_time`` (the
process's CPU, every thread); imports, data loading and set-up are not.  An
iteration is one pass of the original's MCTS loop (counted where it checks its
runtime limit, at the top of each).  Printed: one JSON line.

One-time set-up (a checkout of the original and an interpreter with what its
import chain needs; torch is imported at module level but never called here:
its CPU-only build is enough, where a default install also brings ~4 GB of CUDA
libraries)::

    git clone https://github.com/xinzhel/lits-llm /tmp/lits-llm && git -C /tmp/lits-llm checkout 8823d65
    python3.11 -m venv /tmp/lits-original-venv
    /tmp/lits-original-venv/bin/pip install numpy tqdm pyyaml tarski pddl python-dotenv pydantic ipython \\
        huggingface_hub openai boto3 requests torch

    /tmp/lits-original-venv/bin/python benchmarks/original_lits.py --original /tmp/lits-llm \\
        --data ../shared/data/blocksworld [--iterations 10] [--work-dir DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import importlib
import io
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: The commit the side-by-side figures are for.
COMMIT = "8823d65"
#: Files a checkout of the original has (checked before importing from it).
LANDMARKS = ("lits/agents/tree/mcts.py", "lits/cli/search.py", "demos/lits_benchmark/blocksworld.py")
CASES = 5

_OPTIONS = "Choose an action from the following options"
_ACTION = re.compile(r"\[ACTION\]\s*(.+?)\.?\s*$", re.MULTILINE)


def listed_options(prompt: str) -> list[str]:
    """The actions the original's policy prompt lists (tab-indented lines after its "Choose an action" line)."""
    at = prompt.rfind(_OPTIONS)
    if at < 0:
        return []
    lines = prompt[prompt.find("\n", at) + 1 :].splitlines()
    return [line.strip() for line in lines if line.strip()]


def option_order(prompt: str, options: list[str]) -> list[str]:
    """The options in a fixed order drawn from the prompt (as our scripted model shuffles listed actions)."""
    stem = hashlib.sha256(prompt.encode())

    def rank(option: str) -> str:
        each = stem.copy()
        each.update(option.encode())
        return each.hexdigest()

    return sorted(options, key=rank)


def change_line(action: str) -> str:
    """The [CHANGE] line a perfect model writes for a BlocksWorld action (the original's few-shot format)."""
    text = action.strip().rstrip(".").lower()
    found = re.fullmatch(r"(pick up|put down) the (\w+) block", text)
    if found and found.group(1) == "pick up":
        x = found.group(2)
        return (
            f"The hand was empty and is now holding the {x} block, the {x} block was on the table and is now "
            f"in the hand, and the {x} block is no longer clear."
        )
    if found:
        x = found.group(2)
        return (
            f"The hand was holding the {x} block and is now empty, the {x} block was in the hand and is now "
            f"on the table, and the {x} block is now clear."
        )
    found = re.fullmatch(r"unstack the (\w+) block from on top of the (\w+) block", text)
    if found:
        x, y = found.groups()
        return (
            f"The hand was empty and is now holding the {x} block, the {x} block was on top of the {y} block "
            f"and is now in the hand, the {x} block is no longer clear, and the {y} block is now clear."
        )
    found = re.fullmatch(r"stack the (\w+) block on top of the (\w+) block", text)
    if found:
        x, y = found.groups()
        return (
            f"The hand was holding the {x} block and is now empty, the {x} block was in the hand and is now "
            f"on top of the {y} block, the {x} block is now clear, and the {y} block is no longer clear."
        )
    raise ValueError(f"not a BlocksWorld action: {action!r}")


class Replies:
    """What the stub answers, by the asking component's role (the original names it in each call)."""

    def __init__(self) -> None:
        self.asked: dict[str, int] = {}
        self.calls = 0

    def __call__(self, prompt: str, role: str | None) -> str:
        self.calls += 1
        role = role or ""
        if role.startswith("policy"):
            options = listed_options(prompt)
            if not options:
                raise ValueError("a policy prompt without options")
            k = self.asked.get(prompt, 0)
            self.asked[prompt] = k + 1
            return option_order(prompt, options)[k % len(options)]
        if role.startswith("prm"):
            return "good"
        if role.startswith("dynamics"):
            actions = _ACTION.findall(prompt)
            if not actions:
                raise ValueError("a world-model prompt without an [ACTION]")
            return change_line(actions[-1])
        raise ValueError(f"the stub has no answer for role {role!r}")


def data_file(data: Path, out: Path) -> Path:
    """The first CASES six-step RAP cases as the original's loader reads them (PDDL paths made absolute)."""
    split = json.loads((data / "split_v1" / "split_v1_step_6_data.json").read_text())
    cases = []
    for pddl, plan, steps in split[:CASES]:
        relative = pddl[pddl.index("instances/") :] if "instances/" in pddl else pddl
        cases.append([str((data / relative).resolve()), plan, steps])
    out.write_text(json.dumps(cases))
    return out


def check_checkout(original: Path) -> None:
    missing = [name for name in LANDMARKS if not (original / name).is_file()]
    if missing:
        raise SystemExit(
            f"--original {original}: not a checkout of xinzhel/lits-llm ({missing[0]} is missing); "
            f"give the folder of a checkout at {COMMIT}"
        )


def run(original: Path, data: Path, iterations: int, work_dir: str) -> dict[str, Any]:
    """The workload once: seconds and CPU seconds of the instances' searches, iterations run, model calls."""
    check_checkout(original)
    sys.path[:0] = [str(original), str(original / "demos")]
    # the original's modules, which share our package's name: by name, untyped
    search_base: Any = importlib.import_module("lits.agents.tree.search_base")
    cli: Any = importlib.import_module("lits.cli.search")
    lm: Any = importlib.import_module("lits.lm.base")
    replies = Replies()

    class StubModel(lm.LanguageModel):  # type: ignore[misc]
        """Zero latency; logs each call as the original's OpenAIChatModel does."""

        def __call__(self, prompt: Any, role: str | None = "default", **kwargs: Any) -> Any:
            started = time.time()
            text = replies(prompt if isinstance(prompt, str) else json.dumps(prompt), role)
            if self.inference_logger and role is not None:
                self.inference_logger.update_usage(
                    input_tokens=len(str(prompt).split()),
                    output_tokens=len(text.split()),
                    batch=False,
                    batch_size=1,
                    role=role,
                    running_time=time.time() - started,
                )
            return lm.Output(text)

        def batch_generate(self, prompts: list[Any], **kwargs: Any) -> list[str]:
            return [self(p, **kwargs).text for p in prompts]

    stub = StubModel("scripted-stub")
    cli.load_models = lambda **kwargs: (stub, stub, None, None)
    spent = {"wall": 0.0, "cpu": 0.0, "iterations": 0}
    errors: list[str] = []
    search = cli.run_tree_search

    def timed(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return search(*args, **kwargs)
        finally:
            spent["cpu"] += time.process_time() - cpu
            spent["wall"] += time.perf_counter() - wall

    cli.run_tree_search = timed
    check = search_base.BaseTreeSearch.check_runtime_limit

    def counted(self: Any) -> None:
        spent["iterations"] += 1
        check(self)

    search_base.BaseTreeSearch.check_runtime_limit = counted
    handle = search_base.BaseTreeSearch._handle_error

    def noted(self: Any, error: BaseException) -> None:  # the original swallows a search's ValueError
        errors.append(f"{type(error).__name__}: {error}")
        handle(self, error)

    search_base.BaseTreeSearch._handle_error = noted
    with tempfile.TemporaryDirectory(dir=work_dir, prefix=".original-run-") as tmp:
        cases = data_file(data, Path(tmp) / "cases.json")
        sys.argv = [
            "lits-search",
            "--include",
            "lits_benchmark.blocksworld",
            "--dataset",
            "blocksworld",
            "--policy-model",
            "scripted-stub",
            "--output-dir",
            str(Path(tmp) / "run"),
            "--dataset-arg",
            f"config_file={data / 'bw_config.yaml'}",
            f"domain_file={data / 'generated_domain.pddl'}",
            f"data_file={cases}",
            "--search-arg",
            f"n_iters={iterations}",
            "n_actions=3",
            "max_steps=6",
            "roll_out_steps=6",
            "force_terminating_on_depth_limit=True",
            "terminate_on_terminal_node=False",
            "--var",
            f"limit={CASES}",
        ]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main()
    if code != 0 or errors:
        tail = errors[0] if errors else (out.getvalue() + err.getvalue()).strip()[-400:]
        raise SystemExit(f"the original's lits-search failed (exit {code}): {tail}")
    n = max(1, int(spent["iterations"]))
    return {
        "iterations": n,
        "calls": replies.calls,
        "search_s": spent["wall"],
        "search_cpu_s": spent["cpu"],
        "ms_per_iteration": 1000 * spent["wall"] / n,
        "cpu_ms_per_iteration": 1000 * spent["cpu"] / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--original", type=Path, required=True, help=f"a checkout of xinzhel/lits-llm at {COMMIT}")
    parser.add_argument("--data", type=Path, default=Path("../shared/data/blocksworld"))
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--work-dir", default=".", help="where the run's directory is made (default: here)")
    parser.add_argument(
        "--pin-clock",
        action="store_true",
        help="the garbage collector off, as short_runs.py --instructions counts ours (no clock of the "
        "original's decides what its run does)",
    )
    args = parser.parse_args()
    if args.pin_clock:
        gc.disable()
    if not (args.data / "split_v1" / "split_v1_step_6_data.json").is_file():
        parser.error(f"--data {args.data} is not the BlocksWorld data set (no split_v1/split_v1_step_6_data.json)")
    print(json.dumps(run(args.original.resolve(), args.data.resolve(), args.iterations, args.work_dir)))


if __name__ == "__main__":
    main()
