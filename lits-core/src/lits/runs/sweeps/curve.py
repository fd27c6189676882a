"""Anytime curves: from one search run, the answer it would have returned had it stopped after B iterations.

A search's journal holds every node with the iteration it was born in and every backed-up path in order, so
the tree as it stood after iteration B can be rebuilt: the nodes born by then, the first B paths backed up
(MCTS visits and Q), and for MCTS only the nodes those paths went through materialized (a node is
materialized on the path that first reaches it, so a node no path reached by B had no state yet).  The
search's own end-of-search selection (:meth:`BaseTreeSearch.result`) and the runner's record
(:func:`lits.runs.results.records.result_record`: the majority vote of language tasks, the dataset's evaluation) then
judge that tree, so a point of the curve is what a separate run with ``n_iterations=B`` (BFS:
``max_depth=B``) and the same seed returns, instance by instance, without paying for its model calls again.

Budgets in model calls, tokens or model seconds (the seconds calls took once they had a slot, not the wait
for one) map each instance to the last iteration whose calls (tagged ``iteration`` in the inference log) fit
in the budget.  Where equality with a separate run cannot hold (settings that read
the total budget, tree-parallel batches, time limits) is in ``docs/comparing-methods.md``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence, TypedDict

from lits.io import layout
from lits.agents.config import BFSConfig, MCTSConfig, TreeSearchConfig
from lits.agents.tree.base import BaseTreeSearch
from lits.agents.tree.journal import JournalError, TreeJournal
from lits.errors import UserError, one_line
from lits.runtime.observability import UNUSED_REPLY, InferenceLog
from lits.runs.results.paired import PairedComparison, compare_paired
from lits.structures.node import MCTSNode, SearchNode

BUDGETS = ("iterations", "calls", "tokens", "seconds")
#: Searches whose tree after B iterations can be rebuilt from the journal (born + backed-up paths).
CURVE_SEARCHES = ("mcts", "bfs")
#: Budget points when ``--points`` is not given: this many, evenly spaced up to the largest budget.
DEFAULT_POINTS = 10


class CurvePoint(TypedDict):
    """One budget point of one run: accuracy over the instances the point is known for."""

    budget: float
    instances: int
    solved: int
    accuracy: float | None
    #: This run against the first run given at the same budget (not in the first run's points).
    paired_with_first: PairedComparison | None


@dataclass
class RunCurve:
    """One run's anytime curve: its label, what each instance's answer was at each budget point."""

    save_dir: str
    method: str
    budget: str
    points: list[float]
    #: Per point: (dataset, instance id) -> solved; an instance the point is not known for is left out
    #: (a budget beyond what the run had).
    solved: list[dict[object, bool]] = field(default_factory=list)
    #: Per point: (dataset, instance id) -> the answer selected (language tasks) or None.
    answers: list[dict[object, str | None]] = field(default_factory=list)
    #: Per point: (dataset, instance id) -> the iteration whose tree answered.
    iterations: list[dict[object, int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        """The method and the run's folder (two runs of one method differ by their folders)."""
        return f"{self.method} ({Path(self.save_dir).name})"

    def rows(self, first: RunCurve | None = None) -> list[CurvePoint]:
        out: list[CurvePoint] = []
        for k, budget in enumerate(self.points):
            solved = self.solved[k]
            n = len(solved)
            paired = compare_paired(first.solved[k], solved) if first is not None and first is not self else None
            out.append(
                {
                    "budget": budget,
                    "instances": n,
                    "solved": sum(solved.values()),
                    "accuracy": round(sum(solved.values()) / n, 4) if n else None,
                    "paired_with_first": paired,
                }
            )
        return out


class SearchRun:
    """What a finished search run needs to be judged at any iteration: its agent, components and records."""

    def __init__(self, root: Path) -> None:
        from lits.components.factory import create_components
        from lits.runs.results.artifacts import RunDir, RunFileError
        from lits.runs.setup import agent_registration, make_config

        self.dir = RunDir(root)
        try:
            self.config = self.dir.read_config()
            self.results = self.dir.read_results("search")
        except FileNotFoundError:
            raise UserError(f"{root} is not a run directory ({layout.CONFIG} is missing)") from None
        except RunFileError as exc:
            raise UserError(str(exc)) from None
        if self.config.command != "search":
            raise UserError(f"{root} is a chain run; an anytime curve needs a search run (lits search)")
        if self.config.attempts > 1:
            raise UserError(f"{root} ran --attempts {self.config.attempts}; a curve reads a single-attempt run")
        if not self.results:
            raise UserError(f"{root} has no finished instances")
        self.components = create_components(
            self.config.dataset,
            None,
            transition=self.config.transition,
            resource_args=self.config.dataset_args,
            framework=self.config.search_framework,
        )
        settings = self.config.model_copy(update={"search_args": dict(self.config.search_args)})
        reg, values = agent_registration(settings, "search", self.components.task_type)
        self.search = str(settings.search)
        if self.search not in CURVE_SEARCHES:
            raise UserError(
                f"{root} ran --search {self.search}; anytime curves are rebuilt for {' and '.join(CURVE_SEARCHES)} runs"
            )
        config = make_config(reg, values, "search")
        if not isinstance(config, TreeSearchConfig):  # a registered search with a config of its own
            raise UserError(f"{root}: --search {self.search} has no tree-search settings to rebuild it with")
        self.agent_config: TreeSearchConfig = config
        self.agent_class: type[BaseTreeSearch] = reg.obj

    def key(self, record: Mapping[str, Any]) -> object:
        return (self.config.dataset, str(record.get("id", record.get("idx"))))

    def last_iteration(self, record: Mapping[str, Any]) -> int:
        return int(record.get("iterations") or 0)

    def known_at(self, record: Mapping[str, Any], iteration: int) -> bool:
        """Whether the run says what it would have answered after ``iteration``: it ran that far, or it ended
        sooner for a reason a longer budget does not change (a solution with early stop, an exhausted tree)."""
        if iteration <= self.last_iteration(record):
            return True
        return record.get("stopped") in ("solution", "exhausted")

    def judged_at(self, idx: int, record: Mapping[str, Any], iteration: int) -> tuple[bool, str | None]:
        """(solved, selected answer) of the search stopped after ``iteration``."""
        from lits.runs.results.records import result_record

        parts = self.components  # model-less: the tree is rebuilt from the journal, nothing is called
        agent = self.agent_class(self.agent_config, parts.policy, parts.transition, parts.reward_model)
        journal = self.dir.root / layout.CHECKPOINTS / layout.journal_name(idx)
        if not journal.is_file():
            raise UserError(f"{journal} is missing; the curve needs each instance's search journal")
        try:
            root = tree_at(TreeJournal(journal), agent, iteration)
        except (JournalError, KeyError, ValueError) as exc:
            raise UserError(f"{journal}: cannot rebuild the tree ({one_line(exc)})") from None
        agent.root, agent.iteration = root, min(iteration, self.last_iteration(record))
        example = {"query": record.get("query"), **(record.get("example") or {})}
        judged = result_record(idx, example, agent.result(), self.components, "search")
        selection = judged["answer_selection"] or {}
        answer = selection.get("answer")
        return bool(judged["eval"]["solved"]), answer if isinstance(answer, str) else None

    def spend_by_iteration(self, budget: str) -> dict[int, list[float]]:
        """Per instance: the calls, tokens or model seconds spent by the end of each iteration 0..last."""
        log = InferenceLog.read(self.dir.root / layout.INFERENCE_LOG)
        per: dict[tuple[int, int], float] = {}
        for rec in log.records:
            instance, tag = rec.context.get("instance"), rec.context.get("iteration")
            if not isinstance(instance, int):
                continue
            if budget == "calls":
                amount = 0.0 if rec.kind == UNUSED_REPLY else 1.0
            elif budget == "seconds":  # model time, as the run's totals count it (not an unused reply's)
                amount = 0.0 if rec.kind == UNUSED_REPLY or rec.cached else float(rec.seconds)
            else:
                amount = float(rec.tokens_in + rec.tokens_out)
            during = int(tag) + 1 if isinstance(tag, int) else 0  # iteration k (0-based) ends after k + 1
            per[instance, during] = per.get((instance, during), 0.0) + amount
        out: dict[int, list[float]] = {}
        for idx, record in self.results.items():
            total, spent = 0.0, []
            for iteration in range(self.last_iteration(record) + 1):
                total += per.get((idx, iteration), 0.0)
                spent.append(total)
            late = sum(v for (i, it), v in per.items() if i == idx and it > self.last_iteration(record))
            spent[-1] += late  # calls after the last counted iteration (the final bookkeeping) belong to it
            out[idx] = spent
        return out


def tree_at(journal: TreeJournal, agent: BaseTreeSearch, iteration: int) -> SearchNode:
    """The search tree as it stood after ``iteration`` iterations (BFS: depths).

    Nodes born later are cut off, only the first ``iteration`` backed-up paths are replayed, and an MCTS node
    no replayed path went through is put back as it was before its state was computed.
    """
    replayed_paths = 0

    def backup(path: list[SearchNode]) -> None:
        nonlocal replayed_paths
        replayed_paths += 1
        if replayed_paths <= iteration:
            agent.backup_values(path)

    replayed = journal.replay(backup)
    if replayed is None:
        raise ValueError("the journal is empty")
    root = replayed[0]
    stack = [root]
    while stack:
        node = stack.pop()
        node.children = [c for c in node.children if c.born <= iteration]
        if isinstance(node, MCTSNode) and node is not root and node.visits == 0:
            node.state, node.reward, node.reward_details, node.is_terminal = None, 0.0, {}, False
        stack.extend(node.children)
    return root


def run_curve(root: Path, budget: str, points: Sequence[float] | None = None) -> RunCurve:
    """One run's anytime curve at ``points`` of ``budget`` (default: evenly spaced up to the largest)."""
    from lits.runs.results.compare import method_label

    if budget not in BUDGETS:
        raise UserError(f"--budget must be one of {', '.join(BUDGETS)}, not {budget!r}")
    run = SearchRun(root)
    spent = run.spend_by_iteration(budget) if budget != "iterations" else {}
    if points is None:
        top = (
            max(run.last_iteration(r) for r in run.results.values())
            if budget == "iterations"
            else max(s[-1] for s in spent.values())
        )
        points = default_points(top, whole=budget != "seconds")
    curve = RunCurve(
        save_dir=str(root), method=method_label(run.config.as_config()), budget=budget, points=list(points)
    )
    cache: dict[tuple[int, int], tuple[bool, str | None]] = {}
    for point in curve.points:
        solved: dict[object, bool] = {}
        answers: dict[object, str | None] = {}
        reached: dict[object, int] = {}
        for idx, record in run.results.items():
            if budget == "iterations":
                iteration = int(point)
                if not run.known_at(record, iteration):
                    continue
            else:
                # beyond what the run spent, its final answer: a run capped at this spend stops there too
                iteration = max((b for b, s in enumerate(spent[idx]) if s <= point), default=0)
            iteration = min(iteration, run.last_iteration(record))
            if (idx, iteration) not in cache:
                cache[idx, iteration] = run.judged_at(idx, record, iteration)
            key = run.key(record)
            solved[key], answers[key] = cache[idx, iteration]
            reached[key] = iteration
        curve.solved.append(solved)
        curve.answers.append(answers)
        curve.iterations.append(reached)
    curve.notes = _notes(run)
    return curve


def default_points(top: float, *, whole: bool) -> list[float]:
    """Up to :data:`DEFAULT_POINTS` budgets evenly spaced in (0, top], the last one ``top``."""
    if top <= 0:
        return [0.0]
    count = min(DEFAULT_POINTS, int(top)) if whole else DEFAULT_POINTS
    return sorted({float(round(top * k / count, None if whole else 3)) for k in range(1, count + 1)})


def _notes(run: SearchRun) -> list[str]:
    """Settings under which a point is not what a separate run stopped there would return."""
    notes = []
    config = run.agent_config
    width = config.parallel_iterations if isinstance(config, MCTSConfig) else 1
    if width > 1:
        notes.append(f"parallel_iterations={width}: a point equals a separate run only at multiples of {width}")
    if run.agent_config.runtime_limit:
        notes.append("runtime_limit: a separate run's clock may stop it at another iteration")
    if config.add_continuation:
        notes.append("add_continuation: reopened dead ends are not rebuilt; points before the last are approximate")
    if isinstance(config, BFSConfig) and not config.score_last_depth:
        notes.append("score_last_depth=false: a separate run leaves its own last depth unscored; points may differ")
    return notes


def curves(save_dirs: Sequence[Path], budget: str, points: Sequence[float] | None = None) -> list[RunCurve]:
    """Each run's curve at the same points (the first run's defaults when ``points`` is not given)."""
    out: list[RunCurve] = []
    for root in save_dirs:
        out.append(run_curve(Path(root), budget, points if points is not None or not out else out[0].points))
    return out


def parse_points(text: str) -> list[float]:
    """``--points 10,20,50``: positive budgets, ascending."""
    try:
        values = sorted({float(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise UserError(f"--points takes numbers separated by commas (e.g. 10,20,50), not {text!r}") from None
    if not values or values[0] < 0:
        raise UserError(f"--points takes budgets of 0 or more (e.g. 10,20,50), not {text!r}")
    return values


def curve_rows(runs: Sequence[RunCurve]) -> list[dict[str, Any]]:
    """The curves as JSON rows: per run, its points with accuracy and the paired comparison to the first."""
    return [
        {
            "method": c.method,
            "save_dir": c.save_dir,
            "budget": c.budget,
            "notes": c.notes,
            "points": [dict(p) for p in c.rows(runs[0] if k else None)],
        }
        for k, c in enumerate(runs)
    ]


def format_curves(runs: Sequence[RunCurve]) -> str:
    """A table: one row per budget point, a column per run (accuracy, and the paired difference to the first)."""
    from lits.runs.results.paired import describe

    first = runs[0]
    header = [first.budget, *(f"[{k}] {c.label}" for k, c in enumerate(runs))]
    table = [c.rows(first if k else None) for k, c in enumerate(runs)]
    body = []
    for i, budget in enumerate(first.points):
        cells = [_number(budget)]
        for rows in table:
            point = rows[i]
            cells.append(
                "-"
                if point["accuracy"] is None
                else f"{point['accuracy']:.1%} ({point['solved']}/{point['instances']})"
            )
        body.append(cells)
    widths = [max(len(x) for x in col) for col in zip(header, *body)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header, *body]]
    for k, rows in enumerate(table[1:], start=1):
        for budget, point in zip(first.points, rows):
            paired = point["paired_with_first"]
            if paired is not None and paired["shared"]:
                lines.append(f"{first.budget} {_number(budget)}: " + describe("[0]", f"[{k}]", paired))
    for k, c in enumerate(runs):
        lines += [f"note [{k}]: {note}" for note in c.notes]
    return "\n".join(lines)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def dump(runs: Sequence[RunCurve]) -> str:
    return json.dumps(curve_rows(runs), indent=1)
