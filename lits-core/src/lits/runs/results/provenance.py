"""What ran: the resolved model and the software around it, for ``config.json``.

A result is only comparable with another when both name the same model file
(by SHA-256, not by a name that can be re-pointed), the same server and the
same versions of LiTS, its plugins and the libraries that shape a call.
"""

from __future__ import annotations

import platform
import sys
import importlib_metadata as metadata
from typing import TYPE_CHECKING, Mapping

from lits.plugin_host.entry_points import name_and_version

if TYPE_CHECKING:
    from lits.lm.base import LanguageModel
    from lits.runs.record import RunRecord

#: Libraries whose version changes what a run does or records.
LIBRARIES = ("lits-core", "pluggy", "httpx", "pydantic", "tenacity")


def _version(distribution: str) -> str:
    try:
        return name_and_version(metadata.distribution(distribution))[1]
    except metadata.PackageNotFoundError:
        return "not installed"


def plugin_versions() -> dict[str, str]:
    """Every installed LiTS plugin distribution and its version, noting ones not loaded or broken."""
    from lits.plugin_host.plugins import installed_plugins, plugin_infos

    loaded = {info.distribution: info for info in plugin_infos() if not info.builtin}
    out: dict[str, str] = {}
    for ep in installed_plugins():  # the loader's own reading: no second scan of every installed distribution
        name, version = ep.dist_name, ep.version
        info = loaded.get(name)
        note = (
            ""
            if info is not None and not info.error
            else (" (failed to load)" if info is not None else " (not loaded)")
        )
        out[name] = version + note
    return dict(sorted(out.items()))


def environment() -> dict[str, object]:
    return {
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "platform": platform.platform(terse=True),
        "packages": {name: _version(name) for name in LIBRARIES},
        "plugins": plugin_versions(),
    }


def model_record(model: LanguageModel, concurrency: int) -> dict[str, object]:
    """The backend's own description plus how hard the run drove it."""
    record = dict(model.describe())
    record["concurrency"] = concurrency
    return record


def record_models(settings: RunRecord, models: Mapping[str, LanguageModel]) -> None:
    """``model_info`` for ``--model`` (as before) and ``models``: each component's spec and model_info."""
    from lits.runs.model_specs import ROLES, default_spec, role_spec, spec_key

    default = spec_key(default_spec(settings))
    recorded: dict[str, dict[str, object]] = {}
    used_default = False
    described: dict[int, dict[str, object]] = {}  # a shared model is described (and its server asked) once
    for role in ROLES:
        spec = role_spec(settings, role)
        model = models[role]
        if id(model) not in described:
            described[id(model)] = model_record(model, settings.resolved_concurrency())
        info = described[id(model)]
        recorded[role] = {**spec, "model_info": info}
        if spec_key(spec) == default:
            settings.model_info = info
            used_default = True
    settings.models = recorded
    if not used_default:
        settings.model_info = None  # no component uses --model
