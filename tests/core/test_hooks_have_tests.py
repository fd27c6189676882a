"""Every hook spec is exercised by a test (after datasette's rule)."""

from __future__ import annotations

import ast

from lits.plugin_host import hookspecs
from tests.core.conftest import EVERY_HOOK_PLUGIN


def test_the_every_hook_plugin_implements_every_hook_spec():
    """test_every_hook_registers_its_kind installs this plugin and checks each hook's registrations."""
    specs = {name for name in dir(hookspecs) if name.startswith("register_")}
    implemented = {node.name for node in ast.parse(EVERY_HOOK_PLUGIN).body if isinstance(node, ast.FunctionDef)}
    assert specs and specs == implemented, f"hooks the every-hook plugin lacks: {sorted(specs - implemented)}"
