"""What every whole-run budget shares (``--budget tokens=N``): the budget, what a logged call costs of it, and
the rounds of :func:`~lits.runs.runner.run_instances` whose grants are fixed before each starts.

Self-consistency's chains (:mod:`lits.runs.sweeps.budget`) and a search's iterations
(:mod:`lits.runs.sweeps.search_budget`) are granted through :class:`BudgetRounds`.
"""

from __future__ import annotations

from typing import Any, Callable

from lits.runtime.observability import UNUSED_REPLY, InferenceRecord
from lits.runs.faults.control import RunControl
from lits.runs.results.artifacts import RunDir
from lits.runs.results.spend import BudgetReport
from lits.runs.runner import Agent, Item, RunOutcome, run_instances
from lits.runs.compute_budget import BUDGET_FILE, UNITS, RunBudget, budget_of, parse_budget

__all__ = ["BUDGET_FILE", "UNITS", "RunBudget", "budget_of", "parse_budget"]


def cost(record: InferenceRecord, unit: str) -> float:
    """What one logged call took from the budget: nothing for a cache hit."""
    if record.cached:
        return 0.0
    if unit == "calls":
        return 0.0 if record.kind == UNUSED_REPLY else 1.0
    if unit == "seconds":
        return 0.0 if record.kind == UNUSED_REPLY else float(record.seconds)
    return float(record.tokens_in + record.tokens_out)


#: What a method that cannot take a budget is told.
TAKES_A_BUDGET = (
    "--budget spreads self-consistency chains or search iterations over a run: "
    "use it with --chain sc, or with lits search --search mcts or bfs"
)


def read_report(run_dir: RunDir) -> BudgetReport | None:
    """What :meth:`BudgetRounds.run` wrote of how the budget was spent (None: nothing yet)."""
    import json

    try:
        return json.loads((run_dir.root / BUDGET_FILE).read_text(encoding="utf-8"))  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return None


class BudgetRounds:
    """Rounds of :func:`run_instances`, each round's grants fixed before it starts, until there are none."""

    run_dir: RunDir
    mode: str

    def agent_factory(self, make_agent: Callable[[], Agent]) -> Callable[[], Agent]:
        """Agents that draw only what the current grants allow."""
        raise NotImplementedError

    def grants(self, selected: list[int]) -> dict[int, int]:
        """The next round's grants (instance -> what it may then have); empty when the run is over."""
        raise NotImplementedError

    def grant(self, grants: dict[int, int]) -> None:
        """Let the agents draw up to ``grants``."""
        raise NotImplementedError

    def report(self, selected: list[int]) -> BudgetReport:
        raise NotImplementedError

    def run(self, make_agent: Callable[[], Agent], selected: list[Item], **options: Any) -> RunOutcome:
        """Rounds until every instance settled, reached its own limit, or the budget has no room for more."""
        control: RunControl = options["control"]
        order = [idx for idx, _ in selected]
        examples = dict(selected)
        agents = self.agent_factory(make_agent)
        if options.pop("resume", False):
            self.run_dir.repair_inference_log()
        total = RunOutcome()
        while not control.stopping:
            grants = self.grants(order)
            if not grants:
                break
            self.grant(grants)
            items = [(idx, examples[idx]) for idx in order if idx in grants]
            # every round runs its instances again: each draws what it was newly granted (sc keeps the chains it
            # drew in memory, a search continues its journal)
            outcome = run_instances(
                agents,
                options["components"],
                items,
                self.run_dir,
                mode=self.mode,
                **{k: v for k, v in options.items() if k != "components"},
            )
            merge_outcome(total, outcome)
            if outcome.failed or outcome.interrupted:
                break  # the grants after this round would read results that are not there; --resume continues
        total.skipped = sorted(set(order) - set(total.finished) - set(total.failed) - set(total.interrupted))
        total.stop_reason, total.stop_message = control.reason, control.message
        self.run_dir.write_json(BUDGET_FILE, dict(self.report(order)))
        return total


def merge_outcome(total: RunOutcome, part: RunOutcome) -> None:
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
