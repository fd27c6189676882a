"""A compute budget for a whole search run (``lits search --budget tokens=N``, MCTS or BFS).

Iterations (BFS: depths) are granted in rounds: round r gives the instances still open that ran the fewest
iterations up to :func:`step_of` more each, as many as the budget left pays for at what an iteration of theirs
cost.  An instance runs its grant by continuing its search from its journal (the tree a search of that many
iterations would have), so one instance's iterations are the ones a run without a budget makes; the
search's own limit (``n_iterations``, ``max_depth``) stays what it tells the components and caps the grants.

An instance is *settled*, and stops, when more iterations would not change its answer's standing: its
search stopped by itself (a solution under ``early_stop``, a tree with nothing left to expand) or, on an
env-grounded task, it reached the goal (the environment checked it; a longer search could only find another
plan).  A language-grounded search settles only by stopping itself: its answer is a vote over terminal nodes
that share their prefixes and that the search steers to, not independent samples, so self-consistency's
"the vote cannot be overturned" rule would be a guess.  What a settled instance did not spend goes to the
others.

A round's grants are decided before it starts, from what each earlier iteration cost as the inference log
recorded it (paid calls; a cache hit costs nothing), in a fixed order (fewest iterations first, then the
instance index): the same seed gives the same grants at any concurrency.  An iteration is granted only while
the budget left covers the dearest iteration that instance ran so far (its first: the dearest of the run),
so the run spends more than its budget only if an iteration costs more than every earlier one of its
instance.  The first round runs the first instance alone, to learn what an iteration costs.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Callable, Mapping

from lits.errors import UserError
from lits.runtime.observability import InferenceLog
from lits.runs.results.artifacts import RunDir
from lits.runs.results.spend import BudgetReport
from lits.runs.runner import Agent
from lits.runs.sweeps.rounds import TAKES_A_BUDGET, BudgetRounds, RunBudget, cost

if TYPE_CHECKING:
    from lits.agents.chain.base import ChainResult
    from lits.agents.tree.base import SearchResult

#: A round grants at most this share of the search's own limit (at least one iteration): rounds are few, and
#: the budget's last grants still go to the instances in a fixed order.
ROUND_SHARE = 0.1
#: Why a search stopped that more iterations would not change.
STOPPED_BY_ITSELF = ("solution", "exhausted")


def budgeted_search(agent: object, config: object) -> int:
    """The search's own limit (MCTS ``n_iterations``, BFS ``max_depth``), which caps the grants; a method
    without iterations to grant, or a search stopped by the clock, is one line naming the flag."""
    from lits.agents.tree.breadth_first import BFS
    from lits.agents.tree.mcts import MCTS

    if not isinstance(agent, (MCTS, BFS)):
        raise UserError(TAKES_A_BUDGET)
    if getattr(config, "runtime_limit", None):
        raise UserError(
            "--budget grants model compute and runtime_limit stops a search by the clock: "
            "drop --search-arg runtime_limit or --budget"
        )
    return int(getattr(config, "n_iterations") if isinstance(agent, MCTS) else getattr(config, "max_depth"))


def step_of(cap: int) -> int:
    """The iterations one round grants an instance at most."""
    return max(1, math.ceil(cap * ROUND_SHARE))


def iteration_costs(run_dir: RunDir, unit: str) -> tuple[dict[int, dict[int, float]], float]:
    """Per instance, per iteration (the inference log's ``iteration`` tag): its cost; and the run's whole spend
    (calls outside an iteration, e.g. the root's, count there too)."""
    out: dict[int, dict[int, float]] = {}
    spent = 0.0
    for record in InferenceLog.read(run_dir.inference_log_path).records:
        instance, iteration = record.context.get("instance"), record.context.get("iteration")
        if not isinstance(instance, int):
            continue
        amount = cost(record, unit)
        spent += amount
        if isinstance(iteration, int):
            per = out.setdefault(instance, {})
            per[iteration] = per.get(iteration, 0.0) + amount
    return out, spent


def settled(record: Mapping[str, Any], env_grounded: bool) -> bool:
    """Whether more iterations would leave this instance's answer as it stands (see the module's text)."""
    if record.get("stopped") in STOPPED_BY_ITSELF:
        return True
    return env_grounded and bool(record.get("solved_by_agent"))


class _Continuing:
    """A search that continues its instance's journal, whatever the round's runner says: each round extends
    the tree the last one left."""

    def __init__(self, search: Agent) -> None:
        self.search = search

    def run(
        self, query: object, query_idx: int, example: Mapping[str, object], *, resume: bool = False
    ) -> SearchResult | ChainResult:
        return self.search.run(query, query_idx, example, resume=True)


class SearchBudgetRun(BudgetRounds):
    """Rounds of :func:`~lits.runs.runner.run_instances` over MCTS or BFS, granting iterations."""

    def __init__(
        self, budget: RunBudget, cap: int, run_dir: RunDir, mode: str, granted: dict[int, int], *, env_grounded: bool
    ) -> None:
        self.budget, self.cap, self.run_dir, self.mode = budget, cap, run_dir, mode
        self.env_grounded = env_grounded
        #: Per instance: the iterations it may reach now (the searches were built with it and read it).
        self.granted = granted

    def agent_factory(self, make_agent: Callable[[], Agent]) -> Callable[[], Agent]:
        def make() -> Agent:
            return _Continuing(make_agent())

        return make

    def grant(self, grants: dict[int, int]) -> None:
        self.granted.update(grants)

    def iterations(self, selected: list[int]) -> tuple[dict[int, int], set[int]]:
        """Per instance: the iterations it ran; and those settled."""
        results = self.run_dir.read_results(self.mode)
        ran = {idx: int(results[idx].get("iterations") or 0) if idx in results else 0 for idx in selected}
        return ran, {idx for idx in selected if idx in results and settled(results[idx], self.env_grounded)}

    def grants(self, selected: list[int]) -> dict[int, int]:
        ran, done = self.iterations(selected)
        costs, spent = iteration_costs(self.run_dir, self.budget.unit)
        open_ = [idx for idx in selected if idx not in done and ran[idx] < self.cap]
        if not open_:
            return {}
        level = min(ran[idx] for idx in open_)
        dearest = max((c for per in costs.values() for c in per.values()), default=None)
        step = step_of(self.cap)
        if level == 0 and dearest is None:  # nothing ran yet: the first instance shows what an iteration costs
            return {open_[0]: min(step, self.cap)}
        out: dict[int, int] = {}
        for idx in (i for i in open_ if ran[i] == level):
            # an iteration may cost what its instance's dearest did; a first one, what the run's dearest did
            reserve = max(costs.get(idx, {}).values(), default=0.0) if ran[idx] else float(dearest or 0.0)
            more = min(step, self.cap - ran[idx])
            if reserve > 0:
                more = min(more, int((self.budget.total - spent) // reserve))
            if more > 0:
                out[idx] = ran[idx] + more
                spent += more * reserve
        return out

    def report(self, selected: list[int]) -> BudgetReport:
        ran, done = self.iterations(selected)
        results = self.run_dir.read_results(self.mode)
        counted = {idx: n for idx, n in ran.items() if idx in results}
        per_count: dict[str, int] = {}
        for n in sorted(counted.values()):
            per_count[str(n)] = per_count.get(str(n), 0) + 1
        early = sum(1 for idx, n in counted.items() if n < self.cap and idx in done)
        cut = len(selected) - early - sum(1 for n in counted.values() if n >= self.cap)
        _, spent = iteration_costs(self.run_dir, self.budget.unit)
        return {
            "unit": self.budget.unit,
            "total": self.budget.total,
            "spent": round(spent, 3),
            "iterations": sum(counted.values()),
            "iterations_per_instance": per_count,
            "settled_early": early,
            "cut_by_budget": cut,
        }
