"""The installed plugins' entry points, each with its distribution's name and version read once.

``EntryPoint.dist.name`` parses the distribution's whole METADATA file as an
e-mail message on every read (importlib.metadata keeps nothing), and the loader
asks for names and versions many times: 35 parses, about half of plugin loading.
Here each distribution's two header lines are read once, by plain text.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from typing import Any

#: The entry point group a plugin distribution declares (``[project.entry-points."lits.plugins"]``).
ENTRY_POINT_GROUP = "lits.plugins"


@dataclass(frozen=True)
class PluginEntryPoint:
    """One ``lits.plugins`` entry point: ``name = value`` shipped by distribution ``dist_name``."""

    name: str
    value: str
    dist_name: str
    version: str
    #: The distribution's metadata folder (None when unknown): its changes invalidate the probe's verdicts.
    dist_path: str | None
    entry: importlib.metadata.EntryPoint

    def load(self) -> Any:
        return self.entry.load()


def plugin_entry_points() -> list[PluginEntryPoint]:
    """Every installed ``lits.plugins`` entry point, by distribution and entry point name."""
    points = []
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = entry.dist
        dist_name, version = name_and_version(dist) if dist is not None else (entry.name, "unknown")
        path = getattr(dist, "_path", None)
        points.append(
            PluginEntryPoint(entry.name, entry.value, dist_name, version, None if path is None else str(path), entry)
        )
    return sorted(points, key=lambda p: (p.dist_name, p.name))


def name_and_version(dist: importlib.metadata.Distribution) -> tuple[str, str]:
    """``Name`` and ``Version`` from the metadata's header lines (the core metadata puts each on one line)."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if not line:
            break  # the headers end at the first blank line (the description follows)
        key, colon, value = line.partition(":")
        if colon and key in ("Name", "Version"):
            found.setdefault(key, value.strip())
    if "Name" not in found:  # unusual metadata: let importlib.metadata parse it
        return str(dist.metadata["Name"] or ""), str(dist.version or "unknown")
    return found["Name"], found.get("Version") or "unknown"
