"""One instance's search tree (or chain) as flat node rows: what :meth:`RunResult.tree` returns and ``lits view``
draws.

The journal is read here without :meth:`TreeJournal.replay`: replay truncates a
torn last line, which for a run that is still writing is a line being written,
and a viewer must never change a run.  The records are merged the way
:meth:`TreeJournal.compact` merges them (later fields win, parents by id), on
the JSON itself, so no plugin type has to be importable to look at a tree.
Nothing here knows a search by name: a node's ``born`` field says after how
many iterations it exists, and visits and Q are recomputed from the journaled
backed-up paths by the rule that defines them
(:func:`lits.structures.node.backpropagate`), so a third-party search that
builds its tree through :class:`~lits.agents.tree.base.BaseTreeSearch` shows
up like ours.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Mapping, NotRequired, TypedDict

from lits.io import layout
from lits.structures.node import PARENT_STEPS, backpropagate

if TYPE_CHECKING:
    from lits.runs.record import RunRecord

#: Characters of a label drawn beside a node (the details panel has the whole text).
LABEL_CHARS = 60
#: Characters of one state or step shown in the details panel.
DETAIL_CHARS = 4000


def read_journal(path: Path) -> list[dict[str, Any]]:
    """The journal's whole lines (read-only: a torn last line of a live run is only skipped)."""
    records: list[dict[str, Any]] = []
    try:
        raw = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return records
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line being written, or torn by a crash: the rest is still worth seeing
        if isinstance(record, dict):
            records.append(record)
    return records


def merge_records(records: list[dict[str, Any]]) -> tuple[dict[int, dict[str, Any]], dict[int, int], list[int]]:
    """Flat nodes by id (last write wins), the iteration each node first appeared at, and backed-up leaves."""
    nodes: dict[int, dict[str, Any]] = {}
    first_seen: dict[int, int] = {}
    leaves: list[int] = []
    for record in records:
        iteration = int(record.get("iteration") or 0)
        for flat in record.get("nodes") or []:
            node_id = int(flat["id"])
            if node_id in nodes:
                nodes[node_id].update(flat)
            else:
                nodes[node_id] = dict(flat)
                first_seen[node_id] = iteration
        leaves.extend(int(x) for x in record.get("paths") or [])
    return nodes, first_seen, leaves


def text_of(value: object, limit: int = DETAIL_CHARS) -> str:
    """A readable one-string form of an action, step or state (type tags dropped)."""
    if value is None:
        return ""
    text = "\n".join(_readable(value, 0))
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"


def _readable(value: object, indent: int) -> list[str]:
    """``key: value`` lines (nested by indent) instead of JSON: states are read by people here."""
    pad = "  " * indent
    if isinstance(value, dict):
        fields = {k: v for k, v in value.items() if k != "__type__" and v not in (None, "", [], {})}
        if set(fields) == {"text"}:
            return [pad + str(fields["text"])]
        lines: list[str] = []
        for key, item in fields.items():
            if isinstance(item, (dict, list)):
                inner = _readable(item, indent + 1)
                if len(inner) == 1:
                    lines.append(f"{pad}{key}: {inner[0].strip()}")
                else:
                    lines += [f"{pad}{key}:", *inner]
            else:
                lines.append(f"{pad}{key}: {item}")
        return lines
    if isinstance(value, list):
        if all(not isinstance(v, (dict, list)) for v in value):
            return [pad + json.dumps(value, ensure_ascii=False)]
        return [line for i, item in enumerate(value) for line in [f"{pad}- [{i}]", *_readable(item, indent + 1)]]
    return [pad + str(value)]


def own_state(state: object) -> object:
    """The part of a state this node added: its last step (earlier steps belong to its ancestors; a journal
    may hold only the steps after its parent's, and their number)."""
    if isinstance(state, dict) and isinstance(state.get("steps"), list) and state["steps"]:
        rest = {k: v for k, v in state.items() if k not in ("steps", "__type__", PARENT_STEPS)}
        number = len(state["steps"]) + int(state.get(PARENT_STEPS) or 0)
        shown: dict[str, object] = {f"step {number} (this node's)": state["steps"][-1]}
        return {**shown, **{k: v for k, v in rest.items() if not isinstance(v, (dict, list)) or len(str(v)) < 400}}
    return state


def step_label(step: object, action: object = None) -> str:
    """What to write beside a node: the action's text, else the step's answer or thought."""
    for candidate in (action, step):
        if isinstance(candidate, str) and candidate:
            return _one_line(candidate)
        if isinstance(candidate, dict):
            for key in ("text", "action", "answer", "think", "assistant_message"):
                value = candidate.get(key)
                if isinstance(value, str) and value:
                    return _one_line(value)
                if isinstance(value, dict) and value:
                    return _one_line(text_of(value, LABEL_CHARS * 2).replace("\n", " "))
    return ""


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def step_error(step: object) -> str | None:
    """The step's error (an invalid proposal: an illegal move, an unparsable tool call), if any."""
    if isinstance(step, dict) and step.get("error"):
        return str(step["error"])
    return None


def _backed_up_values(
    nodes: dict[int, dict[str, Any]], leaves: list[int], aggregate: str
) -> tuple[dict[int, int], dict[int, float]]:
    """Visits and Q per node from the journaled paths (what backed-up paths mean)."""
    shadow = {
        i: SimpleNamespace(reward=float(n.get("reward") or 0.0), cum_rewards=[], visits=0) for i, n in nodes.items()
    }
    for leaf in leaves:
        path: list[int] = []
        node_id: int | None = leaf
        while node_id is not None and node_id in nodes:
            path.append(node_id)
            node_id = nodes[node_id].get("parent")
        backpropagate([shadow[i] for i in reversed(path)], aggregate)
    visits = {i: s.visits for i, s in shadow.items() if s.visits}
    q = {i: sum(s.cum_rewards) / len(s.cum_rewards) for i, s in shadow.items() if s.cum_rewards}
    return visits, q


def _born(nodes: dict[int, dict[str, Any]], first_seen: dict[int, int]) -> dict[int, int]:
    """After how many iterations each node exists (drives the iteration slider).

    A node says so itself (``born``, set when the search created it); a journal
    written before nodes did falls back to the line that first held the node.
    """
    born = {i: int(n["born"]) if isinstance(n.get("born"), int) else first_seen.get(i, 0) for i, n in nodes.items()}
    born[0] = 0
    return born


def search_tree(journal: Path, aggregate: str, selected: list[int], terminal_ids: set[int]) -> InstanceTree | None:
    """The tree of a search instance from its journal (None when it has not checkpointed yet)."""
    records = read_journal(journal)
    nodes, first_seen, leaves = merge_records(records)
    if 0 not in nodes:
        return None
    visits, q = _backed_up_values(nodes, leaves, aggregate) if leaves else ({}, {})
    born = _born(nodes, first_seen)
    on_path = set(selected)
    rows = []
    for i in sorted(nodes):
        flat = nodes[i]
        rows.append(
            node_row(
                i,
                flat.get("parent"),
                flat,
                visits=visits.get(i, 0) if leaves else None,
                q=q.get(i) if leaves else None,
                born=born.get(i, 0),
                on_path=i in on_path,
                terminal=bool(flat.get("is_terminal")) or i in terminal_ids,
            )
        )
    last = records[-1]
    proposals = [[str(a), bool(d)] for rec in records for a, d in rec.get("proposals") or []]
    return {
        "kind": "search",
        "nodes": rows,
        "paths": leaves,
        "selected": selected,
        "iterations": int(last.get("iteration") or 0),
        "stats": last.get("stats") or {},
        "proposals": proposals,
        "aggregate": aggregate,
        "compact": bool(last.get("compact")),
    }


class NodeRow(TypedDict):
    """One node of the page's tree (see :func:`node_row`)."""

    id: int
    parent: int | None
    depth: int
    #: The action that led here, as text ("" at the root).
    action: str
    label: str
    fast_reward: float | None
    reward: float | None
    visits: int | None
    q: float | None
    born: int
    terminal: bool
    on_path: bool
    materialized: bool
    error: str | None
    detail: dict[str, object]
    score: NotRequired[float | None]


class InstanceTree(TypedDict):
    """One instance's tree as the page draws it: a search's (from its journal, or its chosen path alone) or
    a chain's steps as a path."""

    kind: str
    nodes: list[NodeRow]
    paths: list[int]
    selected: list[int]
    iterations: int
    stats: dict[str, object]
    proposals: list[list[object]]
    aggregate: str | None
    compact: bool
    path_only: NotRequired[bool]


def node_row(
    node_id: int,
    parent: int | None,
    flat: dict[str, Any],
    *,
    visits: int | None,
    q: float | None,
    born: int,
    on_path: bool,
    terminal: bool,
) -> NodeRow:
    """One node as the page draws it; ``detail`` is what the side panel shows on a click."""
    step, action, state = flat.get("step"), flat.get("action"), flat.get("state")
    action_text = text_of(action) or text_of(step)
    detail = {
        "action": action_text,
        "step": text_of(step),
        "state": text_of(own_state(state)) if state is not None else "",
        "fast_reward_details": flat.get("fast_reward_details") or {},
        "reward_details": flat.get("reward_details") or {},
    }
    if flat.get("branching"):  # Chain-in-Tree: whether the node needed branching, and why
        detail["branching"] = flat["branching"]
    row: NodeRow = {
        "id": node_id,
        "parent": parent,
        "depth": int(flat.get("depth") or 0),
        "action": action_text,
        "label": step_label(step, action) or ("root" if parent is None else f"node {node_id}"),
        "fast_reward": _num(flat.get("fast_reward")),
        "reward": _num(flat.get("reward")),
        "visits": visits,
        "q": None if q is None else round(q, 4),
        "born": born,
        "terminal": terminal,
        "on_path": on_path,
        "materialized": state is not None or parent is None,
        "error": step_error(step),
        "detail": detail,
    }
    if "cum_reward" in flat:
        row["score"] = _num(flat.get("cum_reward"))
    return row


def _num(value: object) -> float | None:
    return round(float(value), 4) if isinstance(value, (int, float)) else None


def path_only_tree(path: list[dict[str, Any]], terminal_ids: set[int]) -> InstanceTree:
    """The selected path alone, for a finished search whose journal was deleted (paths/ survives)."""
    rows, parent = [], None
    for flat in path:
        node_id = int(flat["id"])
        visits = flat.get("visits")
        cum = flat.get("cum_rewards")
        q = sum(cum) / len(cum) if isinstance(cum, list) and cum else None
        rows.append(
            node_row(
                node_id,
                parent,
                flat,
                visits=visits if isinstance(visits, int) else None,
                q=q,
                born=0,
                on_path=True,
                terminal=bool(flat.get("is_terminal")) or node_id in terminal_ids,
            )
        )
        parent = node_id
    return {
        "kind": "search",
        "nodes": rows,
        "paths": [],
        "selected": [r["id"] for r in rows],
        "iterations": 0,
        "stats": {},
        "proposals": [],
        "aggregate": None,
        "compact": True,
        "path_only": True,
    }


def chain_tree(final_state: object, init: object = None) -> InstanceTree:
    """A chain run as a path: the start, then one node per step."""
    steps = final_state.get("steps") if isinstance(final_state, dict) else None
    steps = steps if isinstance(steps, list) else []
    start = {k: v for k, v in final_state.items() if k != "steps"} if isinstance(final_state, dict) else {}
    rows = [
        node_row(
            0, None, {"state": start or init, "depth": 0}, visits=None, q=None, born=0, on_path=True, terminal=False
        )
    ]
    for i, step in enumerate(steps, start=1):
        flat = {
            "step": step,
            "action": step.get("action") if isinstance(step, dict) else step,
            "state": step,
            "depth": i,
        }
        rows.append(node_row(i, i - 1, flat, visits=None, q=None, born=i, on_path=True, terminal=i == len(steps)))
    return {
        "kind": "chain",
        "nodes": rows,
        "paths": [],
        "selected": list(range(len(rows))),
        "iterations": len(steps),
        "stats": {},
        "proposals": [],
        "aggregate": None,
        "compact": True,
    }


def instance_tree(
    root: Path, idx: int, command: str, config: RunRecord, result: Mapping[str, Any] | None
) -> InstanceTree | None:
    """A search instance's tree from its journal, or a chain instance's steps as a path (of the last attempt,
    under ``--attempts``)."""
    if command == "chain":
        if result:
            state = result.get("final_state")
        else:
            state = (read_json(root / layout.CHECKPOINTS / layout.chain_checkpoint_name(idx)) or {}).get("state")
        return chain_tree(state) if state is not None else None
    path = [n for n in read_json(root / layout.path(idx)) or [] if isinstance(n, dict) and "id" in n]
    selected = [int(n["id"]) for n in path]
    terminal = {int(n["id"]) for n in read_json(root / layout.terminal_nodes(idx)) or [] if isinstance(n, dict)}
    aggregate = str(config.search_args.get("aggregate") or "mean")
    last = len((result or {}).get("attempts") or [None]) - 1
    journal = root / layout.attempt_checkpoints(last) / layout.journal_name(idx)
    tree = search_tree(journal, aggregate, selected, terminal)
    return tree if tree is not None or not path else path_only_tree(path, terminal)


def read_json(path: Path) -> Any:
    """A JSON file's content, or None when it is missing or not (yet) whole."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
