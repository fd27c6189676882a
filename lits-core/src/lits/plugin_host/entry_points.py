"""The installed plugins' entry points, each with its distribution's name and version read once.

``importlib_metadata.entry_points(group=...)`` parses every installed
distribution's entry points (a research environment has 100-200) to keep one
group, and ``EntryPoint.dist.name`` parses the whole METADATA file as an e-mail
message on every read: the loader asked 35 times, about half of plugin loading.
Here only a distribution whose ``entry_points.txt`` names the group is parsed, and
each plugin's two header lines are read once, by plain text. The ``importlib-metadata`` distribution (the
stdlib module's maintained release) reads the installed metadata, one behaviour on every Python we support.
"""

from __future__ import annotations

import importlib_metadata
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
    entry: importlib_metadata.EntryPoint

    def load(self) -> Any:
        return self.entry.load()


def plugin_entry_points() -> list[PluginEntryPoint]:
    """Every installed ``lits.plugins`` entry point, by distribution and entry point name."""
    points, seen = [], set()
    for dist in importlib_metadata.distributions():
        path = getattr(dist, "_path", None)
        folder = _folder_name(path)
        if folder is not None:  # a distribution found twice on the path counts once, first found (as importlib's)
            if folder in seen:
                continue
            seen.add(folder)
        text = dist.read_text("entry_points.txt")
        if not text or f"[{ENTRY_POINT_GROUP}]" not in text:
            continue
        dist_name, version = name_and_version(dist)
        where = None if path is None else str(path)
        for entry in dist.entry_points.select(group=ENTRY_POINT_GROUP):
            points.append(PluginEntryPoint(entry.name, entry.value, dist_name, version, where, entry))
    return sorted(points, key=lambda p: (p.dist_name, p.name))


def _folder_name(path: object) -> str | None:
    """``lits_plugin_math`` of ``.../lits_plugin_math-0.3.0.dist-info``: the distribution's name, without parsing
    its metadata (a wheel's folder spells it normalized, ``-`` before the version); None for other layouts."""
    folder = str(path or "").rstrip("/").rpartition("/")[2]
    if not folder.endswith(".dist-info") or "-" not in folder:
        return None
    return folder.partition("-")[0].lower().replace(".", "_")


def name_and_version(dist: importlib_metadata.IDistribution) -> tuple[str, str]:
    """``Name`` and ``Version`` from the metadata's header lines (the core metadata puts each on one line)."""
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if not line:
            break  # the headers end at the first blank line (the description follows)
        key, colon, value = line.partition(":")
        if colon and key in ("Name", "Version"):
            found.setdefault(key, value.strip())
    if "Name" not in found:  # unusual metadata: let importlib_metadata parse it
        return str(dist.metadata["Name"] or ""), str(dist.version or "unknown")
    return found["Name"], found.get("Version") or "unknown"
