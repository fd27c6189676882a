"""What :func:`lits.run` returns: the run's outcome per instance, its cost, and its trees, read from its save dir."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from lits.io import layout

if TYPE_CHECKING:
    import pandas

    from lits.runs.record import RunRecord
    from lits.runs.results.evaluation import Summary
    from lits.runs.results.records import ResultRecord
    from lits.runs.results.tree import InstanceTree


@dataclass(frozen=True)
class InstanceOutcome:
    """One selected instance: solved or not, its answer, or why it did not finish."""

    idx: int
    id: str
    query: object
    finished: bool
    solved: bool | None
    answer: str | None
    error: str | None = None
    #: The instance's result record (:class:`~lits.runs.results.records.ResultRecord`); empty when it did not finish.
    record: Mapping[str, object] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class RunResult:
    """A finished (or stopped) run; every figure also lives in its save dir."""

    save_dir: Path
    command: str
    dataset: str
    summary: Summary
    instances: list[InstanceOutcome]
    #: What the run recorded in config.json, read back.
    config: RunRecord = field(repr=False)
    stopped: str | None = None

    @property
    def solved(self) -> int:
        return sum(bool(i.solved) for i in self.instances)

    @property
    def accuracy(self) -> float | None:
        """Solved over finished instances (None when none finished)."""
        value = self.summary.get("accuracy")
        return float(value) if value is not None else None

    @property
    def failed(self) -> dict[int, str]:
        return {i.idx: i.error for i in self.instances if i.error is not None}

    @property
    def cost(self) -> dict[str, float]:
        """Calls, cache hits, tokens, model seconds and money over the whole run."""
        return dict(self.summary.get("inference") or {})

    def tree(self, idx: int) -> InstanceTree | None:
        """Instance ``idx``'s search tree (nodes with visits, values, the chosen path), as ``lits view`` draws it;
        a chain's steps as a path."""
        from lits.runs.results.tree import instance_tree

        record = next((i.record for i in self.instances if i.idx == idx), None)
        return instance_tree(self.save_dir, idx, self.command, self.config, record or None)

    def to_pandas(self) -> pandas.DataFrame:
        """One row per instance (needs pandas)."""
        from lits.runtime.extras import require

        pd = require("pandas", install="pandas", what="RunResult.to_pandas")
        return pd.DataFrame(
            [
                {
                    "idx": i.idx,
                    "id": i.id,
                    "query": i.query,
                    "finished": i.finished,
                    "solved": i.solved,
                    "answer": i.answer,
                    "error": i.error,
                }
                for i in self.instances
            ]
        )

    def _repr_html_(self) -> str:
        """A summary table in Jupyter."""
        rows = "".join(
            f"<tr><td>{i.idx}</td><td>{_cell(i.query)}</td><td>{_status(i)}</td><td>{_cell(i.answer)}</td></tr>"
            for i in self.instances
        )
        accuracy = "n/a" if self.accuracy is None else f"{self.accuracy:.1%}"
        cost = self.cost
        return (
            f"<div><b>{html.escape(self.command)} {html.escape(self.dataset)}</b>: solved {self.solved} of "
            f"{len(self.instances)} ({accuracy}), {cost.get('calls', 0)} calls, "
            f"{cost.get('tokens_in', 0)} / {cost.get('tokens_out', 0)} tokens; "
            f"<code>{html.escape(str(self.save_dir))}</code>"
            f"<table><tr><th>idx</th><th>query</th><th>outcome</th><th>answer</th></tr>{rows}</table></div>"
        )

    def __str__(self) -> str:
        accuracy = "n/a" if self.accuracy is None else f"{self.accuracy:.1%}"
        return (
            f"{self.command} {self.dataset}: solved {self.solved} of {len(self.instances)} ({accuracy}) "
            f"-> {self.save_dir}"
        )


def read_result(save_dir: Path, selected: list[int], failed: dict[int, str], stopped: str | None) -> RunResult:
    """The result of the run in ``save_dir`` for the ``selected`` instances."""
    from lits.runs.results.artifacts import RunDir

    run_dir = RunDir(save_dir)
    config = run_dir.read_config()
    command = config.command
    results = run_dir.read_results(command)
    summary = json.loads((save_dir / layout.SUMMARY).read_text(encoding="utf-8"))
    instances = [_outcome(idx, results.get(idx), failed.get(idx)) for idx in selected]
    return RunResult(save_dir, command, config.dataset, summary, instances, config, stopped)


def _outcome(idx: int, record: ResultRecord | None, error: str | None) -> InstanceOutcome:
    if record is None:
        return InstanceOutcome(idx, str(idx), None, False, None, None, error or "not finished")
    evaluation: Mapping[str, object] = record.get("eval") or {}
    solved = evaluation.get("solved")
    answer = evaluation.get("answer")
    plan = evaluation.get("plan")
    if answer is None and isinstance(plan, list) and plan:
        answer = "; ".join(str(step) for step in plan)
    return InstanceOutcome(
        idx,
        str(record.get("id", idx)),
        record.get("query"),
        True,
        None if solved is None else bool(solved),
        None if answer is None else str(answer),
        None,
        record,
    )


def _status(outcome: InstanceOutcome) -> str:
    if not outcome.finished:
        return f"not finished: {_cell(outcome.error)}"
    return {True: "solved", False: "not solved", None: "finished"}[outcome.solved]


def _cell(value: object, limit: int = 120) -> str:
    text = "" if value is None else str(value)
    return html.escape(text if len(text) <= limit else text[: limit - 1] + "…")
