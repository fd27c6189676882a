"""``BaseTreeSearch`` shows a search author a small surface: every public method is one its docstring names."""

from __future__ import annotations

import inspect
import re

from lits.agents.tree.base import BaseTreeSearch


def _public_methods(cls: type) -> set[str]:
    return {name for name, member in vars(cls).items() if inspect.isfunction(member) and not name.startswith("_")}


def test_every_public_method_of_the_search_base_is_named_in_its_docstring() -> None:
    named = set(re.findall(r":meth:`(\w+)`", BaseTreeSearch.__doc__ or ""))
    assert _public_methods(BaseTreeSearch) == named
