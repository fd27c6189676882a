"""Paired comparison of two runs over the same instances: the accuracy difference with a paired-bootstrap
interval, McNemar's exact test, and the instances each solves that the other does not.

Two methods run on the same problems are compared problem by problem: with ten problems, 4/10 against 3/10 is
well inside the noise, and a table of two accuracies does not say so.  The bootstrap is seeded, so the same
runs always print the same interval.
"""

from __future__ import annotations

import math
import random
from typing import Mapping, TypedDict

#: Bootstrap resamples: the 2.5 % and 97.5 % quantiles move by well under a point between seeds at this count.
RESAMPLES = 10_000
LEVEL = 0.95


class PairedComparison(TypedDict):
    """Run B against run A (the first run given) over the instances both finished."""

    shared: int
    only_in_a: int
    only_in_b: int
    accuracy_a: float | None
    accuracy_b: float | None
    #: accuracy_b - accuracy_a over the shared instances, and its 95 % paired-bootstrap interval.
    difference: float | None
    interval: tuple[float, float] | None
    #: McNemar's exact (binomial) two-sided p-value over the discordant instances.
    p_value: float | None
    solved_by_a_only: int
    solved_by_b_only: int


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs (binomial, p = 1/2)."""
    n = b + c
    if n == 0:
        return 1.0
    tail: float = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def bootstrap_interval(
    differences: list[int], *, resamples: int = RESAMPLES, level: float = LEVEL, seed: int = 0
) -> tuple[float, float]:
    """The percentile interval of the mean of ``differences`` (per-instance solved_b - solved_a), resampling
    instances with replacement."""
    n = len(differences)
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(differences, k=n)) / n for _ in range(resamples))
    lo = means[int(math.floor((1 - level) / 2 * (resamples - 1)))]
    hi = means[int(math.ceil((1 + level) / 2 * (resamples - 1)))]
    return round(lo, 4), round(hi, 4)


def compare_paired(a: Mapping[object, bool], b: Mapping[object, bool]) -> PairedComparison:
    """Run ``b`` against run ``a``; each maps an instance's id to whether it was solved."""
    shared = [key for key in a if key in b]
    only_a = sum(1 for key in shared if a[key] and not b[key])
    only_b = sum(1 for key in shared if b[key] and not a[key])
    out: PairedComparison = {
        "shared": len(shared),
        "only_in_a": len(a) - len(shared),
        "only_in_b": len(b) - len(shared),
        "accuracy_a": None,
        "accuracy_b": None,
        "difference": None,
        "interval": None,
        "p_value": None,
        "solved_by_a_only": only_a,
        "solved_by_b_only": only_b,
    }
    if not shared:
        return out
    n = len(shared)
    out["accuracy_a"] = round(sum(a[k] for k in shared) / n, 4)
    out["accuracy_b"] = round(sum(b[k] for k in shared) / n, 4)
    out["difference"] = round((only_b - only_a) / n, 4)
    out["interval"] = bootstrap_interval([int(b[k]) - int(a[k]) for k in shared])
    out["p_value"] = round(mcnemar_exact(only_a, only_b), 6)
    return out


def describe(name_a: str, name_b: str, paired: PairedComparison) -> str:
    """One line: ``B − A: +10.0 pts [−5.0, +25.0] (95 % paired bootstrap), McNemar p = 0.45; ...``."""
    if not paired["shared"]:
        return f"{name_b} − {name_a}: not paired (no instance in common)"
    lo, hi = paired["interval"] or (0.0, 0.0)
    diff = paired["difference"] or 0.0
    line = (
        f"{name_b} − {name_a}: {100 * diff:+.1f} pts [{100 * lo:+.1f}, {100 * hi:+.1f}] (95 % paired "
        f"bootstrap), McNemar p = {paired['p_value']:.3g}; solved only by {name_b}: "
        f"{paired['solved_by_b_only']}, only by {name_a}: {paired['solved_by_a_only']}, "
        f"over {paired['shared']} shared instances"
    )
    unshared = paired["only_in_a"] + paired["only_in_b"]
    if unshared:
        line += f" ({unshared} instances in only one run left out)"
    return line
