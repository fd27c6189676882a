"""``--attempts N`` and ``--memory-arg``: an instance tried up to N times, with memory between attempts.

Attempt 0 is the run without attempts: same checkpoints, same calls, same record.
Attempt k > 0 samples on its own stream (seed offset ``k * ATTEMPT_STREAM``), keeps its
checkpoints in ``checkpoints/attempt-k/`` and is tagged ``attempt=k`` in the inference log.
An attempt that solves ends the instance (pass@N).  Each finished attempt is saved, with
the memory after it, in ``attempts/{idx}.{k}.json``; ``--resume`` skips the saved ones,
restores the memory, and continues the unfinished attempt from its checkpoints, so a
resumed run writes the same results as an uninterrupted one.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, NotRequired, TypedDict, cast

from lits.io import layout
from lits.components.factory import Components
from lits.lm.base import sampling_stream
from lits.memory.base import AugmentorContext, JSONValue, Outcome
from lits.memory.memory import Memory, memory_scope
from lits.memory.notes import offering
from lits.runtime.observability import call_context
from lits.runs.results.artifacts import RunDir, RunFileError
from lits.runs.results.records import ResultRecord, result_record

if TYPE_CHECKING:
    from lits.runs.record import RunRecord

#: Seed offset between attempts: far apart from the streams an agent uses inside one attempt (``--chain sc``).
ATTEMPT_STREAM = 10_000


@dataclass(frozen=True)
class AttemptSettings:
    """How many attempts an instance gets and what memory runs between them."""

    attempts: int = 1
    memory_args: Mapping[str, object] = field(default_factory=dict)
    #: What the run's tools were built from (see :attr:`AugmentorContext.resource_args`).
    resource_args: Mapping[str, object] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: RunRecord) -> "AttemptSettings":
        tools = settings.resource_args if settings.resource else settings.dataset_args
        return cls(settings.attempts, dict(settings.memory_args), dict(tools))

    @property
    def plain(self) -> bool:
        """One attempt without memory: the run as it always was."""
        return self.attempts == 1 and not self.memory_args

    @property
    def shared(self) -> bool:
        """Memory carried from each instance to the next (``--memory-arg scope=run``)."""
        return bool(self.memory_args) and memory_scope(self.memory_args) == "run"


class SavedAttempt(TypedDict):
    """One finished attempt as ``attempts/{idx}.{k}.json`` holds it: its record and files, the memory after it,
    and the notes it was offered."""

    record: ResultRecord
    files: dict[str, object]
    memory: dict[str, JSONValue]
    notes: str | None
    #: Lines memory's ``max_notes`` left out of ``notes``, and entries the augmentors' caps dropped after it
    #: (absent when none).
    notes_kept: NotRequired[dict[str, int]]


@dataclass
class Finished:
    """An instance's final record and the files a search writes with it (its chosen path, its terminal nodes)."""

    record: ResultRecord
    files: dict[str, object]


def attempt_paths(root: Path, idx: int) -> list[str]:
    """Instance ``idx``'s saved attempts and the checkpoints of its attempts after the first, relative to the
    run dir (what a Ray worker sends back with the instance, and is sent to continue from)."""
    found = [*(root / layout.ATTEMPTS).glob(f"{idx}.*.json"), *(root / layout.CHECKPOINTS).glob(f"attempt-*/{idx}.*")]
    return sorted(
        str(p.relative_to(root)) for p in found if p.name.split(".")[0] == str(idx) and not p.name.endswith(".tmp")
    )


def search_files(idx: int, result: Any) -> dict[str, object]:
    """What a search writes next to its result: its terminal nodes and chosen path."""
    payload = result.to_dict()
    return {
        layout.terminal_nodes(idx): payload.get("terminal_nodes", []),
        layout.path(idx): payload.get("best_path", []),
    }


def answer_of(record: Mapping[str, Any]) -> str | None:
    """A record's answer: the answer judged, else the plan as one line."""
    evaluation = record.get("eval") or {}
    answer = evaluation.get("answer")
    if answer is None and evaluation.get("plan"):
        answer = "; ".join(str(step) for step in evaluation["plan"])
    return None if answer is None else str(answer)


def summary_of(
    attempt: int, record: Mapping[str, Any], notes: str | None, kept: Mapping[str, int] | None = None
) -> dict[str, object]:
    """One attempt as the instance record lists it (``kept``: what memory left out of its notes and dropped)."""
    summary: dict[str, object] = {
        "attempt": attempt,
        "solved": bool((record.get("eval") or {}).get("solved")),
        "answer": answer_of(record),
        "stopped": record.get("stopped"),
        "notes": notes,
    }
    if kept:
        summary["notes_left_out"] = int(kept.get("notes_left_out", 0))
        summary["notes_dropped"] = int(kept.get("notes_dropped", 0))
    return summary


class InstanceAttempts:
    """One instance's attempts, from the first unsaved one to the first that solves (or the last)."""

    def __init__(
        self,
        make_agent: Callable[[], Any],
        components: Components,
        run_dir: RunDir,
        mode: str,
        settings: AttemptSettings,
        previous: Mapping[int, int] | None = None,
    ) -> None:
        self.make_agent, self.components, self.run_dir, self.mode = make_agent, components, run_dir, mode
        self.settings = settings
        #: With ``scope=run``: each instance's predecessor in the selection, whose memory it starts from.
        self.previous = previous or {}

    def run(self, idx: int, example: dict[str, Any], resume: bool) -> Finished:
        memory = Memory.from_args(self.settings.memory_args)
        saved = self._saved(idx) if resume else []
        if saved and memory is not None:
            memory.restore(saved[-1].get("memory") or {})
        elif memory is not None and self.settings.shared and idx in self.previous:
            before = self._saved(self.previous[idx])  # it ran first: instances sharing memory run in order
            if before:
                memory.restore(before[-1].get("memory") or {})
        fresh = True  # the first attempt this process runs continues from its checkpoints (on --resume)
        while not saved or not (saved[-1]["record"]["eval"]["solved"] or len(saved) >= self.settings.attempts):
            attempt = len(saved)
            payload = self._attempt(idx, example, attempt, memory, resume and fresh)
            self.run_dir.write_json(layout.attempt(idx, attempt), payload, indent=None)
            saved.append(payload)
            fresh = False
        final = saved[-1]
        summaries = [summary_of(k, p["record"], p.get("notes"), p.get("notes_kept")) for k, p in enumerate(saved)]
        return Finished({**final["record"], "attempts": summaries}, dict(final.get("files") or {}))

    def _attempt(
        self, idx: int, example: dict[str, Any], attempt: int, memory: Memory | None, resume: bool
    ) -> SavedAttempt:
        context = AugmentorContext(
            idx=idx,
            query=example.get("query"),
            example=example,
            task_type=self.components.task_type,
            attempt=attempt,
            attempts=self.settings.attempts,
            model=self.components.policy.base_model,
            options=memory.options if memory is not None else {},
            resource_args=self.settings.resource_args,
        )
        notes = memory.notes(context) if memory is not None else None
        agent = self.make_agent()
        if attempt:
            folder = self.run_dir.root / layout.attempt_checkpoints(attempt)
            folder.mkdir(parents=True, exist_ok=True)
            agent.checkpoint_dir = folder
        with _stream(attempt), call_context(attempt=attempt):
            check = None if memory is None else functools.partial(memory.check, context=context)
            with offering(notes, check):
                result = agent.run(example.get("query"), idx, example, resume=resume)
            record = result_record(idx, example, result, self.components, self.mode)
            if memory is not None:
                trajectory = result.best_state if self.mode == "search" else result.state
                outcome = Outcome(bool(record["eval"]["solved"]), answer_of(record), str(record.get("stopped")))
                memory.attempt_ended(list(trajectory), outcome, context)
        files = search_files(idx, result) if self.mode == "search" else {}
        state: dict[str, JSONValue] = memory.state() if memory is not None else {}
        payload: SavedAttempt = {"record": record, "files": files, "memory": state, "notes": notes}
        if memory is not None and (memory.trimmed or memory.dropped):
            payload["notes_kept"] = {"notes_left_out": memory.trimmed, "notes_dropped": memory.dropped}
        return payload

    def _saved(self, idx: int) -> list[SavedAttempt]:
        """The attempts already saved for ``idx``, in order (a gap ends the list)."""
        out: list[SavedAttempt] = []
        while (path := self.run_dir.root / layout.attempt(idx, len(out))).exists():
            remedy = (
                f"delete it (and instance {idx}'s later attempt files) and run "
                f"`{self.run_dir.resume_hint(self.mode)}` to redo attempt {len(out)} of instance {idx}"
            )
            saved = self.run_dir.read_json(path, remedy)
            record = saved.get("record") if isinstance(saved, dict) else None
            if not isinstance(record, dict) or not isinstance(record.get("eval"), dict):
                raise RunFileError(f"{path} is damaged (not an attempt record); {remedy}")
            out.append(cast(SavedAttempt, saved))
        return out


@contextlib.contextmanager
def _stream(attempt: int) -> Iterator[None]:
    """Attempt 0 samples as a run without attempts does; attempt k on its own seeded stream."""
    if not attempt:
        yield
        return
    with sampling_stream(attempt * ATTEMPT_STREAM):
        yield
