"""Model calls from ``inference.jsonl``: per instance, per node, and the cost pictures' numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, TypedDict, cast

from lits.runtime.observability import UNUSED_REPLY

if TYPE_CHECKING:
    from lits.runs.results.tree import InstanceTree, NodeRow

#: At most this many points in a calls-in-flight curve (the page draws it as steps).
CURVE_POINTS = 2000
#: A call shared by more nodes than this is listed only on the root (as not attributable).
SHARED_MAX = 64
#: Fields of one call in the page, in this order (rows are lists: 10,000 calls stay small).
CALL_FIELDS = (
    "time",
    "seconds",
    "component",
    "phase",
    "depth",
    "iteration",
    "tokens_in",
    "tokens_out",
    "cached",
    "cost",
    "prompt",
    "reply",
    "kind",
)


class CallRecord(TypedDict, total=False):
    """One line of ``inference.jsonl`` (:meth:`lits.runtime.observability.InferenceRecord.as_dict`); read
    defensively, as a log written by an older version may lack a field."""

    model: str
    kind: str
    tokens_in: int
    tokens_out: int
    seconds: float
    cost: float
    cached: bool
    time: float
    context: dict[str, object]
    prompt: object
    reply: object
    estimated: bool
    requests: int
    tokens_cached: int
    server_seconds: float
    queued_seconds: float


def read_calls(path: Path) -> list[CallRecord]:
    """Every whole line of the inference log (a damaged or half-written line is left out)."""
    calls: list[CallRecord] = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return calls
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            calls.append(cast(CallRecord, record))
    calls.sort(key=lambda r: float(r.get("time") or 0.0))
    return calls


def call_row(record: CallRecord) -> list[object]:
    """One call as the page keeps it (see CALL_FIELDS); prompt and reply only where the log has them."""
    ctx = record.get("context") or {}
    return [
        round(float(record.get("time") or 0.0), 4),
        round(float(record.get("seconds") or 0.0), 5),
        ctx.get("component"),
        ctx.get("phase"),
        ctx.get("depth"),
        ctx.get("iteration"),
        int(record.get("tokens_in") or 0),
        int(record.get("tokens_out") or 0),
        bool(record.get("cached")),
        float(record.get("cost") or 0.0),
        record.get("prompt"),
        record.get("reply"),
        record.get("kind"),
    ]


class Totals(TypedDict, total=False):
    calls: int
    cache_hits: int
    tokens_in: int
    tokens_out: int
    seconds: float
    cost: float
    requests: int
    queued_seconds: float
    #: Only when some call's server reported it (as :class:`lits.runtime.observability.InferenceLog` totals it).
    tokens_cached: int


def totals(calls: list[CallRecord]) -> Totals:
    """Paid calls, cache hits, tokens, model seconds and cost (as the run's summary counts them)."""
    paid = [c for c in calls if not c.get("cached")]
    out: Totals = {
        "calls": sum(1 for c in paid if c.get("kind") != UNUSED_REPLY),  # an unused reply costs, but is no call
        "cache_hits": len(calls) - len(paid),
        "tokens_in": sum(int(c.get("tokens_in") or 0) for c in paid),
        "tokens_out": sum(int(c.get("tokens_out") or 0) for c in paid),
        "seconds": round(sum(float(c.get("seconds") or 0.0) for c in paid), 3),
        "cost": round(sum(float(c.get("cost") or 0.0) for c in paid), 6),
        "requests": sum(int(c.get("requests", 1)) for c in paid if c.get("kind") != UNUSED_REPLY),
        "queued_seconds": round(sum(float(c.get("queued_seconds") or 0.0) for c in paid), 3),
    }
    reported = [int(c.get("tokens_cached") or 0) for c in paid if "tokens_cached" in c]
    if reported:
        out["tokens_cached"] = sum(reported)
    return out


def breakdown(calls: list[CallRecord], key: str) -> list[dict[str, object]]:
    """Calls and tokens grouped by a context tag (component, phase or depth), in a stable order."""
    groups: dict[str, list[CallRecord]] = {}
    for call in calls:
        value = (call.get("context") or {}).get(key)
        groups.setdefault("—" if value is None else str(value), []).append(call)

    def order(name: str) -> tuple[int, int | str]:
        return (0, int(name)) if name.lstrip("-").isdigit() else (1, name)

    return [{"name": name, **totals(group)} for name, group in sorted(groups.items(), key=lambda g: order(g[0]))]


def in_flight(calls: list[CallRecord]) -> list[list[float]]:
    """Calls in flight over time: ``[seconds since the first call, calls running]`` at each change.

    A call's record is written when it ends; it started ``seconds`` earlier.
    """
    events: list[tuple[float, int]] = []
    for call in calls:
        if call.get("cached"):
            continue
        end = float(call.get("time") or 0.0)
        events.append((end - float(call.get("seconds") or 0.0), 1))
        events.append((end, -1))
    if not events:
        return []
    events.sort()
    start = events[0][0]
    points: list[list[float]] = []
    running = 0
    for t, change in events:
        running += change
        point = [round(t - start, 4), running]
        if points and points[-1][0] == point[0]:
            points[-1] = point
        else:
            points.append(point)
    if len(points) > CURVE_POINTS:  # keep the peaks: the highest count in each bucket
        step = len(points) / CURVE_POINTS
        points = [
            max(points[int(i * step) : int((i + 1) * step)] or [points[-1]], key=lambda p: p[1])
            for i in range(CURVE_POINTS)
        ] + [points[-1]]
    return points


def cost_pictures(calls: list[CallRecord]) -> dict[str, object]:
    """The numbers behind the cost pictures of a run or an instance."""
    return {
        "by_component": breakdown(calls, "component"),
        "by_phase": breakdown(calls, "phase"),
        "by_depth": breakdown(calls, "depth"),
        "in_flight": in_flight(calls),
    }


def calls_by_instance(calls: list[CallRecord]) -> dict[int, list[CallRecord]]:
    out: dict[int, list[CallRecord]] = {}
    for call in calls:
        idx = (call.get("context") or {}).get("instance")
        if isinstance(idx, int):
            out.setdefault(idx, []).append(call)
    return out


def attribute_calls(tree: InstanceTree, calls: list[CallRecord]) -> dict[int, list[int]]:
    """Which calls were made for which node: indices into ``calls`` by node id.

    Calls carry (iteration, depth), not node ids.  MCTS works on one path per
    iteration, so a call at depth d in iteration k is for that path's node at
    depth d (exact).  A chain's call at depth d made step d+1.  Otherwise (BFS
    expands a whole depth at once) a call goes to every node expanded at its
    depth in its iteration, and the panel says the calls are shared.
    """
    nodes = {n["id"]: n for n in tree["nodes"]}
    out: dict[int, list[int]] = {}
    if tree["kind"] == "chain":
        for i, call in enumerate(calls):
            depth = (call.get("context") or {}).get("depth")
            step = depth + 1 if isinstance(depth, int) and depth + 1 in nodes else 0
            out.setdefault(step, []).append(i)
        return out
    paths = [_path_ids(nodes, leaf) for leaf in tree["paths"]]
    parents = {n["parent"] for n in tree["nodes"] if n["parent"] is not None}
    expanded: dict[int, list[int]] = {}
    every: dict[int, list[int]] = {}
    for node in tree["nodes"]:
        every.setdefault(node["depth"], []).append(node["id"])
        if node["id"] in parents:  # a policy call at depth d expanded a node of depth d
            expanded.setdefault(node["depth"], []).append(node["id"])
    for i, call in enumerate(calls):
        ctx = call.get("context") or {}
        depth, iteration = ctx.get("depth"), ctx.get("iteration")
        owners: list[int] | None = None
        if paths and isinstance(iteration, int) and isinstance(depth, int) and iteration < len(paths):
            path = paths[iteration]
            owners = [path[depth]] if depth < len(path) else None
        elif isinstance(depth, int):
            owners = expanded.get(depth) or every.get(depth)
            owners = owners if owners and len(owners) <= SHARED_MAX else None
        for node_id in owners or [0]:
            out.setdefault(node_id, []).append(i)
    return out


def _path_ids(nodes: Mapping[int, NodeRow], leaf: int) -> list[int]:
    path: list[int] = []
    node_id: int | None = leaf
    while node_id is not None and node_id in nodes:
        path.append(node_id)
        node_id = nodes[node_id]["parent"]
    return path[::-1]
