"""``BaseTreeSearch``: everything around a search algorithm but the algorithm.

It owns node ids, the root, the checkpoints (save and resume, through a
:class:`~lits.agents.tree.recorder.TreeRecorder`), the runtime limit,
terminal-node collection and the call tags (instance, phase, depth,
iteration) that the inference log records.  A subclass implements only
:meth:`search`.

Node ids, child order and tie-breaks depend on the tree alone, never on
thread timing: children are attached in the order the policy proposed them,
and work done concurrently (BFS frontiers, tree-parallel rollouts) is
numbered afterwards in a fixed order (:meth:`numbered`).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence, TypeVar

from lits.io import layout
from lits.agents.config import TreeSearchConfig
from lits.agents.tree.recorder import TreeRecorder
from lits.runtime.concurrency import parallel_map
from lits.lm.base import LanguageModel
from lits.runtime.observability import call_context
from lits.components import parsing
from lits.components.base import Policy, RewardModel, Transition, accepts_exclude
from lits.structures.base import Step, step_key
from lits.structures.env_grounded import EnvState
from lits.structures.node import SearchNode

N = TypeVar("N", bound=SearchNode)
T = TypeVar("T")
R = TypeVar("R")

#: Nodes created inside :meth:`BaseTreeSearch.numbered` go to this list instead of taking ids.
_PENDING: contextvars.ContextVar[list[SearchNode] | None] = contextvars.ContextVar("lits_pending_nodes", default=None)
#: The iteration a concurrent rollout works for (call tags), when it differs from ``self.iteration``.
_ITERATION: contextvars.ContextVar[int | None] = contextvars.ContextVar("lits_iteration", default=None)
_PROVISIONAL = 1 << 40  # provisional ids sort after every real one, in creation order


@dataclass
class SearchResult:
    root: SearchNode
    terminal_nodes: list[SearchNode]
    best_path: list[SearchNode]
    best_state: Any
    solved: bool
    iterations: int
    stopped: str
    stats: dict[str, Any] = field(default_factory=dict)
    #: The policy's sampled proposals ``(action, duplicate)``, across resumes.
    proposals: list[tuple[str, bool]] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        def flat(node: SearchNode) -> dict[str, object]:
            return node.to_flat_dict()

        return {
            "solved": self.solved,
            "iterations": self.iterations,
            "stopped": self.stopped,
            "stats": self.stats,
            "best_path": [flat(n) for n in self.best_path],
            "terminal_nodes": [flat(n) for n in self.terminal_nodes],
        }


#: How many times a sibling-aware expansion asks again for the children it is missing.
SIBLING_ROUNDS = 2
#: Each round asks this much hotter (up to SIBLING_MAX_TEMPERATURE): shown its siblings and told to write
#: another, a small greedy model still wrote the same step 18 times in 28 (GSM8K, temperature 0).
SIBLING_TEMPERATURE_STEP = 0.4
SIBLING_MAX_TEMPERATURE = 1.0


def distinct_actions(steps: Sequence[Step]) -> list[str]:
    """The steps' actions as text, without repeats or error steps, in order."""
    out: list[str] = []
    for step in steps:
        if step.error:
            continue
        text = str(step.get_action())
        if text and text not in out:
            out.append(text)
    return out


class BaseTreeSearch(ABC):
    """The base of every tree search: a subclass writes the algorithm, this class everything around it.

    A search author's surface (everything else is underscored and may change):

    - Override: :meth:`search` (required), and if the algorithm needs to, :meth:`stop_reason`,
      :meth:`best_path`, :meth:`backup_values`.
    - Grow the tree: :meth:`expand` (or :meth:`propose`, :meth:`sample`, :meth:`attach`,
      :meth:`score_children` for a frontier), :meth:`materialize`, :meth:`materialize_all`,
      :meth:`new_node`, :meth:`numbered`, :meth:`mark`, :meth:`backup`.
    - Keep it resumable, tagged and within its grant: :meth:`save_checkpoint`, :meth:`out_of_time`,
      :meth:`iteration_limit` (a run's ``--budget``), :meth:`phase`, :meth:`working_on`.
    - Read it: :meth:`first_solution`, :meth:`terminal_nodes`, :meth:`path_reward`; the fields ``config``,
      ``root``, ``iteration``, ``query``, ``query_idx``, ``stats``, ``policy``, ``transition``, ``reward_model``.
    - The runner's: :meth:`run` (one instance, resumed from its journal) and :meth:`result`.
    """

    NODE_CLASS: type[SearchNode] = SearchNode
    #: The name the inference log tags calls with; empty: the class name in lower case.
    search_name: str = ""

    def __init__(
        self,
        config: TreeSearchConfig,
        policy: Policy[Any, Any],
        transition: Transition[Any, Any],
        reward_model: RewardModel[Any, Any],
        *,
        checkpoint_dir: Path | None = None,
        name: str = "",
        bn_model: LanguageModel | None = None,
        granted: Mapping[int, int] | None = None,
    ) -> None:
        """``name``: what the inference log tags calls with (the name it is registered under; default
        :attr:`search_name`); ``bn_model``: the branching-necessity evaluator's model (``--bn-model``);
        ``granted``: a budgeted run's grants (see :attr:`granted`)."""
        self.config = config
        self.policy = policy
        self.transition = transition
        self.reward_model = reward_model
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir else None
        self.search_name = name or self.search_name
        self.root: SearchNode = self.NODE_CLASS()
        self.query: object = None
        self.query_idx = 0
        self.iteration = 0  # completed iterations (or depths)
        self.stats: dict[str, Any] = {"nodes": 1, "expansions": 0, "duplicates": 0, "proposed": 0}
        self._next_id = 1
        self._deadline: float | None = None
        self._solutions: list[SearchNode] = []  # kept as found: no tree walk per iteration
        self._lock = threading.Lock()
        #: What changed since the last checkpoint, and the instance's journal (none without checkpoint_dir).
        self.recorder = TreeRecorder()
        self._provisional = _PROVISIONAL
        self.proposals: list[tuple[str, bool]] = []  # journaled, so a resume keeps them
        #: The branching-necessity evaluator's model (``--bn-model``); None: the policy's.
        self.bn_model = bn_model
        #: Under a run's compute budget (``--budget``, :mod:`lits.runs.sweeps.search_budget`): per instance, the
        #: iterations (BFS: depths) it may reach now; the search's own limit stays what it tells the components.
        self.granted = granted

    # -- the algorithm -----------------------------------------------------
    @abstractmethod
    def search(self, query: object, query_idx: int) -> None:
        """Grow ``self.root``; read ``self.iteration`` to continue after a resume."""

    def iteration_limit(self, limit: int) -> int:
        """The search's own ``limit`` (``n_iterations``, BFS's ``max_depth``), or less while a run's budget granted
        this instance less: the search stops there and a later grant continues it from its journal."""
        if self.granted is None or self.query_idx not in self.granted:
            return limit
        return min(limit, self.granted[self.query_idx])

    def stop_reason(self) -> str:
        """Why :meth:`search` returned (subclasses may refine)."""
        if self.first_solution() is not None and self.config.early_stop:
            return "solution"
        if self.out_of_time():
            return "time"
        return "budget"

    # -- running -----------------------------------------------------------
    def run(
        self, query: object, query_idx: int, example: Mapping[str, object], *, resume: bool = False
    ) -> SearchResult:
        """Search one instance (continuing its journal when ``resume``); the tree ends compacted on disk."""
        self.query, self.query_idx = query, query_idx
        limit = self.config.runtime_limit
        self._deadline = time.monotonic() + limit if limit else None
        if self.checkpoint_dir is not None:
            self.recorder.open(self.checkpoint_dir / layout.journal_name(query_idx))
        name = self.search_name or type(self).__name__.lower()
        try:
            with call_context(instance=query_idx, search=name):
                if not (resume and self._load_checkpoint()):
                    self.recorder.forget_earlier_run()
                    self.root = self.NODE_CLASS(id=0, state=self.transition.init_state(**example))
                    self.mark(self.root)
                self.search(query, query_idx)
            if self.recorder.active:
                self.save_checkpoint(self.iteration, force=True)  # the last changes and proposals
                self.recorder.compact()
            self.proposals.extend(self._take_proposals())
        finally:
            self.recorder.close()
        return self.result()

    def result(self) -> SearchResult:
        """Terminal nodes, the best path and the statistics (one walk of the tree, at the end)."""
        states = [n.state for n in self.root.iter_tree() if n.state is not None]
        unique = {str(s.env_state if isinstance(s, EnvState) and s.env_state else s.to_dict()) for s in states}
        self.stats["unique_states"] = len(unique)
        self.stats["policy_calls_per_state"] = round(self.stats["expansions"] / max(1, len(unique)), 2)
        terminals = self.terminal_nodes()
        path = self.best_path()
        leaf = path[-1]
        return SearchResult(
            root=self.root,
            terminal_nodes=terminals,
            best_path=path,
            best_state=leaf.state if leaf.state is not None else self.root.state,
            solved=bool(leaf.is_terminal),
            iterations=self.iteration,
            stopped=self.stop_reason(),
            stats=dict(self.stats),
            proposals=sorted(self.proposals),
        )

    # -- helpers for subclasses ----------------------------------------------
    def new_node(self, cls: type[N] | None = None, **fields: Any) -> N:
        """A node with the next id (inside :meth:`numbered`, an id given when its task is numbered)."""
        pending = _PENDING.get()
        with self._lock:
            if pending is None:
                node_id, self._next_id = self._next_id, self._next_id + 1
            else:
                node_id, self._provisional = self._provisional, self._provisional + 1
            self.stats["nodes"] += 1
        if "born" not in fields:  # during iteration k (0-based) a node exists after k + 1 iterations
            working = _ITERATION.get()
            fields["born"] = (self.iteration if working is None else working) + 1
        node = (cls or self.NODE_CLASS)(id=node_id, **fields)
        if pending is not None:
            pending.append(node)
        return node  # type: ignore[return-value]

    def numbered(self, tasks: Sequence[T], fn: Callable[[T], R]) -> list[R]:
        """``parallel_map(fn, tasks)``, numbering the nodes each task creates afterwards.

        Ids follow task order, then creation order within a task, so the tree
        is the same whichever thread finished first.
        """
        created: list[list[SearchNode]] = [[] for _ in tasks]

        def run(i: int) -> R:
            token = _PENDING.set(created[i])
            try:
                return fn(tasks[i])
            finally:
                _PENDING.reset(token)

        results = parallel_map(run, range(len(tasks)))
        with self._lock:
            for nodes in created:
                for node in nodes:
                    node.id, self._next_id = self._next_id, self._next_id + 1
        return results

    def mark(self, node: SearchNode) -> None:
        """Record that ``node`` was created or changed (it goes into the next checkpoint)."""
        self.recorder.mark(node)

    def backup(self, path: list[SearchNode]) -> None:
        """Back values up along ``path`` (root to leaf) and journal it: one id per backup."""
        self.backup_values(path)
        self.recorder.backed_up(path[-1])

    def backup_values(self, path: list[SearchNode]) -> object:
        """The algorithm's backup (MCTS: visits and returns); replayed from the journal on resume."""
        raise NotImplementedError(f"{type(self).__name__} does not back values up along paths")

    def out_of_time(self) -> bool:
        """True once ``runtime_limit`` seconds have passed for this instance."""
        return self._deadline is not None and time.monotonic() >= self._deadline

    def phase(self, name: str, **tags: object) -> call_context:
        """Tag the model calls made inside (phase, depth, iteration) for the inference log."""
        # a plain context manager, not a generator: a search enters a score of these per iteration
        if "iteration" in tags and _ITERATION.get() is not None:
            tags["iteration"] = _ITERATION.get()
        return call_context(phase=name, **tags)

    @contextlib.contextmanager
    def working_on(self, iteration: int) -> Iterator[None]:
        """Tag the calls made inside with ``iteration`` (a rollout of a tree-parallel batch)."""
        token = _ITERATION.set(iteration)
        try:
            yield
        finally:
            _ITERATION.reset(token)

    def expand(self, node: SearchNode, phase: str = "expand") -> list[SearchNode]:
        """Ask the policy for children of ``node`` and score them (fast rewards, one fan-out)."""
        if node.children or node.is_terminal:
            return node.children
        self.materialize(node)
        if node.is_terminal or node.depth >= self.config.max_depth:
            return []
        self.attach(node, self.propose(node, phase))
        self.score_children([node], phase)
        return node.children

    def propose(self, node: SearchNode, phase: str = "expand") -> list[Step]:
        """The policy's candidate steps for ``node`` (model calls; safe to run concurrently).

        With ``add_continuation`` a branching-necessity evaluator first decides whether ``node`` needs more
        than one child (:mod:`lits.agents.tree.continuation`).
        """
        if self.config.add_continuation:
            from lits.agents.tree import continuation

            return continuation.propose(self, node, phase)
        with self.phase(phase, depth=node.depth, iteration=self.iteration):
            return self.sample(node, self.config.n_actions, phase)

    def sample(
        self,
        node: SearchNode,
        n: int,
        phase: str = "expand",
        *,
        count: bool = True,
        temperature: float | None = None,
        greedy_first: bool | None = None,
        exclude: Sequence[str] = (),
    ) -> list[Step]:
        """``n`` steps from the policy for ``node`` (counted as an expansion unless ``count`` is false).

        ``temperature`` overrides the search's (the BN evaluator samples at its own).
        With ``greedy_first`` (default: the search's) the first step is decoded at temperature 0 (the step a
        greedy chain takes). ``exclude``: actions the node has already, asked not to be proposed again (when
        the policy takes ``exclude``).
        With ``sibling_aware``, a node that got fewer distinct steps than ``n`` asks again (at most
        :data:`SIBLING_ROUNDS` times, each hotter) for the missing ones, passing the steps it has as ``exclude``.
        """
        # Passed only when set: a policy written before the option existed need not take it.
        whole = {"whole_solution": True} if self.config.whole_solution else {}
        temperature = self.config.temperature if temperature is None else temperature
        if greedy_first is None:
            greedy_first = self.config.greedy_first
        greedy = 1 if greedy_first and temperature > 0 else 0
        told: dict[str, Any] = {"exclude": list(exclude)} if exclude and accepts_exclude(self.policy) else {}
        steps: list[Step] = []
        for k, temp in ((greedy, 0.0), (n - greedy, temperature)):
            if k:
                steps += self.policy.get_actions(
                    node.state,
                    n_actions=k,
                    temperature=temp,
                    query=self.query,
                    query_idx=self.query_idx,
                    from_phase=phase,
                    **whole,
                    **told,
                )
        if self.config.sibling_aware and accepts_exclude(self.policy):
            for round_ in range(1, SIBLING_ROUNDS + 1):
                if len({step_key(s) for s in steps if not s.error}) >= n:
                    break
                have = distinct_actions(steps)
                step_up = SIBLING_TEMPERATURE_STEP * round_
                hotter = max(temperature, min(SIBLING_MAX_TEMPERATURE, temperature + step_up))
                more = list(
                    self.policy.get_actions(
                        node.state,
                        n_actions=n - len(have),
                        temperature=hotter,
                        query=self.query,
                        query_idx=self.query_idx,
                        from_phase=phase,
                        exclude=[*exclude, *have],
                        **whole,
                    )
                )
                if not distinct_actions(more):
                    break
                steps += more
        with self._lock:
            if count:
                self.stats["expansions"] += 1
            self.stats["proposed"] = self.stats.get("proposed", 0) + len(steps)  # a journal may predate it
        return steps

    def attach(self, node: SearchNode, steps: list[Step]) -> list[SearchNode]:
        """Add one child per distinct step, in the policy's order."""
        seen: set[str] = set()
        for step in steps:
            key = step_key(step)
            if key in seen:
                with self._lock:
                    self.stats["duplicates"] += 1
                continue
            seen.add(key)
            node.add_child(self.new_node(action=step.get_action(), step=step))
        return node.children

    def score_children(self, parents: list[SearchNode], phase: str = "expand") -> None:
        """Fast rewards of every child of ``parents``, as few model rounds as the reward model allows."""
        groups = [p for p in parents if p.children]
        if self.config.add_continuation:
            from lits.agents.tree import continuation

            groups = continuation.inherit_scores(self, groups)

        def score(parent: SearchNode) -> None:
            actions = [c.action for c in parent.children]
            steps = [c.step for c in parent.children]
            with self.phase(phase, depth=parent.depth, iteration=self.iteration):
                scores = self.reward_model.fast_rewards(
                    parent.state, actions, self.query, self.query_idx, from_phase=phase, steps=steps
                )
            for child, (value, details) in zip(parent.children, scores):
                child.fast_reward, child.fast_reward_details = value, details
                self.mark(child)

        parallel_map(score, groups)

    def materialize(self, node: SearchNode, phase: str = "expand") -> None:
        """Compute ``node.state`` with the transition, then its reward and terminal flag."""
        if node.state is not None or node.parent is None:
            if node.parent is None and node.state is not None:
                terminal = bool(self.transition.is_terminal(node.state, query_or_goals=self.query))
                if terminal != node.is_terminal:
                    node.is_terminal = terminal
                    self.mark(node)
                if node.is_terminal and node not in self._solutions:
                    self._solutions.append(node)
            return
        parent = node.parent
        self.materialize(parent, phase)
        with self.phase(phase, depth=node.depth, iteration=self.iteration):
            step_or_action = node.step if node.step is not None else node.action
            node.state, aux = self.transition.step(
                parent.state, step_or_action, self.query, self.query_idx, from_phase=phase
            )
            extra = {k: v for k, v in aux.items() if k not in ("fast_reward",)}
            node.reward, node.reward_details = self.reward_model.reward(
                parent.state, node.action, fast_reward=node.fast_reward, **extra
            )
            node.is_terminal = bool(self.transition.is_terminal(node.state, query_or_goals=self.query))
            self.mark(node)
            if node.is_terminal:
                with self._lock:
                    self._solutions.append(node)

    def materialize_all(self, nodes: list[SearchNode], phase: str = "expand") -> None:
        """:meth:`materialize` each node, concurrently."""
        parallel_map(lambda n: self.materialize(n, phase), nodes)

    def terminal_nodes(self) -> list[SearchNode]:
        """Every terminal node of the tree, in tree order."""
        return [n for n in self.root.iter_tree() if n.is_terminal]

    def first_solution(self) -> SearchNode | None:
        """The solution with the lowest id (found first in tree order, whatever the thread timing)."""
        return min(self._solutions, key=lambda n: n.id) if self._solutions else None

    def path_reward(self, node: SearchNode) -> float:
        """Sum of the rewards from the root to ``node``."""
        return sum(n.reward for n in node.path()[1:])

    def best_path(self) -> list[SearchNode]:
        """The best solved path if any, else the best-scored materialized leaf."""
        solved = self.terminal_nodes()
        if solved:
            return max(solved, key=lambda n: (self.path_reward(n), -n.depth, -n.id)).path()
        leaves = [n for n in self.root.iter_tree() if n.state is not None]
        return max(leaves, key=lambda n: (self.path_reward(n), n.depth, -n.id)).path()

    # -- checkpoints -------------------------------------------------------
    def save_checkpoint(self, iteration: int, *, force: bool = False) -> None:
        """Append what changed since the last checkpoint to the instance's journal.

        With ``checkpoint_every`` > 1 only every n-th iteration is written; the
        changes in between are carried to the next line, never lost.
        """
        if not self.recorder.active:
            return
        every = self.config.checkpoint_every
        if every > 1 and iteration % every and not force:
            return
        proposals = self._take_proposals()
        if proposals:
            self.proposals.extend(proposals)
        parsed = parsing.snapshot(self.query_idx)  # so a resumed instance's parse counts include these
        stats = {**self.stats, parsing.CHECKPOINT_KEY: parsed} if parsed else self.stats
        self.recorder.checkpoint(iteration, self._next_id, stats, proposals)

    def _take_proposals(self) -> list[tuple[str, bool]]:
        return [(str(a), bool(d)) for a, d in self.policy.take_proposals(self.query_idx)]

    def _load_checkpoint(self) -> bool:
        """Rebuild the tree from this instance's journal, if it has one (runs from before the journal restart)."""
        replayed = self.recorder.replay(self.backup_values)
        if replayed is None:
            return False
        self.root, counters = replayed
        self.iteration = counters["iteration"]
        self._next_id = counters["next_id"]
        saved = dict(counters["stats"])
        parsed = saved.pop(parsing.CHECKPOINT_KEY, None)
        if parsed is not None:
            parsing.restore(self.query_idx, parsed)
        self.stats.update(saved)
        self.proposals = list(counters["proposals"])
        self._solutions = self.terminal_nodes()
        return True
