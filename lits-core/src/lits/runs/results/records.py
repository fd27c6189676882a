"""What one finished instance writes: the result record, judged by the domain's evaluation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, NotRequired, Sized, TypedDict

from lits.agents.chain.base import ChainResult
from lits.agents.tree.base import SearchResult
from lits.answers import Vote, majority_vote, same_text
from lits.components.base import Policy
from lits.components.factory import Components

if TYPE_CHECKING:
    from lits.structures.env_grounded import EnvState


class InstanceEval(TypedDict):
    """How one instance is judged (a result record's ``eval``): solved, progress, the plan against the optimal
    one, the domain's metrics; a tool-use / QA instance also its final ``answer``."""

    solved: bool
    progress: float
    plan: list[str]
    plan_length: int
    optimal_length: int | None
    optimal: bool
    metrics: dict[str, object]
    answer: NotRequired[str | None]


class ResultRecord(TypedDict):
    """A finished instance's ``results/{idx}.json``: what the agent found, judged (timings go to ``timings/``)."""

    idx: int
    id: object
    query: object
    example: dict[str, object]
    mode: str
    solved_by_agent: bool
    stopped: str | None
    iterations: int | None
    final_state: dict[str, object]
    eval: InstanceEval
    answer_selection: dict[str, object] | None
    search_stats: dict[str, float] | None
    #: The policy's sampled proposals ``(action, duplicate)``.
    proposals: list[tuple[str, bool]]
    #: With ``--attempts``: each attempt's summary (:func:`lits.runs.attempts.summary_of`).
    attempts: NotRequired[list[dict[str, object]]]
    #: Records written before ``timings/`` existed held the instance's seconds.
    seconds: NotRequired[float]


def result_record(
    idx: int, example: dict[str, Any], result: SearchResult | ChainResult, components: Components, mode: str
) -> ResultRecord:
    """What the agent found: the same seed gives the same bytes (timings go to ``timings/``)."""
    searched = result if isinstance(result, SearchResult) else None
    state = searched.best_state if searched is not None else _chained(result).state
    extra = {k: v for k, v in example.items() if k != "query"}
    kept = result.proposals  # a search journals them, so they survive a resume
    proposals = kept if kept is not None else take_proposals(components.policy, idx)
    vote = _vote(searched, components) if searched is not None else _chain_vote(_chained(result), components)
    stats: dict[str, float] | None = None if result.stats is None else {k: v for k, v in result.stats.items()}
    return {
        "idx": idx,
        "id": example.get("id", str(idx)),
        "query": example.get("query"),
        "example": extra,
        "mode": mode,
        "solved_by_agent": bool(result.solved),
        "stopped": result.stopped,
        "iterations": searched.iterations if searched is not None else None,
        "final_state": state.to_dict(),
        "eval": evaluate_instance(
            components, {**example, "_proposals": proposals}, state, vote.answer if vote is not None else None
        ),
        "answer_selection": vote.to_dict() if vote is not None else None,
        "search_stats": stats,
        "proposals": proposals,
    }


def _chained(result: SearchResult | ChainResult) -> ChainResult:
    if not isinstance(result, ChainResult):
        raise TypeError(f"a chain agent returned a {type(result).__name__}, not a ChainResult")
    return result


def _vote(result: SearchResult, components: Components) -> Vote | None:
    """Self-consistency over the answers of all terminal nodes (language-grounded search)."""
    if components.task_type != "language_grounded":
        return None
    states: list[Any] = [n.state for n in result.terminal_nodes if n.state is not None]  # language-grounded
    answers = [state.get_final_answer() for state in states]
    return majority_vote(answers, components.equivalent or same_text)


def _chain_vote(result: ChainResult, components: Components) -> Vote | None:
    """Self-consistency over the final answers of a chain agent's samples (``--chain sc``)."""
    samples = result.samples
    if not samples:
        return None
    answers = [s.get_final_answer() if hasattr(s, "get_final_answer") else None for s in samples]
    return majority_vote(answers, components.equivalent or same_text)


def take_proposals(policy: object, idx: int) -> list[tuple[str, bool]]:
    """The policy's recorded proposals for instance ``idx`` (removed from its memory), sorted; none from an
    object the caller built that is not a :class:`Policy`."""
    taken = policy.take_proposals(idx) if isinstance(policy, Policy) else []
    return sorted(taken)  # concurrent expansions record in any order


def policy_stats(policy: object) -> dict[str, float] | None:
    """How diverse the policy's proposals were (None: it does not count them)."""
    return policy.proposal_stats() if isinstance(policy, Policy) else None


def evaluate_env_instance(transition: Any, example: Mapping[str, Any], state: EnvState) -> InstanceEval:
    """Goal reached (checked by the domain), progress, plan length vs optimal.

    A dataset may give ``eval_goals``: ground truth that evaluation uses and
    search never sees (e.g. a crossword's answers); otherwise the query is the goal.
    """
    goals = example.get("eval_goals", example.get("query"))
    reached, progress = transition.goal_check(goals, state.env_state)
    metrics = dict(getattr(transition, "eval_metrics", lambda g, s: {})(goals, state.env_state))
    judge = getattr(transition, "action_correct", None)
    proposals = example.get("_proposals") or []
    if judge is not None and proposals:
        verdicts = [(ok, dup) for text, dup in proposals if (ok := judge(goals, text)) is not None]
        wrong = [dup for ok, dup in verdicts if ok is False]
        # A domain whose goals cannot judge a proposal (None) has no rate: unknown, not 0.0.
        metrics["proposals_correct"] = sum(ok is True for ok, _ in verdicts) / len(verdicts) if verdicts else None
        metrics["duplicate_rate_incorrect"] = (sum(wrong) / len(wrong) if wrong else 0.0) if verdicts else None
    plan = [str(s.action) for s in state if s.action is not None and s.error is None]
    optimal = example.get("optimal_plan")
    optimal_len: int | None = len(optimal) if optimal else example.get("n_steps")
    return {
        "solved": bool(reached),
        "progress": round(float(progress), 4),
        "plan": plan,
        "plan_length": len(plan),
        "optimal_length": optimal_len,
        "optimal": bool(reached) and optimal_len is not None and len(plan) <= optimal_len,
        "metrics": metrics,
    }


def evaluate_answer_instance(
    evaluate: Callable[..., Mapping[str, object]] | None,
    example: Mapping[str, object],
    state: Sized,
    answer: str | None = None,
) -> InstanceEval:
    """Tool use / QA: the final answer, judged by the dataset's ``evaluate`` or by exact match.

    ``answer`` is the answer selected across several trajectories (majority
    vote); without it the state's own final answer counts.
    """
    if answer is None:
        answer = state.get_final_answer() if hasattr(state, "get_final_answer") else None
    if evaluate is not None:
        verdict = dict(evaluate(example, answer))
    else:
        verdict = {"solved": answer is not None and same_text(answer, example.get("answer"))}
    solved = bool(verdict.pop("solved", False))
    return {
        "solved": solved,
        "progress": float(solved),
        "answer": answer,
        "plan": [],
        "plan_length": len(state),
        "optimal_length": None,
        "optimal": False,
        "metrics": verdict,
    }


def evaluate_instance(
    components: Components, example: Mapping[str, Any], state: Any, answer: str | None = None
) -> InstanceEval:
    if components.task_type == "env_grounded":
        return evaluate_env_instance(components.transition, example, state)
    return evaluate_answer_instance(components.evaluate, example, state, answer)
