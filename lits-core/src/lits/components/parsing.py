"""What the model's replies were worth, counted per instance and component.

Every component that parses model output says here how each reply went:
parsed, or unparseable (``replies`` counts both); a re-ask after a malformed
reply; a fallback (an action or a score made up because no reply was
usable).  The runner takes an instance's counts into its result file when
it finishes, so the summary, ``eval.log`` and the viewer can say e.g.
"invalid replies 12.0% (17/142), re-asks 9, fallbacks 3" instead of hiding
a model that cannot follow the format behind fallbacks.
"""

from __future__ import annotations

import threading

from lits.runtime.observability import context_tag

FIELDS = ("replies", "unparseable", "reasks", "fallbacks")
#: Where a checkpoint (a search's journal, a chain's state file) keeps its instance's counts so far.
CHECKPOINT_KEY = "parse_counts"

_lock = threading.Lock()
_counts: dict[object, dict[str, dict[str, int]]] = {}


def _add(field: str, amount: int, component: str | None) -> None:
    if amount <= 0:
        return
    who = component or str(context_tag("component") or "other")
    with _lock:
        of_instance = _counts.setdefault(context_tag("instance"), {})
        per = of_instance.get(who)
        if per is None:
            per = of_instance[who] = dict.fromkeys(FIELDS, 0)
        per[field] += amount


def count_reply(parsed: bool, component: str | None = None) -> None:
    """One model reply was read: ``parsed`` says whether it had the expected form."""
    _add("replies", 1, component)
    if not parsed:
        _add("unparseable", 1, component)


def count_reask(component: str | None = None) -> None:
    """A malformed reply was answered with its parse error and asked again."""
    _add("reasks", 1, component)


def count_fallback(amount: int = 1, component: str | None = None) -> None:
    """``amount`` actions or scores were made up because the replies were unusable."""
    _add("fallbacks", amount, component)


def take(instance: object) -> dict[str, dict[str, int]]:
    """The counts recorded for ``instance`` by component (removed from memory), in a stable order."""
    with _lock:
        found = _counts.pop(instance, {})
    return {who: dict(found[who]) for who in sorted(found)}


def snapshot(instance: object) -> dict[str, dict[str, int]]:
    """The counts so far for ``instance`` by component, kept (what a checkpoint saves with the instance)."""
    with _lock:
        found = _counts.get(instance, {})
        return {who: dict(found[who]) for who in sorted(found)}


def restore(instance: object, counts: object) -> None:
    """Counts a checkpoint saved for ``instance`` replace the ones held: a resumed instance then counts the
    replies parsed before the resume too (those after the checkpoint are parsed, and counted, again)."""
    kept = (
        {
            str(who): {field: int(per.get(field, 0)) for field in FIELDS}
            for who, per in counts.items()
            if isinstance(per, dict)
        }
        if isinstance(counts, dict)
        else {}
    )
    with _lock:
        _counts[instance] = kept


def forget(instance: object) -> None:
    """Drop what a failed attempt counted, so a retry of the instance counts once."""
    with _lock:
        _counts.pop(instance, None)


def total(by_component: dict[str, dict[str, int]]) -> dict[str, int]:
    """The counts of all components together."""
    out = dict.fromkeys(FIELDS, 0)
    for counts in by_component.values():
        for field in FIELDS:
            out[field] += int(counts.get(field, 0))
    return out


def describe(counts: dict[str, int]) -> str | None:
    """``"12.0% (17/142), re-asks 9, fallbacks 3"``; None when no reply was parsed."""
    replies = counts.get("replies", 0)
    if not replies:
        return None
    bad = counts.get("unparseable", 0)
    return f"{bad / replies:.1%} ({bad}/{replies}), re-asks {counts.get('reasks', 0)}, fallbacks {counts.get('fallbacks', 0)}"
