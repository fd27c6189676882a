"""A compute budget for a whole run (``--budget tokens=N``): one budget spread over the instances.

Self-consistency chains (``--chain sc``) are drawn in rounds: round r gives one more chain to each instance
that has r, whose vote is not settled and whose next chain fits in what is left.  A vote is settled when the
chains the instance could still draw cannot overturn it: at most ``k`` in all, and no more than its share
of the budget left pays for at what its chains cost (the share: what is left split evenly over the instances
still open, those below ``k`` whose vote that even split over all of them does not settle).  So an instance whose answer settled stops early and the budget it
did not spend goes to the others.  A round's grants are decided before it starts, in a fixed order (the
closest votes first, then the instance index), from what each earlier chain cost as the inference log
recorded it (paid calls; a cache hit costs nothing): the same seed gives the same grants whatever the
concurrency or the order calls finish in.  A chain is granted only while the budget left covers the
dearest chain that instance drew so far (a first chain: the dearest chain of the run), so the run spends
more than its budget only if a chain costs more than every chain its instance drew before it.  A budget too
small for every instance's first chain leaves the last instances without an answer (no result).  ``--resume`` reads what the run spent from its inference log and its votes from its
result files, so it continues with the budget that was left.

Searches (MCTS, BFS) are granted iterations (BFS: depths) in rounds the same way
(:mod:`lits.runs.sweeps.search_budget`); both run their rounds through
:class:`~lits.runs.sweeps.rounds.BudgetRounds`, and :func:`budgeted` picks the one a run's method takes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

from lits.errors import UserError
from lits.runtime.observability import InferenceLog
from lits.runs.results.artifacts import RunDir
from lits.runs.results.spend import BudgetReport
from lits.runs.runner import Agent, Item, RunOutcome
from lits.runs.sweeps.rounds import TAKES_A_BUDGET, BudgetRounds, RunBudget, cost

if TYPE_CHECKING:
    from lits.agents.chain.self_consistency import Draws


def chain_costs(run_dir: RunDir, unit: str) -> dict[int, dict[int, float]]:
    """Per instance, per chain (``sample`` in the call's context): its cost, from the run's inference log."""
    out: dict[int, dict[int, float]] = {}
    for record in InferenceLog.read(run_dir.inference_log_path).records:
        instance, sample = record.context.get("instance"), record.context.get("sample")
        if isinstance(instance, int) and isinstance(sample, int):
            per = out.setdefault(instance, {})
            per[sample] = per.get(sample, 0.0) + cost(record, unit)
    return out


def vote_counts(record: Mapping[str, Any]) -> list[int]:
    """The vote's cluster counts in an instance's result (empty: no chain answered)."""
    selection = record.get("answer_selection") or {}
    return [int(c.get("count") or 0) for c in selection.get("clusters") or []]


def chains_of(record: Mapping[str, Any]) -> int:
    """How many chains an instance drew (its vote counts only those that answered)."""
    stats = record.get("search_stats") or {}
    return int(stats.get("chains") or sum(vote_counts(record)))


def built_with(budget: RunBudget | None, agent_cls: object) -> dict[str, object] | None:
    """What a budgeted run's agents are built with (:func:`lits.runs.setup.agent_factory`'s ``options``):
    sc chains the run's :class:`~lits.agents.chain.self_consistency.Draws`, searches (MCTS, BFS) the
    iterations granted per instance; None without a budget; any other method is one line naming the flag."""
    if budget is None:
        return None
    from lits.agents.chain.self_consistency import Draws, SelfConsistencyChain
    from lits.agents.tree.breadth_first import BFS
    from lits.agents.tree.mcts import MCTS

    if isinstance(agent_cls, type) and issubclass(agent_cls, SelfConsistencyChain):
        return {"draws": Draws()}
    if isinstance(agent_cls, type) and issubclass(agent_cls, (MCTS, BFS)):
        granted: dict[int, int] = {}
        return {"granted": granted}
    raise UserError(TAKES_A_BUDGET)


def budgeted(
    budget: RunBudget, config: object, make_agent: Callable[[], Agent], built: Mapping[str, object]
) -> Callable[..., RunOutcome]:
    """What runs the instances under ``budget`` (in place of :func:`run_instances`), its agents built with
    ``built`` (:func:`built_with`): sc chains and searches (MCTS, BFS) have one."""
    from lits.agents.chain.self_consistency import Draws
    from lits.agents.config import SelfConsistencyConfig
    from lits.runs.sweeps.search_budget import SearchBudgetRun, budgeted_search

    draws, granted = built.get("draws"), built.get("granted")
    if isinstance(draws, Draws):
        if not isinstance(config, SelfConsistencyConfig):
            raise UserError(TAKES_A_BUDGET)
        k, chains = config.k, draws

        def rounds(run_dir: RunDir, mode: str, components: Any) -> BudgetRounds:
            return BudgetedRun(budget, k, run_dir, mode, chains)

    elif isinstance(granted, dict):
        cap = budgeted_search(make_agent(), config)
        grants = granted

        def rounds(run_dir: RunDir, mode: str, components: Any) -> BudgetRounds:
            env_grounded = getattr(components, "task_type", None) == "env_grounded"
            return SearchBudgetRun(budget, cap, run_dir, mode, grants, env_grounded=env_grounded)

    else:
        raise UserError(TAKES_A_BUDGET)

    def run(
        make: Callable[[], Agent], components: object, examples: list[Item], run_dir: RunDir, **options: Any
    ) -> RunOutcome:
        return rounds(run_dir, str(options.pop("mode")), components).run(
            make, examples, components=components, **options
        )

    return run


class BudgetedRun(BudgetRounds):
    """Rounds of :func:`run_instances` over self-consistency chains, each round's grants fixed beforehand."""

    def __init__(self, budget: RunBudget, k: int, run_dir: RunDir, mode: str, draws: Draws) -> None:
        self.budget, self.k, self.run_dir, self.mode = budget, k, run_dir, mode
        #: What the run's chains were built with: the grants they read, the chains they kept.
        self.draws = draws
        #: Instances whose vote was settled when chains were last granted (they stopped; the others drew on).
        self.settled: set[int] = set()

    def grant(self, grants: dict[int, int]) -> None:
        self.draws.granted.update(grants)

    def agent_factory(self, make_agent: Callable[[], Agent]) -> Callable[[], Agent]:
        return make_agent  # each chain was built with the run's draws

    def grants(self, selected: list[int]) -> dict[int, int]:
        """The next round's grants (instance -> chains it may then have); empty when the run is over."""
        results = self.run_dir.read_results(self.mode)
        costs = chain_costs(self.run_dir, self.budget.unit)
        spent = sum(sum(per.values()) for per in costs.values())
        drawn = {idx: chains_of(results[idx]) if idx in results else 0 for idx in selected}
        below_k = [idx for idx in selected if drawn[idx] < self.k]

        def settled_at(share: float) -> set[int]:
            out = set()
            for idx in below_k:
                dearest_own = max(costs.get(idx, {}).values(), default=0.0)
                # the chains it could still draw: up to k, and no more than its share of what is left pays for
                could = self.k - drawn[idx]
                if dearest_own > 0:
                    could = min(could, int(share // dearest_own))
                if drawn[idx] and _settled(results[idx], could):
                    out.add(idx)
            return out

        left = self.budget.total - spent
        # an even share over the instances below k, then over those of them still open (a larger share)
        settled_now = settled_at(left / max(1, len(below_k)))
        settled_now = settled_at(left / max(1, len(below_k) - len(settled_now)))
        open_ = [idx for idx in below_k if idx not in settled_now]
        if not open_:
            return {}
        round_ = min(drawn[idx] for idx in open_)
        dearest = max((c for per in costs.values() for c in per.values()), default=None)
        if round_ == 0 and dearest is None:  # nothing drawn yet: the first instance shows what a chain costs
            return {open_[0]: 1}
        out: dict[int, int] = {}
        for idx in sorted((i for i in open_ if drawn[i] == round_), key=lambda i: (_margin(results.get(i, {})), i)):
            # a first chain may cost what the dearest chain of the run did; a later one, its instance's dearest
            reserve = max(costs.get(idx, {}).values(), default=0.0) if round_ else float(dearest or 0.0)
            if spent + reserve <= self.budget.total:
                out[idx] = round_ + 1
                spent += reserve
        if out:
            self.settled = settled_now
        return out

    def report(self, selected: list[int]) -> BudgetReport:
        results = self.run_dir.read_results(self.mode)
        costs = chain_costs(self.run_dir, self.budget.unit)
        chains = {idx: chains_of(results[idx]) for idx in selected if idx in results}
        per_count: dict[str, int] = {}
        for n in sorted(chains.values()):
            per_count[str(n)] = per_count.get(str(n), 0) + 1
        early = sum(1 for idx, n in chains.items() if n < self.k and idx in self.settled)
        cut = len(selected) - early - sum(1 for n in chains.values() if n >= self.k)
        spent = sum(sum(per.values()) for per in costs.values())
        return {
            "unit": self.budget.unit,
            "total": self.budget.total,
            "spent": round(spent, 3),
            "chains": sum(chains.values()),
            "chains_per_instance": per_count,
            "settled_early": early,
            "cut_by_budget": cut,
        }


def _settled(record: Mapping[str, Any], remaining: int) -> bool:
    from lits.agents.chain.self_consistency import settled

    return settled(vote_counts(record), remaining)


def _margin(record: Mapping[str, Any]) -> int:
    """How far the vote's leader is ahead of the runner-up (the closest votes get the next chains first)."""
    ranked = sorted(vote_counts(record), reverse=True) + [0, 0]
    return ranked[0] - ranked[1]
