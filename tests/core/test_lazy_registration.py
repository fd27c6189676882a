"""Registrations may name their object as "module:attribute": nothing is imported until it is used."""

from __future__ import annotations

import pytest

from lits.registry import ComponentRegistry, RegistryError, add_registration, list_names


def test_a_lazily_registered_class_is_imported_on_first_use(isolated_registry):
    add_registration("policy", "lazy_policy", "lits.components.policy.concat:ConcatPolicy")
    from lits.components.policy.concat import ConcatPolicy

    assert "lazy_policy" in list_names("policy")
    assert ComponentRegistry.get_policy("lazy_policy") is ConcatPolicy


def test_a_lazy_name_that_cannot_be_imported_is_one_clear_error(isolated_registry):
    add_registration("policy", "ghost", "no_such_module:Ghost")
    with pytest.raises(RegistryError, match=r"policy 'ghost' .* points at 'no_such_module:Ghost', which cannot be"):
        ComponentRegistry.get_policy("ghost")


def test_listing_plugins_does_not_import_core_components(run_python):
    result = run_python(
        """
        import sys
        from lits.plugin_host.plugins import load_plugins
        load_plugins()
        print(any(m.startswith(("lits.components.policy", "lits.agents.tree", "lits.tools")) for m in sys.modules))
    """,
        env={"LITS_PLUGINS": ""},
    )
    assert result.stdout.strip() == "False", result.stderr
