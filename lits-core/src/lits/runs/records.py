"""What one finished instance writes: the result record, judged by the domain's evaluation."""

from __future__ import annotations

from typing import Any, NotRequired, Optional, TypedDict

from lits.answers import Vote, majority_vote, same_text
from lits.components.factory import Components
from lits.runs.evaluation import InstanceEval, evaluate_instance


class ResultRecord(TypedDict):
    """A finished instance's ``results/{idx}.json``: what the agent found, judged (timings go to ``timings/``)."""

    idx: int
    id: object
    query: object
    example: dict[str, object]
    mode: str
    solved_by_agent: bool
    stopped: Optional[str]
    iterations: Optional[int]
    final_state: dict[str, object]
    eval: InstanceEval
    answer_selection: Optional[dict[str, object]]
    search_stats: Optional[dict[str, float]]
    #: The policy's sampled proposals ``(action, duplicate)``.
    proposals: list[tuple[str, bool]]
    #: With ``--attempts``: each attempt's summary (:func:`lits.runs.attempts.summary_of`).
    attempts: NotRequired[list[dict[str, object]]]
    #: Records written before ``timings/`` existed held the instance's seconds.
    seconds: NotRequired[float]


def result_record(idx: int, example: dict[str, Any], result: Any, components: Components, mode: str) -> ResultRecord:
    """What the agent found: the same seed gives the same bytes (timings go to ``timings/``)."""
    state = result.best_state if mode == "search" else result.state
    extra = {k: v for k, v in example.items() if k != "query"}
    kept = getattr(result, "proposals", None)  # a search journals them, so they survive a resume
    proposals = kept if kept is not None else take_proposals(components.policy, idx)
    vote = _vote(result, components) if mode == "search" else _chain_vote(result, components)
    return {
        "idx": idx,
        "id": example.get("id", str(idx)),
        "query": example.get("query"),
        "example": extra,
        "mode": mode,
        "solved_by_agent": bool(result.solved),
        "stopped": result.stopped,
        "iterations": getattr(result, "iterations", None),
        "final_state": state.to_dict(),
        "eval": evaluate_instance(components, {**example, "_proposals": proposals}, state,
                                  vote.answer if vote is not None else None),
        "answer_selection": vote.to_dict() if vote is not None else None,
        "search_stats": getattr(result, "stats", None),
        "proposals": proposals,
    }


def _vote(result: Any, components: Components) -> Optional[Vote]:
    """Self-consistency over the answers of all terminal nodes (language-grounded search)."""
    if components.task_type != "language_grounded":
        return None
    answers = [n.state.get_final_answer() for n in result.terminal_nodes if n.state is not None]
    return majority_vote(answers, components.equivalent or same_text)


def _chain_vote(result: object, components: Components) -> Optional[Vote]:
    """Self-consistency over the final answers of a chain agent's samples (``--chain sc``)."""
    samples = getattr(result, "samples", None)
    if not samples:
        return None
    answers = [s.get_final_answer() if hasattr(s, "get_final_answer") else None for s in samples]
    return majority_vote(answers, components.equivalent or same_text)


def take_proposals(policy: object, idx: int) -> list[tuple[str, bool]]:
    """The policy's recorded proposals for instance ``idx`` (removed from its memory), sorted."""
    take = getattr(getattr(policy, "stats", None), "take_proposals", None)
    return sorted(take(idx)) if take is not None else []  # concurrent expansions record in any order
