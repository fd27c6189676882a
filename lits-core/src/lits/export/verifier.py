"""The verifier's report card: how well the reward model's step scores ranked what the search found.

A node's score is its ``fast_reward`` (the judge's or PRM's score of the step, before the step ran); a node
is positive when a correct outcome lies under it (:mod:`lits.export.trees`' Monte-Carlo outcomes: a correct
terminal under it, or a backed-up rollout through it that ended correct), negative when its outcomes are all
wrong, and left out when nothing under it was finished (a pruned node) or it was never scored.  From those:

* AUROC of scores against labels (Mann-Whitney U, ties counted half), overall and by depth;
* a calibration table: 10 equal-width score bins, each with its mean score, share correct and count;
* the judge's position preference: per group of scored siblings, whether the top score went to the first
  candidate (the first shown, when the judge saw them together in a shuffled order; else the first proposed)
  against the 1/k chance, with a Wilson interval;
* the confident-but-wrong nodes: the highest-scored negatives;
* process against outcome: whether the chosen path's mean step score (at least 0.5) agreed with the outcome.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from lits.export.rows import step_text
from lits.export.trees import InstanceTree, RunTrees
from lits.structures.node import SearchNode

BINS = 10
WORST = 10


@dataclass(frozen=True)
class ScoredNode:
    """One labelled, scored node."""

    instance: str
    node: int
    depth: int
    score: float
    correct: bool
    step: str


def auroc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """The probability that a random positive scores above a random negative, ties counting half (the
    Mann-Whitney U over the product of the class sizes); None when either class is empty."""
    if len(scores) != len(labels):
        raise ValueError("scores and labels differ in length")
    positives = sum(1 for y in labels if y)
    negatives = len(labels) - positives
    if not positives or not negatives:
        return None
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    rank_sum = 0.0
    i = 0
    while i < len(order):  # average ranks (1-based) over runs of equal scores
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        mid = (i + j) / 2 + 1
        rank_sum += sum(mid for k in range(i, j + 1) if labels[order[k]])
        i = j + 1
    u = rank_sum - positives * (positives + 1) / 2
    return u / (positives * negatives)


def calibration(scores: Sequence[float], labels: Sequence[bool], bins: int = BINS) -> list[dict[str, Any]]:
    """``bins`` equal-width bins over [0, 1] (a score of 1 in the last): range, count, mean score, share
    correct (None for an empty bin)."""
    table: list[dict[str, Any]] = []
    members: list[list[int]] = [[] for _ in range(bins)]
    for i, s in enumerate(scores):
        members[min(bins - 1, max(0, int(s * bins)))].append(i)
    for b, idx in enumerate(members):
        table.append(
            {
                "lo": round(b / bins, 4),
                "hi": round((b + 1) / bins, 4),
                "count": len(idx),
                "mean_score": round(sum(scores[i] for i in idx) / len(idx), 4) if idx else None,
                "share_correct": round(sum(1 for i in idx if labels[i]) / len(idx), 4) if idx else None,
            }
        )
    return table


def wilson(hits: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95 % by default) for a share of ``hits`` in ``n``."""
    if n == 0:
        return 0.0, 1.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def position_preference(groups: Sequence[Sequence[float]]) -> dict[str, Any]:
    """How often the top score of a group (scores in the order the candidates were listed) went to the first:
    a group whose top is shared by t candidates, the first among them, counts 1/t.  ``chance`` is the mean of
    1/k; the interval is Wilson's around the observed share."""
    kept = [list(g) for g in groups if len(g) >= 2]
    if not kept:
        return {"groups": 0, "first_top": None, "chance": None, "interval": None}
    hits = 0.0
    for g in kept:
        top = max(g)
        tied = sum(1 for s in g if s == top)
        hits += 1 / tied if g[0] == top else 0.0
    n = len(kept)
    lo, hi = wilson(hits, n)
    return {
        "groups": n,
        "first_top": round(hits / n, 4),
        "chance": round(sum(1 / len(g) for g in kept) / n, 4),
        "interval": [round(lo, 4), round(hi, 4)],
    }


def _score(node: SearchNode) -> float | None:
    """The node's step score, or None when the search never scored it (the root, BFS's unscored last depth, a
    reward model with no opinion)."""
    details = node.fast_reward_details or {}
    if node.parent is None or "unscored" in details or (not details and not node.fast_reward):
        return None
    return float(node.fast_reward)


def _labelled(tree: InstanceTree) -> list[ScoredNode]:
    out = []
    for node in tree.nodes():
        score = _score(node)
        value = tree.values.get(node.id)
        if score is None or value is None or not value.outcomes:
            continue
        out.append(ScoredNode(tree.id, node.id, node.depth, score, value.correct > 0, step_text(node)))
    return out


def _sibling_groups(tree: InstanceTree) -> tuple[list[list[float]], int]:
    """Each parent's scored children's scores in the order the judge saw them, and how many groups were judged
    together in a shown order."""
    groups, shown = [], 0
    for parent in tree.nodes():
        scored = [(c, s) for c in parent.children if (s := _score(c)) is not None]
        if len(scored) < 2:
            continue
        if all(_shown_at(c) is not None for c, _ in scored):
            scored.sort(key=lambda cs: _shown_at(cs[0]) or 0)
            shown += 1
        else:
            scored.sort(key=lambda cs: cs[0].id)
        groups.append([s for _, s in scored])
    return groups, shown


def _shown_at(node: SearchNode) -> int | None:
    """Where the judge listed the node among the siblings it scored together (1 = first), if it did."""
    place = (node.fast_reward_details or {}).get("shown_at")
    return place if isinstance(place, int) else None


def _path_score(tree: InstanceTree) -> float | None:
    scores = [s for n in tree.selected if (s := _score(n)) is not None]
    return sum(scores) / len(scores) if scores else None


def report(run: RunTrees, worst: int = WORST) -> dict[str, Any]:
    """The ``verifier`` section of ``eval_results.json`` for a graded search run."""
    nodes = [n for tree in run.instances for n in _labelled(tree)]
    scores = [n.score for n in nodes]
    labels = [n.correct for n in nodes]
    by_depth: dict[int, list[ScoredNode]] = {}
    for n in nodes:
        by_depth.setdefault(n.depth, []).append(n)
    groups: list[list[float]] = []
    shown = 0
    for tree in run.instances:
        found, together = _sibling_groups(tree)
        groups += found
        shown += together
    paths = [(s, t.solved) for t in run.instances if (s := _path_score(t)) is not None]
    agree = sum(1 for s, solved in paths if (s >= 0.5) == solved)
    wrong = sorted((n for n in nodes if not n.correct), key=lambda n: (-n.score, n.instance, n.node))[:worst]
    preference = position_preference(groups)
    preference["judged_together"] = shown
    return {
        "score": "fast_reward",
        "labels_from": sorted({t.source for t in run.instances}),
        "nodes": len(nodes),
        "positive": sum(labels),
        "auroc": _round(auroc(scores, labels)),
        "by_depth": [
            {
                "depth": d,
                "nodes": len(ns),
                "positive": sum(n.correct for n in ns),
                "auroc": _round(auroc([n.score for n in ns], [n.correct for n in ns])),
            }
            for d, ns in sorted(by_depth.items())
        ],
        "calibration": calibration(scores, labels),
        "position": preference,
        "confident_wrong": [
            {"instance": n.instance, "node": n.node, "depth": n.depth, "score": round(n.score, 4), "step": n.step[:200]}
            for n in wrong
        ],
        "process_vs_outcome": {
            "instances": len(paths),
            "agree": round(agree / len(paths), 4) if paths else None,
            "auroc": _round(auroc([s for s, _ in paths], [o for _, o in paths])),
        },
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def format_report(section: dict[str, Any]) -> str:
    """A short text report of a ``verifier`` section."""
    lines = [
        f"verifier: {section['nodes']} scored nodes with an outcome ({section['positive']} reach a correct "
        f"answer); AUROC {_fmt(section['auroc'])}"
    ]
    if section["auroc"] is None:
        lines[0] += " (needs both nodes that reach a correct answer and nodes that do not)"
    lines.append(
        "  by depth: " + ", ".join(f"{d['depth']}: {_fmt(d['auroc'])} (n={d['nodes']})" for d in section["by_depth"])
    )
    lines.append("  calibration (score bin: mean score / share correct / n):")
    for b in section["calibration"]:
        if b["count"]:
            lines.append(
                f"    {b['lo']:.1f}-{b['hi']:.1f}: {b['mean_score']:.3f} / {b['share_correct']:.3f} / {b['count']}"
            )
    pos = section["position"]
    if pos["groups"]:
        lo, hi = pos["interval"]
        lines.append(
            f"  position: the first candidate got the top score in {pos['first_top']:.0%} of "
            f"{pos['groups']} sibling groups (95% {lo:.0%}-{hi:.0%}); chance {pos['chance']:.0%}"
        )
    else:
        lines.append("  position: no group of two or more scored siblings")
    pvo = section["process_vs_outcome"]
    agree = "n/a" if pvo["agree"] is None else f"{pvo['agree']:.0%}"
    lines.append(
        f"  process vs outcome: the chosen path's mean step score (>= 0.5) agreed with the outcome in "
        f"{agree} of {pvo['instances']} instances; AUROC {_fmt(pvo['auroc'])}"
    )
    confident = [n for n in section["confident_wrong"] if n["score"] >= 0.5]
    lines.append("  confident but wrong (score >= 0.5, no correct answer under it):" + ("" if confident else " none"))
    for n in confident[:5]:
        step = n["step"].replace("\n", " ")
        lines.append(
            f"    {n['score']:.3f} instance {n['instance']} node {n['node']} (depth {n['depth']}): {step[:70]}"
        )
    return "\n".join(lines)


def verifier_section(root: str | Path) -> dict[str, Any]:
    """The report for the run at ``root``; :class:`UserError` in one line for a run it cannot grade (a chain, a
    run with unfinished instances, a run without gold answers)."""
    from lits.errors import UserError
    from lits.export.trees import read_run
    from lits.runs.results.artifacts import RunDir

    root = Path(root)
    run = read_run(root)
    if run.command == "chain":
        raise UserError(
            f"--verifier: {root} is a chain run; the verifier report needs a search run's scored tree (lits search)"
        )
    if run.unfinished:
        raise UserError(
            f"--verifier: {root} has {run.unfinished} unfinished instance(s); finish it first: "
            f"{RunDir(root).resume_hint(run.command)}"
        )
    if run.components.task_type != "env_grounded" and not run.with_gold:
        raise UserError(
            f"--verifier: {root} has no gold answers (no instance's example has an 'answer'); "
            "step scores can only be checked against a dataset with answers"
        )
    if not run.instances:
        raise UserError(
            f"--verifier: {root} kept no search tree (checkpoints/*.journal.jsonl); rerun it with its journals kept"
        )
    return report(run)
