"""pytest plugin for a LiTS plugin's own test suite (entry point ``pytest11: lits``).

Installed with lits-core, so every pytest session in an environment with LiTS
has these fixtures; the checks themselves are plain functions in
:mod:`lits.testing`.  Importing this module imports nothing from LiTS: a test
session that never uses the fixtures pays nothing and loads no plugins.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Iterator

import pytest

if TYPE_CHECKING:
    from lits.testing.scripted import ScriptedModel


@pytest.fixture
def lits_registry() -> Iterator[None]:
    """The installed plugins loaded, and whatever the test registers forgotten afterwards."""
    from lits.plugin_host.plugins import ensure_plugins_loaded
    from lits.registry import isolated_registry

    ensure_plugins_loaded()
    with isolated_registry():
        yield


@pytest.fixture
def lits_scripted_model() -> "ScriptedModel":
    """The model ``--model scripted`` gives: deterministic, offline, chat-native, obedient."""
    from lits.testing.scripted import ScriptedModel

    return ScriptedModel(chat_native=True)


@pytest.fixture
def lits_conformance() -> ModuleType:
    """The conformance kit (``check_env_domain``, ``check_language_domain``, ``check_dataset``, ``check_search``)."""
    import lits.testing

    return lits.testing


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "lits_conformance: a LiTS plugin conformance check (lits.testing)")
