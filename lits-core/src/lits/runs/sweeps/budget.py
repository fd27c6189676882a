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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from lits.errors import UserError
from lits.observability import UNUSED_REPLY, InferenceLog, InferenceRecord
from lits.runs.results.artifacts import RunDir
from lits.runs.results.spend import BudgetReport
from lits.runs.faults.control import RunControl
from lits.runs.runner import Agent, Item, RunOutcome, run_instances

if TYPE_CHECKING:
    from lits.agents.chain.self_consistency import Draws

UNITS = ("tokens", "calls", "seconds")
#: How the budget was spent, in the run's folder (``eval_results.json`` carries it as ``budget``).
BUDGET_FILE = "budget.json"


@dataclass(frozen=True)
class RunBudget:
    """The run's budget: ``total`` of ``unit`` (one of :data:`UNITS`)."""

    unit: str
    total: float

    def as_setting(self) -> str:
        """As ``config.json`` records it (and ``--budget`` takes it)."""
        return f"{self.unit}={int(self.total) if self.total.is_integer() else self.total}"


def parse_budget(text: str) -> RunBudget:
    """``tokens=20000``, ``calls=300`` or ``seconds=600`` (model seconds); anything else is one line."""
    unit, sep, value = str(text).partition("=")
    unit = unit.strip()
    try:
        total = float(value)
    except ValueError:
        total = math.nan
    if not sep or unit not in UNITS or not math.isfinite(total) or total <= 0:
        raise UserError(
            f"--budget must be UNIT=AMOUNT, UNIT one of {', '.join(UNITS)} and AMOUNT more than 0 "
            f"(e.g. tokens=20000), not {text!r}"
        )
    return RunBudget(unit, total)


def budget_of(setting: object) -> RunBudget | None:
    """The budget recorded in ``config.json`` (None: the run had none)."""
    return parse_budget(setting) if isinstance(setting, str) else None


def cost(record: InferenceRecord, unit: str) -> float:
    """What one logged call took from the budget: nothing for a cache hit."""
    if record.cached:
        return 0.0
    if unit == "calls":
        return 0.0 if record.kind == UNUSED_REPLY else 1.0
    if unit == "seconds":
        return 0.0 if record.kind == UNUSED_REPLY else float(record.seconds)
    return float(record.tokens_in + record.tokens_out)


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


def draws_for(budget: RunBudget | None, agent_cls: object) -> Draws | None:
    """The grants a budgeted run's chains are built with (None: no budget); only sc chains draw under one."""
    if budget is None:
        return None
    from lits.agents.chain.self_consistency import Draws, SelfConsistencyChain

    if not (isinstance(agent_cls, type) and issubclass(agent_cls, SelfConsistencyChain)):
        raise UserError("--budget spreads self-consistency chains over a run: use it with --chain sc")
    return Draws()


def budgeted(
    budget: RunBudget, config: object, make_agent: Callable[[], Agent], draws: Draws
) -> Callable[..., RunOutcome]:
    """What runs the instances under ``budget`` (in place of :func:`run_instances`); only sc chains have one,
    each built with ``draws`` (:func:`lits.runs.setup.agent_factory`'s ``options``)."""
    from lits.agents.chain.self_consistency import SelfConsistencyChain

    if not isinstance(make_agent(), SelfConsistencyChain):
        raise UserError("--budget spreads self-consistency chains over a run: use it with --chain sc")
    from lits.agents.config import SelfConsistencyConfig

    if not isinstance(config, SelfConsistencyConfig):
        raise UserError("--budget spreads self-consistency chains over a run: use it with --chain sc")
    k = config.k

    def run(
        make: Callable[[], Agent], components: object, examples: list[Item], run_dir: RunDir, **options: Any
    ) -> RunOutcome:
        return BudgetedRun(budget, k, run_dir, str(options.pop("mode")), draws).run(
            make, examples, components=components, **options
        )

    return run


def read_report(run_dir: RunDir) -> BudgetReport | None:
    """What :meth:`BudgetedRun.run` wrote of how the budget was spent (None: nothing yet)."""
    import json

    try:
        return json.loads((run_dir.root / BUDGET_FILE).read_text(encoding="utf-8"))  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return None


class BudgetedRun:
    """Rounds of :func:`run_instances` over self-consistency chains, each round's grants fixed beforehand."""

    def __init__(self, budget: RunBudget, k: int, run_dir: RunDir, mode: str, draws: Draws) -> None:
        self.budget, self.k, self.run_dir, self.mode = budget, k, run_dir, mode
        #: What the run's chains were built with: the grants they read, the chains they kept.
        self.draws = draws
        #: Instances whose vote was settled when chains were last granted (they stopped; the others drew on).
        self.settled: set[int] = set()

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

    def run(self, make_agent: Callable[[], Agent], selected: list[Item], **options: Any) -> RunOutcome:
        """Rounds until every instance settled, drew ``k`` chains, or the budget has no room for another."""
        control: RunControl = options["control"]
        order = [idx for idx, _ in selected]
        examples = dict(selected)
        if options.pop("resume", False):
            self.run_dir.repair_inference_log()
        total = RunOutcome()
        while not control.stopping:
            grants = self.grants(order)
            if not grants:
                break
            self.draws.granted.update(grants)
            items = [(idx, examples[idx]) for idx in order if idx in grants]
            # every round runs its instances again (not resumed): each draws the chains it was newly granted
            outcome = run_instances(
                make_agent,
                options["components"],
                items,
                self.run_dir,
                mode=self.mode,
                **{k: v for k, v in options.items() if k != "components"},
            )
            _merge(total, outcome)
            if outcome.failed or outcome.interrupted:
                break  # the grants after this round would read votes that are not there; --resume continues
        total.skipped = sorted(set(order) - set(total.finished) - set(total.failed) - set(total.interrupted))
        total.stop_reason, total.stop_message = control.reason, control.message
        self.run_dir.write_json(BUDGET_FILE, dict(self.report(order)))
        return total

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


def _merge(total: RunOutcome, part: RunOutcome) -> None:
    """A round's outcome added to the run's: an instance is finished once any round finished it."""
    total.finished = sorted(set(total.finished) | set(part.finished))
    total.failed.update(part.failed)
    for idx in part.finished:
        total.failed.pop(idx, None)
    total.no_retry |= part.no_retry
    total.interrupted = sorted(set(total.interrupted) | set(part.interrupted))
    total.not_started = part.not_started
    for idx, n in part.attempts.items():
        total.attempts[idx] = max(total.attempts.get(idx, 0), n)
    total.seconds += part.seconds
    total.stragglers = part.stragglers
