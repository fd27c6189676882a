"""A run's evaluation: the summary over its judged instances (:mod:`records` judges each one) and its table;
works again later from the save dir alone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, TypedDict

from lits.components import parsing
from lits.runtime.observability import InferenceLog
from lits.runs.results.records import InstanceEval, ResultRecord, evaluate_instance
from lits.runs.results.spend import Spend, spend, spend_rows
from lits.type_registry import deserialize

if TYPE_CHECKING:
    from lits.components.factory import Components


class Summary(TypedDict, total=False):
    """A run's summary (``eval_results.json`` without its ``config``): the judged instances' figures
    (:func:`aggregate`), how many were selected, failed and unfinished (:func:`instance_counts`), what every
    process measured (:func:`lits.runs.results.stats.whole_run`), and how the run ended."""

    instances: int
    solved: int
    accuracy: float
    mean_progress: float
    mean_plan_length_solved: float | None
    optimal_plans: int
    #: Answer-task instances that ended without an answer to judge.
    no_answer: int
    seconds_per_instance: float
    metrics: dict[str, float | None]
    diversity: dict[str, object]
    inference: dict[str, float]
    #: :func:`lits.runs.results.spend.spend`: requests, prompt tokens evaluated and from cache, model seconds, per solved.
    spend: Spend
    inference_by_component: dict[str, dict[str, float]]
    #: :func:`parse_totals`: replies parsed, unparseable, re-asked and made up, in total and by component.
    parse: dict[str, Any]
    pass_at: dict[str, float]
    #: With ``--budget``: the run's budget and how it was spent (:class:`lits.runs.results.spend.BudgetReport`).
    budget: Any
    #: How a server held replies to the legal choices (``grammar (llama.cpp)``), when one did.
    constrained_replies: str
    #: :func:`memory_use`: what memory's notes added to prompts (runs with augmentors).
    memory: dict[str, float]
    total: int
    failed: int
    unfinished: int
    accuracy_of: str
    policy_stats: dict[str, float] | None
    faults: dict[str, float] | None
    run_seconds: float | None
    calls_in_flight_avg: float | None
    processes: int
    stopped: str | None
    retried_instances: dict[int, int] | None
    #: ``policy=A eval=B ...`` when a component has its own model.
    models: str
    #: ``--replay-from``: the recorded run, the calls answered from recorded replies and those paid.
    replay: dict[str, object]
    #: ``lits eval --verifier``: how the reward model's step scores ranked the outcomes (:mod:`lits.export.verifier`).
    verifier: dict[str, Any]


def aggregate(
    results: Mapping[int, ResultRecord],
    log: InferenceLog,
    timings: dict[int, dict[str, Any]] | None = None,
    attempts: int | None = None,
) -> Summary:
    """Run-level metrics from per-instance results, their timings and the inference log (``attempts``: the
    run's ``--attempts``, for pass@N)."""
    timings = timings or {}
    evals = [r["eval"] for r in results.values() if r.get("eval")]
    n = len(evals)
    solved = [e for e in evals if e["solved"]]
    summary: Summary = {
        "instances": n,
        "solved": len(solved),
        "accuracy": round(len(solved) / n, 4) if n else 0.0,
        "mean_progress": round(sum(e["progress"] for e in evals) / n, 4) if n else 0.0,
        "mean_plan_length_solved": (round(sum(e["plan_length"] for e in solved) / len(solved), 2) if solved else None),
        "optimal_plans": sum(1 for e in evals if e["optimal"]),
        # An answer task's instances that ended without an answer to judge (a model that never states one).
        "no_answer": sum(1 for e in evals if "answer" in e and e.get("answer") in (None, "")),
        "seconds_per_instance": (
            round(sum((timings.get(i) or r).get("seconds", 0.0) for i, r in results.items()) / n, 2) if n else 0.0
        ),
        "metrics": _mean_metrics(evals),
        "diversity": _diversity(results),
        "inference": log.summary(),
        "inference_by_component": log.by("component"),
        "spend": spend(log.summary(), len(solved)),
        "parse": parse_totals({i: timings.get(i) or {} for i in results}),
    }
    tried = pass_at(results)
    if tried is not None:
        summary["pass_at"] = {"n": attempts or max(len(r.get("attempts") or ()) for r in results.values()), **tried}
        notes = memory_use(results)
        if notes is not None:
            summary["memory"] = notes
    return summary


def memory_use(results: Mapping[int, ResultRecord]) -> dict[str, float] | None:
    """What memory added to prompts: every prompt of an attempt carries its notes block, so the mean characters
    per attempt is the mean added to a prompt; the lines ``max_notes`` left out and the entries the augmentors'
    caps dropped.  None when no attempt had notes."""
    tried = [a for r in results.values() for a in r.get("attempts") or ()]
    blocks = [len(str(a["notes"])) + 2 if a.get("notes") else 0 for a in tried]  # + the blank line before it
    if not any(blocks):
        return None
    return {
        "mean_chars": round(sum(blocks) / len(blocks), 1),
        "max_chars": max(blocks),
        "attempts_with_notes": sum(1 for b in blocks if b),
        "notes_left_out": sum(int(str(a.get("notes_left_out") or 0)) for a in tried),
        "notes_dropped": sum(int(str(a.get("notes_dropped") or 0)) for a in tried),
    }


def pass_at(results: Mapping[int, ResultRecord]) -> dict[str, float] | None:
    """pass@1 (the first attempt solved) and pass@N (any attempt did) over instances run with ``--attempts``;
    None for a run without attempts."""
    tried = [r["attempts"] for r in results.values() if r.get("attempts")]
    if not tried:
        return None
    n = len(tried)
    first = sum(1 for attempts in tried if attempts[0].get("solved"))
    anyone = sum(1 for attempts in tried if any(a.get("solved") for a in attempts))
    return {
        "instances": n,
        "solved_at_1": first,
        "solved_at_n": anyone,
        "pass_at_1": round(first / n, 4),
        "pass_at_n": round(anyone / n, 4),
        "attempts_run": sum(len(attempts) for attempts in tried),
    }


def parse_totals(timings: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Replies parsed, unparseable, re-asked and made up (``timings/N.json``'s ``parse``), over all instances:
    in total and by component."""
    by_component: dict[str, dict[str, int]] = {}
    for timing in timings.values():
        for component, counts in (timing.get("parse") or {}).items():
            have = by_component.setdefault(component, dict.fromkeys(parsing.FIELDS, 0))
            for field in parsing.FIELDS:
                have[field] += int(counts.get(field, 0))
    totals = parsing.total(by_component)
    rate = round(totals["unparseable"] / totals["replies"], 4) if totals["replies"] else None
    return {**totals, "invalid_rate": rate, "by_component": dict(sorted(by_component.items()))}


#: Rates a domain may be unable to measure (None): shown "unknown" rather than left out or counted as 0.
UNKNOWN_WHEN_NONE = frozenset({"proposals_correct", "duplicate_rate_incorrect"})


def _mean_metrics(evals: list[InstanceEval]) -> dict[str, float | None]:
    """Each domain metric averaged over the instances that report it; None (shown "unknown") for a rate of
    :data:`UNKNOWN_WHEN_NONE` that no instance could measure."""
    values: dict[str, list[float]] = {}
    for e in evals:
        for key, value in (e.get("metrics") or {}).items():
            if isinstance(value, (int, float)):  # bools count as 0/1; labels and None are skipped
                values.setdefault(key, []).append(float(value))
            elif value is None and key in UNKNOWN_WHEN_NONE:
                values.setdefault(key, [])
    return {k: round(sum(v) / len(v), 4) if v else None for k, v in sorted(values.items())}


def _diversity(results: Mapping[int, ResultRecord]) -> dict[str, object]:
    """Unique states visited and policy calls per state, over all search instances."""
    stats = [s for r in results.values() if (s := r.get("search_stats"))]
    unique = sum(s.get("unique_states", 0) for s in stats)
    expansions = sum(s.get("expansions", 0) for s in stats)
    out: dict[str, object] = {
        "unique_states": unique,
        "expansions": expansions,
        "policy_calls_per_state": round(expansions / unique, 2) if unique else None,
        "duplicate_siblings_dropped": sum(s.get("duplicates", 0) for s in stats),
    }
    for key, name in (("steered_away", "repeats_steered_away"), ("repeats", "repeats_kept")):
        count = sum(s.get(key, 0) for s in stats)
        if count:  # chains (lits.agents.chain.repeats)
            out[name] = count
    skipped = sum(s.get("scores_skipped", 0) for s in stats)
    if skipped:  # reward calls whose answer nothing would read (BFS's last depth, score_last_depth=false)
        out["reward_calls_skipped"] = skipped
    return out


def reevaluate(
    components: Components,
    results: Mapping[int, ResultRecord],
    examples: Mapping[int, Mapping[str, object]],
    attempt: Callable[[int, int], Mapping[str, Any] | None] | None = None,
) -> dict[int, ResultRecord]:
    """Recompute each result's ``eval`` from its saved final state, and with ``--attempts`` each attempt's
    ``solved`` from the attempt's own saved record (``attempt(idx, k)``), so pass@N agrees with the new eval."""
    out: dict[int, ResultRecord] = {}
    for idx, result in results.items():
        example = examples.get(idx) or {
            "query": result.get("query"),
            **result.get("example", {}),
            "_proposals": result.get("proposals"),
        }
        judged = _judge(components, example, result)
        out[idx] = {**result, "eval": judged}
        tried = [dict(summary) for summary in result.get("attempts") or []]
        for k, summary in enumerate(tried):
            saved = attempt(idx, k) if attempt is not None and k < len(tried) - 1 else None
            if saved is not None and saved.get("final_state") is not None:
                summary["solved"] = bool(_judge(components, example, saved).get("solved"))
        if tried:
            tried[-1]["solved"] = bool(judged.get("solved"))
            out[idx]["attempts"] = tried
    return out


def _judge(components: Components, example: Mapping[str, object], record: Mapping[str, Any]) -> InstanceEval:
    selected = (record.get("answer_selection") or {}).get("answer")
    return evaluate_instance(
        components, example, deserialize(record["final_state"]), selected if isinstance(selected, str) else None
    )


def instance_counts(finished: int, total: int | None, failed: int | None) -> Summary:
    """Finished, failed and selected instances, kept apart: accuracy is over the finished ones."""
    total = finished if total is None else max(total, finished)
    failed = 0 if failed is None else min(failed, total - finished)
    return {
        "total": total,
        "failed": failed,
        "unfinished": total - finished - failed,
        "accuracy_of": "finished instances",
    }


def _instances_row(summary: Summary) -> str:
    finished, total = summary["instances"], summary.get("total")
    if total is None:
        return str(finished)
    parts = [f"{finished} finished"]
    if summary.get("failed"):
        parts.append(f"{summary['failed']} failed")
    if summary.get("unfinished"):
        parts.append(f"{summary['unfinished']} not finished")
    return ", ".join(parts) + f" (of {total})"


def _faults_row(faults: Mapping[str, float] | None) -> str | None:
    if not faults or not (faults.get("retries") or faults.get("failed_calls")):
        return None
    text = f"{faults['retries']} retries, {faults.get('seconds_lost', 0.0):.1f}s lost"
    return text + (f", {faults['failed_calls']} calls given up" if faults.get("failed_calls") else "")


def _unused_note(inference: Mapping[str, float]) -> str:
    """What tokens and cost include beyond the replies calls used (hedged copies that lost, rejected replies)."""
    unused = inference.get("unused_replies")
    if not unused:
        return ""
    estimated = inference.get("estimated_replies")
    return (
        f" (with {unused:g} replies the server billed and no call used"
        + (f", {estimated:g} of them estimated" if estimated else "")
        + ")"
    )


def _thousands(count: object) -> str:
    """``1 240``: a count as the replay row shows it."""
    return f"{count:,}".replace(",", " ") if isinstance(count, int) else str(count)


def _no_answer(summary: Summary) -> str:
    count = summary.get("no_answer")
    return f"; {count} ended without an answer" if count else ""


def format_table(summary: Summary) -> str:
    inf = summary["inference"]
    of = " of finished" if summary.get("total") is not None else ""
    rows = [
        ("instances", _instances_row(summary)),
        ("solved", f"{summary['solved']} ({summary['accuracy']:.1%}{of})" + _no_answer(summary)),
        ("mean progress", summary["mean_progress"]),
        ("optimal plans", summary["optimal_plans"]),
        ("model calls", f"{inf['calls']} (+{inf['cache_hits']} cached)"),
        ("tokens in / out", f"{inf['tokens_in']} / {inf['tokens_out']}{_unused_note(inf)}"),
        ("model seconds", inf["seconds"]),
        ("seconds / instance", summary["seconds_per_instance"]),
    ]
    figures = summary.get("spend") or spend(inf, summary["solved"])
    answered = (summary.get("faults") or {}).get("server_requests")
    if answered and answered > figures["requests"]:  # the transport also counted hedged copies the server answered
        figures = {**figures, "requests": int(answered)}
    rows += spend_rows(figures, float((summary.get("faults") or {}).get("queued_seconds") or 0.0))
    if summary.get("budget"):
        from lits.runs.results.spend import format_budget

        rows += format_budget(summary["budget"])
    tried = summary.get("pass_at")
    if tried:
        rows.append(
            (
                f"pass@1 / pass@{tried['n']}",
                f"{tried['pass_at_1']:.1%} / {tried['pass_at_n']:.1%} ({tried['attempts_run']} attempts run)",
            )
        )
    notes = summary.get("memory")
    if notes:
        rows.append(
            (
                "memory in prompts",
                f"+{notes['mean_chars']:.0f} chars per prompt (~{notes['mean_chars'] / 4:.0f}"
                f" tokens; at most {notes['max_chars']}), {notes['notes_left_out']} notes left out, "
                f"{notes['notes_dropped']} dropped",
            )
        )
    invalid = parsing.describe(summary.get("parse") or {})
    if invalid is not None:
        constrained = summary.get("constrained_replies")
        if constrained:  # the server could not produce an illegal choice: this is not the model's own rate
            invalid += (
                f" (choices held to the legal ones by the server's {constrained}; the model's own rate: --free-replies)"
            )
        rows.append(("invalid replies", invalid))
    if summary.get("calls_in_flight_avg") is not None:
        rows.append(("calls in flight (avg)", summary["calls_in_flight_avg"]))
    faults = _faults_row(summary.get("faults"))
    if faults is not None:
        rows.append(("server faults", faults))
    counted = summary.get("faults") or {}
    queued = counted.get("queued_calls")
    if queued:  # waiting for a busy server's slot is not a fault
        rows.append(("waited for a server slot", f"{queued} calls, {counted.get('queued_seconds', 0.0):.1f}s"))
    hedged = counted.get("hedged_calls")
    if hedged:  # second copies of slow calls (lits.lm.http.hedging)
        won = counted.get("hedges_won", 0)
        rows.append(("hedged requests", f"{hedged} copies sent, {won} answered first"))
    diversity = summary.get("diversity") or {}
    if diversity.get("repeats_steered_away") or diversity.get("repeats_kept"):
        rows.append(
            (
                "repeated states / calls",
                f"{diversity.get('repeats_steered_away', 0)} steered away, {diversity.get('repeats_kept', 0)} kept",
            )
        )
    skipped = diversity.get("reward_calls_skipped")
    if skipped:
        rows.append(("reward calls skipped", f"{skipped} (scores nothing reads)"))
    replay = summary.get("replay")
    if replay:
        rows.append(
            (
                "replay",
                f"replayed {_thousands(replay.get('replayed'))}, paid {_thousands(replay.get('paid'))}"
                f"{' (offline)' if replay.get('offline') else ''} from {replay.get('from')}",
            )
        )
    rows += [(name, "unknown" if value is None else value) for name, value in summary.get("metrics", {}).items()]
    if inf.get("cost"):
        rows.append(("cost", f"{inf['cost']}{_unused_note(inf)}" if inf.get("unused_replies") else inf["cost"]))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)
