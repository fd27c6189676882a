"""Finding installed plugins reads what it needs: only plugin distributions are parsed, each once."""

from __future__ import annotations

import importlib_metadata
from typing import Any

import pytest

from lits.plugin_host.entry_points import plugin_entry_points


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The folders of the distributions whose entry points or METADATA importlib_metadata parses."""
    seen: list[str] = []
    entry_points = importlib_metadata.Distribution.entry_points
    metadata = importlib_metadata.Distribution.metadata

    def counting(prop: Any) -> property:
        def get(dist: importlib_metadata.Distribution) -> Any:
            seen.append(str(getattr(dist, "_path", dist)))
            return prop.fget(dist)

        return property(get)

    monkeypatch.setattr(importlib_metadata.Distribution, "entry_points", counting(entry_points))
    monkeypatch.setattr(importlib_metadata.Distribution, "metadata", counting(metadata))
    return seen


def test_only_distributions_declaring_lits_plugins_are_parsed_each_once(parsed: list[str]) -> None:
    points = plugin_entry_points()
    plugin_folders = {point.dist_path for point in points}
    assert len(importlib_metadata.entry_points(group="lits.plugins")) == len(points)  # the same plugins found
    parsed.clear()
    plugin_entry_points()
    assert sorted(parsed) == sorted(plugin_folders)


def test_a_plugin_distribution_is_named_as_its_metadata_names_it() -> None:
    points = plugin_entry_points()
    assert points
    for point in points:
        dist = point.entry.dist
        assert dist is not None
        assert (point.dist_name, point.version) == (dist.metadata["Name"], dist.version)
