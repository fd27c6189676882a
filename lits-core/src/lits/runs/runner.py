"""Run a search or chain agent over dataset instances, concurrently and resumably."""

from __future__ import annotations

import contextvars
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, TextIO

from lits.answers import Vote, majority_vote, same_text
from lits.components.factory import Components
from lits.concurrency import fan_out_width, start_round_clock
from lits.observability import InferenceLog, call_context, collecting
from lits.runs.artifacts import RunDir
from lits.runs.evaluation import evaluate_instance


class Progress:
    """A status line per finished instance, and every ``every`` seconds while one runs."""

    def __init__(self, total: int, log: InferenceLog, stream: TextIO = sys.stderr, every: float = 15.0) -> None:
        self.total = total
        self.log = log
        self.stream = stream
        self.start = time.perf_counter()
        self.done = self.solved = self.failed = 0
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._ticker = threading.Thread(target=self._tick, args=(every,), daemon=True)

    def __enter__(self) -> "Progress":
        self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()

    def _tick(self, every: float) -> None:
        while not self._stopped.wait(every):
            self._print("running")

    def update(self, solved: Optional[bool]) -> None:
        with self._lock:
            self.done += 1
            self.solved += bool(solved)
            self.failed += solved is None
        self._print("")

    def _print(self, note: str) -> None:
        with self._lock:
            s = self.log.summary()
            line = (
                f"[{self.done}/{self.total}{' ' + note if note else ''}] solved {self.solved}"
                + (f", failed {self.failed}" if self.failed else "")
                + f" | calls {s['calls']} (+{s['cache_hits']} cached)"
                + f" | tokens {s['tokens_in'] + s['tokens_out']}"
                + f" | {time.perf_counter() - self.start:.1f}s"
            )
            print(line, file=self.stream, flush=True)


@dataclass
class RunOutcome:
    finished: list[int] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)
    seconds: float = 0.0


def run_instances(
    make_agent: Callable[[], Any],
    components: Components,
    examples: list[tuple[int, dict[str, Any]]],
    run_dir: RunDir,
    *,
    mode: str,
    concurrency: int = 1,
    resume: bool = False,
    progress_stream: TextIO = sys.stderr,
) -> RunOutcome:
    """Run every example not already finished; instances run concurrently."""
    outcome = RunOutcome()
    done = run_dir.done() if resume else set()
    todo = [(i, ex) for i, ex in examples if i not in done]
    outcome.skipped = sorted(i for i, _ in examples if i in done)
    log = InferenceLog(run_dir.inference_log_path)
    progress = Progress(len(todo), log, progress_stream)
    execution = run_dir.logger()
    execution.info("%s: %d instances to run, %d already done", mode, len(todo), len(outcome.skipped))

    def one(item: tuple[int, dict[str, Any]]) -> None:
        idx, example = item
        started = time.perf_counter()
        try:
            with call_context(instance=idx):
                rounds = start_round_clock()
                agent = make_agent()
                result = agent.run(example.get("query"), idx, example, resume=resume)
            record = _result_record(idx, example, result, components, mode)
            if mode == "search":
                payload = result.to_dict()
                run_dir.write_json(f"terminal_nodes/{idx}.json", payload.get("terminal_nodes", []))
                run_dir.write_json(f"paths/{idx}.json", payload.get("best_path", []))
            run_dir.write_json(f"timings/{idx}.json", {
                "seconds": round(time.perf_counter() - started, 3),
                "dependent_rounds": rounds[0],
                "inference": log.summary(instance=idx),
            })
            run_dir.write_result(idx, record)
            outcome.finished.append(idx)
            execution.info("instance %d: solved=%s stopped=%s", idx, record["eval"]["solved"], record["stopped"])
            progress.update(record["eval"]["solved"])
        except Exception as exc:  # one bad instance must not end the run
            message = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            outcome.failed[idx] = message
            execution.error("instance %d failed: %s\n%s", idx, message, traceback.format_exc())
            progress.update(None)

    started = time.perf_counter()
    with collecting(log), progress, fan_out_width(concurrency):
        if concurrency <= 1 or len(todo) <= 1:
            for item in todo:
                one(item)
        else:
            with ThreadPoolExecutor(max_workers=min(concurrency, len(todo)), thread_name_prefix="lits-instance") as pool:
                # Each instance runs in a copy of this context (fan-out width, sinks).
                futures = [pool.submit(contextvars.copy_context().run, one, item) for item in todo]
                for future in futures:
                    future.result()
    outcome.seconds = time.perf_counter() - started
    log.close()
    run_dir.close_logger(execution)
    return outcome


def _result_record(idx: int, example: dict[str, Any], result: Any, components: Components, mode: str) -> dict[str, Any]:
    """What the agent found: the same seed gives the same bytes (timings go to ``timings/``)."""
    state = result.best_state if mode == "search" else result.state
    extra = {k: v for k, v in example.items() if k != "query"}
    kept = getattr(result, "proposals", None)  # a search journals them, so they survive a resume
    proposals = kept if kept is not None else _proposals(components.policy, idx)
    vote = _vote(result, components) if mode == "search" else None
    return {
        "idx": idx,
        "id": example.get("id", str(idx)),
        "query": example.get("query"),
        "example": extra,
        "mode": mode,
        "solved_by_agent": bool(result.solved),
        "stopped": result.stopped,
        "iterations": getattr(result, "iterations", None),
        "final_state": state.to_dict(),
        "eval": evaluate_instance(components, {**example, "_proposals": proposals}, state,
                                  vote.answer if vote is not None else None),
        "answer_selection": vote.to_dict() if vote is not None else None,
        "search_stats": getattr(result, "stats", None),
        "proposals": proposals,
    }


def _vote(result: Any, components: Components) -> Optional[Vote]:
    """Self-consistency over the answers of all terminal nodes (language-grounded search)."""
    if components.task_type != "language_grounded":
        return None
    answers = [n.state.get_final_answer() for n in result.terminal_nodes if n.state is not None]
    return majority_vote(answers, components.equivalent or same_text)


def _proposals(policy: Any, idx: int) -> list[tuple[str, bool]]:
    take = getattr(getattr(policy, "stats", None), "take_proposals", None)
    return sorted(take(idx)) if take is not None else []  # concurrent expansions record in any order
