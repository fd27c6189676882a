"""A finished run read back for export: each instance's tree, its terminal nodes graded, Monte-Carlo values.

The tree comes from the search's journal through :meth:`TreeJournal.replay` (the states the search built, so
the policy's prompt can be rendered for any node); a chain's result is one path.  A terminal node is graded
against the gold answer with the dataset's own evaluation (:func:`~lits.runs.results.records.evaluate_instance`),
the one ``lits eval`` uses; the gold itself is never written into a row.

A node's Monte-Carlo value is the share of outcomes under it that are correct.  What counts as an outcome:

* ``rollouts``: each path the search backed up (MCTS: one per iteration) passes through the nodes on it; it
  is correct when it ends at a terminal node whose answer is correct (a rollout that stopped elsewhere, at
  the depth limit or the time limit, counts as not correct).  A node's count is its visits.
* ``terminals``: each terminal node under the node (itself included) is one outcome (BFS, beam search:
  searches that back nothing up).

``auto`` takes ``rollouts`` when the journal holds backed-up paths, else ``terminals``.  A node with no
outcome under it has no value.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lits.io import layout
from lits.components.factory import Components
from lits.errors import UserError, one_line
from lits.runs.results.artifacts import RunDir, RunFileError
from lits.runs.results.records import ResultRecord, evaluate_instance
from lits.runs.record import RunRecord
from lits.structures.base import TrajectoryState
from lits.structures.node import SearchNode
from lits.type_registry import deserialize

ValueSource = Literal["auto", "rollouts", "terminals"]


@dataclass(frozen=True)
class NodeValue:
    """Outcomes under a node and how many were correct: the Monte-Carlo value is their ratio."""

    outcomes: int
    correct: int

    @property
    def value(self) -> float:
        return self.correct / self.outcomes if self.outcomes else 0.0


@dataclass
class InstanceTree:
    """One finished instance: its tree (a chain's steps as a path), graded terminals and node values."""

    idx: int
    id: str
    query: object
    solved: bool
    root: SearchNode
    #: The path the agent chose (root first).
    selected: list[SearchNode]
    #: Terminal node id -> whether its answer (or reached state) is correct.
    correct: dict[int, bool] = field(default_factory=dict)
    values: dict[int, NodeValue] = field(default_factory=dict)
    source: str = "terminals"
    #: The backed-up paths (root to leaf), in the order the search backed them up.
    rollouts: list[list[SearchNode]] = field(default_factory=list)

    def nodes(self) -> list[SearchNode]:
        return sorted(self.root.iter_tree(), key=lambda n: n.id)


@dataclass
class RunTrees:
    """A run's settings, its components (to render prompts and grade answers) and its finished instances."""

    root: Path
    config: RunRecord
    components: Components
    instances: list[InstanceTree]
    #: Instances with a journal or checkpoint but no result (left out: the gold lives in the result).
    unfinished: int = 0
    #: Prompts the policy could not render, written as the problem and the steps so far instead.
    fallback_prompts: int = 0
    #: Finished instances whose example carries a gold answer.
    with_gold: int = 0

    @property
    def command(self) -> str:
        return self.config.command


def read_finished(root: Path) -> tuple[RunDir, RunRecord, str, dict[int, ResultRecord]]:
    """A run's directory, settings, command and finished results; a missing or damaged file is a
    :class:`UserError` in one line."""
    run_dir = RunDir(root)
    try:
        config = run_dir.read_config()
        return run_dir, config, config.command, run_dir.read_results(config.command)
    except (FileNotFoundError, RunFileError) as exc:
        raise UserError(str(exc)) from None


def read_run(root: Path, source: ValueSource = "auto") -> RunTrees:
    """The run at ``root`` for export (:class:`UserError` in one line for anything that is not one)."""
    run_dir, config, command, results = read_finished(root)
    unfinished = len(_started(root) - set(results))
    if not results:
        hint = f"; finish it first: {run_dir.resume_hint(command)}" if unfinished else ""
        raise UserError(f"{root} has no finished instances to export{hint}")
    components = components_of(config)
    instances = []
    for idx, record in results.items():
        if command == "chain":
            tree = _chain_instance(idx, record)
        else:
            tree = _search_instance(root, idx, record)
        if tree is None:
            continue
        example = {"query": record.get("query"), **(record.get("example") or {})}
        tree.correct = grade_terminals(tree, components, example)
        tree.values, tree.source = node_values(tree, source)
        instances.append(tree)
    with_gold = sum((record.get("example") or {}).get("answer") not in (None, "") for record in results.values())
    return RunTrees(Path(root), config, components, instances, unfinished, with_gold=with_gold)


def components_of(config: RunRecord) -> Components:
    """The run's policy, transition and reward, built from its settings as the run built them (its search's
    or chain's settings included: a chain-of-thought policy cues the final answer at the depth limit), with
    no model: nothing is called."""
    from lits.registry import infer_task_type
    from lits.runs.setup import agent_registration, build_components, make_config

    settings = config.model_copy(deep=True)
    mode, dataset = settings.command, settings.dataset
    try:
        task_type = infer_task_type(str(dataset))
        registration, args = agent_registration(settings, mode, task_type)
        agent_config = make_config(registration, args, mode)
        return build_components(
            settings, dict.fromkeys(("policy", "eval", "transition", "bn")), agent_config, task_type
        )
    except UserError:
        raise
    except Exception as exc:
        raise UserError(
            f"cannot rebuild the run's components for {dataset!r} ({one_line(exc)}); is the run's plugin installed?"
        ) from None


def _started(root: Path) -> set[int]:
    folder = root / layout.CHECKPOINTS
    found: set[int] = set()
    for path in folder.glob("*.json*") if folder.is_dir() else []:
        stem = path.name.split(".", 1)[0]
        if stem.isdigit():
            found.add(int(stem))
    return found


def _search_instance(root: Path, idx: int, record: ResultRecord) -> InstanceTree | None:
    """The instance's tree from its journal (of the last attempt), replayed read-only: a copy is replayed, so
    the run's files are never changed."""
    from lits.agents.tree.journal import JournalError, TreeJournal

    last = len(record.get("attempts") or [None]) - 1
    journal = root / layout.attempt_checkpoints(last) / layout.journal_name(idx)
    if not journal.is_file():
        return None  # deleted after the run: only the chosen path survives, which has no siblings to label
    rollouts: list[list[SearchNode]] = []
    with tempfile.TemporaryDirectory(prefix="lits-export-") as tmp:
        copy = Path(tmp) / journal.name
        shutil.copyfile(journal, copy)
        try:
            replayed = TreeJournal(copy).replay(backup=rollouts.append)
        except (JournalError, KeyError, ValueError, TypeError) as exc:
            raise UserError(f"{journal}: cannot read the search tree ({exc})") from None
    if replayed is None:
        return None
    tree_root, _ = replayed
    by_id = {n.id: n for n in tree_root.iter_tree()}
    chosen = [
        by_id[int(n["id"])]
        for n in _read_list(root / layout.path(idx))
        if isinstance(n, dict) and int(n.get("id", -1)) in by_id
    ]
    for listed in _read_list(root / layout.terminal_nodes(idx)):
        node = by_id.get(int(listed.get("id", -1))) if isinstance(listed, dict) else None
        if node is not None:
            node.is_terminal = True
    tree = InstanceTree(
        idx,
        str(record.get("id", idx)),
        record.get("query"),
        bool((record.get("eval") or {}).get("solved")),
        tree_root,
        chosen or [tree_root],
    )
    tree.rollouts = rollouts
    return tree


def _chain_instance(idx: int, record: ResultRecord) -> InstanceTree | None:
    """A chain's steps as a path of nodes: the empty state, then one node per step (a chain is one rollout)."""
    try:
        final = deserialize(record["final_state"])
    except (KeyError, ValueError, TypeError):
        return None
    if not isinstance(final, TrajectoryState):
        return None
    steps = list(final)
    start = final.copy()
    list.clear(start)
    root = SearchNode(id=0, state=start)
    node = root
    for k, step in enumerate(steps, start=1):
        state = start.copy()
        list.extend(state, steps[:k])
        node = node.add_child(SearchNode(id=k, step=step, action=getattr(step, "action", None), state=state))
    node.is_terminal = node is not root
    tree = InstanceTree(
        idx,
        str(record.get("id", idx)),
        record.get("query"),
        bool((record.get("eval") or {}).get("solved")),
        root,
        node.path(),
    )
    tree.rollouts = [node.path()] if node is not root else []
    return tree


def _read_list(path: Path) -> list[Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return data if isinstance(data, list) else []


def grade_terminals(tree: InstanceTree, components: Components, example: dict[str, Any]) -> dict[int, bool]:
    """Each terminal node judged by the dataset's own evaluation against the example's gold."""
    out: dict[int, bool] = {}
    for node in tree.nodes():
        if node.is_terminal and node.state is not None:
            out[node.id] = bool(evaluate_instance(components, example, node.state)["solved"])
    return out


def node_values(tree: InstanceTree, source: ValueSource = "auto") -> tuple[dict[int, NodeValue], str]:
    """Each node's outcomes and correct outcomes (see the module docstring), and the source used."""
    rollouts = tree.rollouts
    use = source if source != "auto" else ("rollouts" if rollouts else "terminals")
    counts: dict[int, list[int]] = {}
    if use == "rollouts":
        for path in rollouts:
            good = int(tree.correct.get(path[-1].id, False))
            for node in path:
                tally = counts.setdefault(node.id, [0, 0])
                tally[0] += 1
                tally[1] += good
    else:
        by_id = {n.id: n for n in tree.root.iter_tree()}
        for node_id, good in tree.correct.items():
            above: SearchNode | None = by_id.get(node_id)
            while above is not None:
                tally = counts.setdefault(above.id, [0, 0])
                tally[0] += 1
                tally[1] += int(good)
                above = above.parent
    return {i: NodeValue(n, c) for i, (n, c) in counts.items()}, use
