"""The ``--budget`` setting (``tokens=20000``): its units and how it reads, apart from the rounds that spend
it, so the run's spec and record can check and record it without importing the runner."""

from __future__ import annotations

import math
from dataclasses import dataclass

from lits.errors import UserError

UNITS = ("tokens", "calls", "seconds")
#: How the budget was spent, in the run's folder (``eval_results.json`` carries it as ``budget``).
BUDGET_FILE = "budget.json"


@dataclass(frozen=True)
class RunBudget:
    """The run's budget: ``total`` of ``unit`` (one of :data:`UNITS`)."""

    unit: str
    total: float

    def as_setting(self) -> str:
        """As ``config.json`` records it (and ``--budget`` takes it)."""
        return f"{self.unit}={int(self.total) if self.total.is_integer() else self.total}"


def parse_budget(text: str) -> RunBudget:
    """``tokens=20000``, ``calls=300`` or ``seconds=600`` (model seconds); anything else is one line."""
    unit, sep, value = str(text).partition("=")
    unit = unit.strip()
    try:
        total = float(value)
    except ValueError:
        total = math.nan
    if not sep or unit not in UNITS or not math.isfinite(total) or total <= 0:
        raise UserError(
            f"--budget must be UNIT=AMOUNT, UNIT one of {', '.join(UNITS)} and AMOUNT more than 0 "
            f"(e.g. tokens=20000), not {text!r}"
        )
    return RunBudget(unit, total)


def budget_of(setting: object) -> RunBudget | None:
    """The budget recorded in ``config.json`` (None: the run had none)."""
    return parse_budget(setting) if isinstance(setting, str) else None
