"""Short runs, as researchers start them: ms per iteration at 10 iterations, framework cost per model call,
and the time from starting `lits search` to its first iteration.

Workload: the original LiTS's BlocksWorld MCTS shape (5 six-step RAP cases,
3 actions, depth 6, no early stop) on the zero-latency scripted model,
through the whole `lits search` path.  Each repeat is a fresh process, after
one untimed run that writes Python's bytecode cache (a user's install has it).
Printed: the median with the range over the repeats, and with ``--profile``
the top 10 costs (cProfile of the instances' thread, by own time).

- *ms per iteration*: the instances' search seconds (``timings/``) over the
  iterations run, as ``benchmarks/search_scale.py`` reports it.
- *framework cost per call*: the time a model call spends in
  ``LanguageModel.generate`` outside the model's own ``_generate`` (cache
  keys and look-ups, the cache write, the inference log, bookkeeping).
- *start to first iteration*: from spawning ``python -m lits search`` to the
  end of the first iteration (its checkpoint taken; one 2-step case).

With ``--original PATH`` (a checkout of the original LiTS, xinzhel/lits-llm at
8823d65) the ratio is measured side by side instead of against the constant
25 ms: ``original_lits.py`` runs the original's ``lits-search`` on the same 5
cases and settings with a stub model that answers like ours, in its own
interpreter (``--original-python``; set-up in that file's docstring), and the
runs alternate, ours then the original's, fresh processes each, after one
untimed run of each.  Each side's *search* is timed the same way: around each
instance (ours ``_Runner.one``, the original's ``run_tree_search``), as wall
time and as the process's CPU time (``time.process_time``), over the
iterations run; each ratio (ours / the original's) is taken within a pair and
reported as the median (range) over the pairs.

Run directories are made under ``--work-dir`` (default: the current
directory, where ``lits search`` puts ``runs/``).  On these VMs creating a
file under ``/tmp`` costs 10-300 µs, varying by the minute, against ~10 µs
elsewhere on the same disk, and an instance creates three files before its
seconds are taken: ``--work-dir /tmp`` measures that too.

With ``--instructions`` it prints instead what the host's speed cannot move:
the instructions one run executes (valgrind's callgrind, Debian's
``valgrind`` package; hash seed fixed, the garbage collector off, and what a
clock decides pinned as a 15 ms instance has it, since valgrind runs ~50x slower) at
``--iterations`` and at 1 iteration, and their difference per iteration.
Two runs of one commit agree within 0.03 %: it compares commits where wall
time, which moves 10-30 % with this host's minute, cannot.  With ``--original``
too it counts the original's runs the same way (its interpreter, hash seed
fixed, the garbage collector off; no clock of its decides what a run does) and
prints the ratio of instructions per iteration, ours over the original's: the
side-by-side ratio no host's speed or load moves.

    python benchmarks/short_runs.py --data ../shared/data/blocksworld [--repeats 5] [--profile] [--work-dir DIR]
        [--instructions] [--original /tmp/lits-llm [--original-python /tmp/lits-original-venv/bin/python]]
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any, Callable

#: The original LiTS at 10 iterations on this workload (docs/benchmarks.md, "Search engine at scale"): the
#: ratio's denominator when the original is not run side by side (``--original``).
ORIGINAL_MS_PER_ITERATION = 25.0
#: Where ``original_lits.py``'s set-up puts the original's interpreter.
ORIGINAL_PYTHON = "/tmp/lits-original-venv/bin/python"

#: ``lits search`` with the end of its first iteration printed. The hook goes in once ``lits.agents.tree.base`` is
#: imported by the run itself: importing it first would build pydantic models before ``main`` ran, and time a start
#: the command does not have.
FIRST_ITERATION = """
import importlib.machinery, sys, time
class Hook:
    def find_spec(self, name, path, target=None):
        if name != "lits.agents.tree.base":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            base = module.BaseTreeSearch
            saved = base.save_checkpoint
            def first(self, *a, **k):
                saved(self, *a, **k)
                print("FIRST", time.time(), file=sys.__stderr__, flush=True)
                base.save_checkpoint = saved
            base.save_checkpoint = first
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, Hook())
from lits.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def search_args(data: str, save_dir: Path, iterations: int) -> list[str]:
    return [
        "search",
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        f"path={data}",
        "--dataset-arg",
        "steps=6",
        "--limit",
        "5",
        "--model",
        "scripted",
        "--search",
        "mcts",
        "--search-arg",
        f"n_iterations={iterations}",
        "--search-arg",
        "n_actions=3",
        "--search-arg",
        "max_depth=6",
        "--search-arg",
        "early_stop=false",
        "--save-dir",
        str(save_dir),
    ]


def one_run(data: str, iterations: int, profile: bool, work_dir: str = ".", pin_clock: bool = False) -> dict[str, Any]:
    """The workload once in this process: ms per iteration and framework cost per call."""
    import cProfile

    from lits.cli.main import main
    from lits.lm.base import LanguageModel
    from lits.runs import runner
    from lits.testing.scripted import ScriptedModel

    if pin_clock:  # journal lines, cache commits and progress lines as a short run has them, however slow
        from lits.agents.tree import journal
        from lits.lm import cache

        journal.FLUSH_SECONDS = cache.GROUP_SECONDS = 1e9
        runner.Progress.__init__.__defaults__ = (None, 1e9)  # no "running" line: a 15 ms instance prints none
        gc.disable()  # when a full collection falls moves with every allocation anywhere: ~1 % either way

    spent = {"generate": 0.0, "model": 0.0, "search": 0.0, "search_cpu": 0.0}
    calls = {"generate": 0, "model": 0}

    def timed(method: Callable[..., Any], key: str) -> Callable[..., Any]:
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(self, *args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - start
                calls[key] += 1

        return wrapper

    LanguageModel.generate = timed(LanguageModel.generate, "generate")  # type: ignore[method-assign]
    ScriptedModel._generate = timed(ScriptedModel._generate, "model")  # type: ignore[method-assign]
    instance = runner._Runner.one

    def searched(self: Any, *args: Any, **kwargs: Any) -> Any:  # as original_lits.py times run_tree_search
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return instance(self, *args, **kwargs)
        finally:
            spent["search_cpu"] += time.process_time() - cpu
            spent["search"] += time.perf_counter() - wall

    runner._Runner.one = searched  # type: ignore[method-assign]
    profiler = cProfile.Profile() if profile else None
    if profiler is not None:
        one = runner._Runner.one

        def profiled(self: Any, *args: Any, **kwargs: Any) -> Any:
            profiler.enable()
            try:
                return one(self, *args, **kwargs)
            finally:
                profiler.disable()

        runner._Runner.one = profiled  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(dir=work_dir, prefix=".short-run-") as tmp:
        run = Path(tmp) / "run"
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            code = main(search_args(data, run, iterations))
        if code != 0:
            raise SystemExit(f"lits search exited {code}")
        seconds = sum(json.loads(p.read_text())["seconds"] for p in (run / "timings").iterdir())
    out: dict[str, Any] = {
        "ms_per_iteration": 1000 * seconds / (5 * iterations),
        "search_s": spent["search"],
        "search_cpu_s": spent["search_cpu"],
        "iterations": 5 * iterations,
        "framework_ms_per_call": 1000 * (spent["generate"] - spent["model"]) / max(1, calls["generate"]),
        "calls": calls["generate"],
    }
    if profiler is not None:
        import pstats

        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(10)
        out["profile"] = text.getvalue()
    return out


def first_iteration_seconds(data: str, work_dir: str = ".") -> float:
    """Seconds from spawning ``lits search`` to its first checkpoint."""
    with tempfile.TemporaryDirectory(dir=work_dir, prefix=".short-run-") as tmp:
        args = [
            "search",
            "--dataset",
            "blocksworld",
            "--dataset-arg",
            f"path={data}",
            "--dataset-arg",
            "steps=2",
            "--limit",
            "1",
            "--model",
            "scripted",
            "--search",
            "mcts",
            "--search-arg",
            "n_iterations=2",
            "--save-dir",
            str(Path(tmp) / "run"),
        ]
        started = time.time()
        done = subprocess.run(
            [sys.executable, "-c", FIRST_ITERATION, *args], capture_output=True, text=True, env=_bytecode_env()
        )
        stamps = [float(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("FIRST ")]
        if done.returncode != 0 or not stamps:
            raise SystemExit(f"lits search failed: {done.stderr.strip()[-500:]}")
        return stamps[0] - started


def _counting_env() -> dict[str, str]:
    """A fixed hash seed, no stats save on the clock, and the bytecode cache written (compiling a changed
    module is not the search's work: the first, uncounted run writes it)."""
    return {**_bytecode_env(), "PYTHONHASHSEED": "0", "LITS_STATS_EVERY": "1e9"}


def instructions(command: list[str]) -> tuple[int, Run]:
    """Instructions ``command`` executes under callgrind, and the run's JSON line (its iterations, calls)."""
    env = _counting_env()
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *command, "--pin-clock"],
        capture_output=True,
        text=True,
        env=env,
    )
    counted = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if done.returncode != 0 or counted is None:
        raise SystemExit(f"valgrind failed: {done.stderr.strip()[-500:]}")
    return int(counted.group(1)), dict(json.loads(done.stdout.strip().splitlines()[-1]))


def with_iterations(command: list[str], iterations: int) -> list[str]:
    at = command.index("--iterations") + 1
    return [*command[:at], str(iterations), *command[at + 1 :]]


def instructions_per_iteration(command: list[str], iterations: int, who: str) -> float:
    """Instructions per iteration beyond the first of ``command`` (its run at ``iterations`` less its run at 1,
    over the iterations between them), after one uncounted run that writes the bytecode cache."""
    subprocess.run(command, capture_output=True, check=True, env=_counting_env())
    at_n, run_n = instructions(command)
    at_1, run_1 = instructions(with_iterations(command, 1))
    extra = run_n["iterations"] - run_1["iterations"]
    print(f"{who}: instructions at {iterations} iterations: {at_n:,}; at 1 iteration: {at_1:,}")
    print(
        f"{who}: per iteration beyond the first ({extra} iterations, {run_n['calls']} model calls per run): "
        f"{(at_n - at_1) / extra:,.0f}"
    )
    return (at_n - at_1) / extra


def print_instructions(one: list[str], iterations: int, original: list[str] | None = None) -> None:
    """Ours per iteration beyond the first; with ``original`` (its run's command) the original's too, and the
    ratio of the two."""
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind (apt-get install valgrind)")
    ours = instructions_per_iteration(one, iterations, "ours")
    if original is not None:
        theirs = instructions_per_iteration(original, iterations, "the original")
        print(f"ours / the original, instructions per iteration beyond the first: {ours / theirs:.4f}")


def _bytecode_env() -> dict[str, str]:
    """This environment with the bytecode cache written: a user's install has it, and
    ``PYTHONDONTWRITEBYTECODE`` would time compiling (lazy imports land inside an instance's seconds)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


Run = dict[str, Any]


def interleaved(pairs: int, ours: Callable[[], Run], original: Callable[[], Run]) -> list[tuple[Run, Run]]:
    """``pairs`` pairs of runs, ours then the original's in each, alternating: the host's load moves both sides
    of a pair alike, where a block of ours then a block of theirs would meet different minutes."""
    out = []
    for _ in range(pairs):
        mine = ours()
        out.append((mine, original()))
    return out


def pair_ratios(pairs: list[tuple[Run, Run]], key: str) -> list[float]:
    """Ours over the original's ``key`` per iteration, within each pair."""
    return [(ours[key] / ours["iterations"]) / (theirs[key] / theirs["iterations"]) for ours, theirs in pairs]


def _json_run(command: list[str], what: str) -> Run:
    done = subprocess.run(command, capture_output=True, text=True, env=_bytecode_env())
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit {done.returncode}"]
        raise SystemExit(f"{what} failed: {lines[-1]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def measure(
    data: str,
    repeats: int,
    iterations: int = 10,
    work_dir: str = ".",
    original: str | None = None,
    original_python: str = ORIGINAL_PYTHON,
) -> dict[str, list[float]]:
    """Each figure of ``repeats`` fresh processes (and as many timed starts), in run order, after one untimed
    run of each that writes the bytecode cache.  With ``original`` (a checkout of the original LiTS) the runs
    alternate with the original's and ``ratio`` is ours over the original's CPU per iteration, pair by pair;
    without it, ours over the constant ``ORIGINAL_MS_PER_ITERATION``."""
    one = [sys.executable, __file__, "--one", "--data", data, "--iterations", str(iterations), "--work-dir", work_dir]

    def ours() -> Run:
        return _json_run(one, "our run")

    figures: dict[str, list[float]] = {}
    if original is None:
        runs = [ours() for _ in range(repeats + 1)][1:]
        figures["ratio"] = [r["ms_per_iteration"] / ORIGINAL_MS_PER_ITERATION for r in runs]
    else:
        theirs = original_command(original, original_python, data, iterations, work_dir)
        pairs = interleaved(repeats + 1, ours, lambda: _json_run(theirs, "the original's run"))[1:]
        runs = [mine for mine, _ in pairs]
        figures["ratio"] = pair_ratios(pairs, "search_cpu_s")
        figures["wall_ratio"] = pair_ratios(pairs, "search_s")
        for side, index in (("ours", 0), ("original", 1)):
            figures[f"{side}_cpu_ms_per_iteration"] = [
                1000 * p[index]["search_cpu_s"] / p[index]["iterations"] for p in pairs
            ]
            figures[f"{side}_wall_ms_per_iteration"] = [
                1000 * p[index]["search_s"] / p[index]["iterations"] for p in pairs
            ]
            figures[f"{side}_calls"] = [p[index]["calls"] for p in pairs]
    figures["ms_per_iteration"] = [r["ms_per_iteration"] for r in runs]
    figures["framework_ms_per_call"] = [r["framework_ms_per_call"] for r in runs]
    figures["first_iteration_s"] = [first_iteration_seconds(data, work_dir) for _ in range(repeats + 1)][1:]
    figures["load_average"] = list(os.getloadavg())
    return figures


def original_command(original: str, python: str, data: str, iterations: int, work_dir: str) -> list[str]:
    """The original's run of this workload (``original_lits.py``), printing one JSON line."""
    here = str(Path(__file__).with_name("original_lits.py"))
    return [
        python,
        here,
        "--original",
        original,
        "--data",
        data,
        "--iterations",
        str(iterations),
        "--work-dir",
        work_dir,
    ]


def side_by_side_rows(figures: dict[str, list[float]]) -> list[tuple[str, str]]:
    """(figure, median (range)) beside the ratio: the wall-time ratio and both sides' ms per iteration with the
    original, and the host's load average (1, 5, 15 min) when the runs ended."""
    rows = []
    if "wall_ratio" in figures:
        rows = [("ours / the original, wall time of the search", spread(figures["wall_ratio"], 3))]
        for what, key in (("CPU", "cpu"), ("wall", "wall")):
            rows.append(
                (
                    f"{what} ms per iteration of the search, ours / the original's",
                    f"{spread(figures[f'ours_{key}_ms_per_iteration'], 2)} / "
                    f"{spread(figures[f'original_{key}_ms_per_iteration'], 2)}",
                )
            )
        rows.append(
            (
                "model calls per run, ours / the original's",
                f"{statistics.median(figures['ours_calls']):.0f} / {statistics.median(figures['original_calls']):.0f}",
            )
        )
    rows.append(("load average at the end (1, 5, 15 min)", ", ".join(f"{x:.2f}" for x in figures["load_average"])))
    return rows


def spread(values: list[float], digits: int = 3) -> str:
    return f"{round(statistics.median(values), digits)} ({round(min(values), digits)}–{round(max(values), digits)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/data/blocksworld")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--profile", action="store_true", help="print the top 10 costs of one run")
    parser.add_argument("--work-dir", default=".", help="where the runs' directories are made (default: here)")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count the instructions of one run under valgrind (deterministic) instead",
    )
    parser.add_argument(
        "--original",
        default=None,
        help="a checkout of the original LiTS (xinzhel/lits-llm at 8823d65): measure the ratio "
        "side by side (see original_lits.py for the set-up)",
    )
    parser.add_argument(
        "--original-python",
        default=ORIGINAL_PYTHON,
        help=f"the interpreter that runs the original (default: {ORIGINAL_PYTHON})",
    )
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--pin-clock", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not Path(args.work_dir).is_dir():
        parser.error(f"--work-dir {args.work_dir} is not a directory")
    if args.instructions and args.iterations < 2:
        parser.error("--instructions compares --iterations with 1 iteration: give --iterations 2 or more")
    check_original(parser, args.original, args.original_python)
    if args.one:
        print(json.dumps(one_run(args.data, args.iterations, args.profile, args.work_dir, args.pin_clock)))
        return
    one = [
        sys.executable,
        __file__,
        "--one",
        "--data",
        args.data,
        "--iterations",
        str(args.iterations),
        "--work-dir",
        args.work_dir,
    ]
    if args.instructions:
        theirs = None
        if args.original:
            theirs = original_command(args.original, args.original_python, args.data, args.iterations, args.work_dir)
        print_instructions(one, args.iterations, theirs)
        return
    figures = measure(args.data, args.repeats, args.iterations, args.work_dir, args.original, args.original_python)
    runs = f"{args.repeats} {'pairs' if args.original else 'runs'}"
    print(f"| figure ({runs}: median (range)) | value | target |")
    print("|---|---|---|")
    print(f"| ms per iteration at {args.iterations} iterations | {spread(figures['ms_per_iteration'], 2)} | — |")
    what = (
        "ours / the original, CPU time of the search, side by side"
        if args.original
        else f"ratio to the original's constant {ORIGINAL_MS_PER_ITERATION} ms (not side by side)"
    )
    print(f"| {what} | {spread(figures['ratio'], 3)} | ≤ 0.06 (stretch 0.04) |")
    print(f"| framework cost per model call (ms) | {spread(figures['framework_ms_per_call'], 3)} | ≤ 0.3 |")
    print(f"| start to first iteration (s) | {spread(figures['first_iteration_s'], 2)} | ≤ 0.4 |")
    for figure, value in side_by_side_rows(figures):
        print(f"| {figure} | {value} | — |")
    if args.profile:
        done = subprocess.run([*one, "--profile"], capture_output=True, text=True, check=True)
        print("\n" + json.loads(done.stdout.strip().splitlines()[-1])["profile"])


def check_original(parser: argparse.ArgumentParser, original: str | None, python: str) -> None:
    """A missing checkout or interpreter is one line naming the flag (before any run starts)."""
    if original is None:
        return
    if not Path(original).is_dir():
        parser.error(f"--original {original} is not a directory (a checkout of xinzhel/lits-llm at 8823d65)")
    if shutil.which(python) is None:
        parser.error(f"--original-python {python} is not an interpreter; make it as original_lits.py's docstring says")


if __name__ == "__main__":
    main()
