"""``SelfConsistencyChain``: k sampled chains per instance, then a majority vote over their final answers.

With ``greedy_first`` the first chain is decoded greedily (temperature 0):
the greedy answer always votes, and a vote without a majority goes to it.
Each chain samples on its own stream (:func:`lits.lm.base.sampling_stream`):
its requests carry their own seed, so they are distinct in the response
cache and a server that honours seeds gives every chain its own, repeatable
sample.  The vote (``answer_selection`` in the result) groups answers with
the dataset's own equivalence, as the vote over a search's terminal nodes
does.  A resumed instance runs its chains again from the response cache.

Under a run's compute budget (``--budget``, :mod:`lits.runs.sweeps.budget`) the run
builds each chain with the run's :class:`Draws`: each instance then draws only up to
the count the budget granted it, keeping the chains it drew before.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from lits.agents.chain.base import ChainAgent, ChainResult
from lits.agents.config import SelfConsistencyConfig
from lits.answers import same_text
from lits.agents.chain.repeats import RepeatTracker
from lits.lm.base import sampling_stream
from lits.runtime.observability import call_context
from lits.structures.base import Step, TrajectoryState


Sample = tuple[TrajectoryState[Step], bool, str]


@dataclass
class Draws:
    """The chains each instance drew so far and how many it may have now (a run's budget grants them)."""

    granted: dict[int, int] = field(default_factory=dict)
    kept: dict[int, list[Sample]] = field(default_factory=dict)


def settled(counts: Sequence[int], remaining: int) -> bool:
    """Whether a vote with these cluster ``counts`` stays won whatever ``remaining`` more chains answer."""
    ranked = sorted(counts, reverse=True) + [0, 0]
    return ranked[0] > ranked[1] + remaining


class SelfConsistencyChain(ChainAgent):
    chain_name = "sc"
    #: Tasks whose states state a final answer to vote on.
    TASK_TYPES: tuple[str, ...] | None = ("language_grounded", "tool_use")
    config: SelfConsistencyConfig

    def __init__(
        self,
        config: SelfConsistencyConfig | None = None,
        policy: Any = None,
        transition: Any = None,
        *,
        draws: Draws | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(config or SelfConsistencyConfig.model_validate({}), policy, transition, **kwargs)
        #: Under a run's budget: chains are drawn up to ``draws.granted[idx]`` (at most ``k``).
        self.draws = draws

    def run(self, query: object, query_idx: int, example: Mapping[str, object], *, resume: bool = False) -> ChainResult:
        samples: list[Sample] = []
        counted: list[RepeatTracker] = []
        wanted = self.config.k
        if self.draws is not None:
            samples = self.draws.kept.setdefault(query_idx, [])
            wanted = min(wanted, self.draws.granted.get(query_idx, 1))
        with call_context(instance=query_idx, search=self.chain_name):
            for j in range(len(samples), wanted):
                greedy = j == 0 and self.config.greedy_first
                counted.append(RepeatTracker())  # each sample is a chain of its own
                with sampling_stream(j), call_context(sample=j):
                    samples.append(
                        self.walk(query, query_idx, example, temperature=0.0 if greedy else None, repeats=counted[-1])
                    )
        self.proposals.extend(self._take_proposals(query_idx))
        state, solved, stopped = _representative(samples)
        totals = RepeatTracker(
            steered_away=sum(t.steered_away for t in counted), repeats=sum(t.repeats for t in counted)
        )
        stats = totals.stats()
        if self.draws is not None:  # how many chains the budget let it draw (its vote counts only answers)
            stats = {**(stats or {}), "chains": len(samples)}
        return ChainResult(
            state=state,
            solved=solved,
            steps=sum(len(s) for s, _, _ in samples),
            stopped=stopped,
            proposals=sorted(self.proposals),
            samples=[s for s, _, _ in samples],
            stats=stats,
        )


def _representative(samples: list[Sample]) -> Sample:
    """The first chain whose answer is the most common one (plain text match), or the first chain."""
    answers = [_answer(state) for state, _, _ in samples]
    counts = [
        sum(1 for other in answers if a is not None and other is not None and same_text(a, other)) for a in answers
    ]
    best = max(range(len(samples)), key=lambda i: (counts[i], -i))
    return samples[best]


def _answer(state: object) -> str | None:
    final = state.get_final_answer() if hasattr(state, "get_final_answer") else None
    return None if final is None else str(final)
