"""``--replay-from RUN``: find the replies RUN recorded, and count what a replay took from them.

The store that answers from them is :mod:`lits.lm.replay`; this module knows run directories.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from lits import layout
from lits.errors import UserError
from lits.lm.cache import CacheError, ResponseCache
from lits.lm.replay import ReplayStore
from lits.runs.results.artifacts import RunDir, RunFileError
from lits.runs.run_settings import RunSettings


def recorded_cache(source: str) -> tuple[RunSettings, Path]:
    """RUN's settings and the response cache its replies are in; one line when RUN is no run or kept none."""
    root = Path(source)
    flag = f"--replay-from {source}"
    if not root.is_dir():
        raise UserError(f"{flag}: no such run directory; pass the --save-dir of the run to replay")
    try:
        config = RunDir(root).read_config()
    except FileNotFoundError:
        raise UserError(
            f"{flag}: not a LiTS run (no {layout.CONFIG}); pass the --save-dir of the run to replay"
        ) from None
    except RunFileError as exc:
        raise UserError(f"{flag}: {exc}") from None
    if config.get("no_cache"):
        raise UserError(f"{flag}: that run recorded no replies (it ran with --no-cache)")
    path = Path(config.get("cache") or root / layout.CACHE).expanduser()
    if not path.is_file():
        raise UserError(f"{flag}: its response cache {path} is missing, so there is nothing to replay")
    return config, path


def open_replay(own: ResponseCache, settings: RunSettings) -> ReplayStore:
    """The run's cache backed by the recorded run's; refuses a recorded run of another model (its replies
    are keyed on the model: none would be found)."""
    source = settings["replay_from"]
    config, path = recorded_cache(source)
    if _models(config) != _models(settings):
        raise UserError(
            f"--replay-from {source}: that run used --model {config.get('model')} "
            f"{_roles(config)}and this one --model {settings.get('model')} {_roles(settings)}"
            "; a replay answers the same model's requests only"
        )
    try:
        recorded = ResponseCache(path)
    except CacheError as exc:
        raise UserError(str(exc)) from None
    return ReplayStore(own, recorded, source=Path(source), offline=bool(settings.get("offline")))


def _models(settings: Mapping[str, object]) -> tuple[object, dict[str, object]]:
    """The model, and each component's own model, by name (where they are served does not matter)."""
    models = settings.get("component_models") or {}
    roles = (
        {role: spec.get("model") for role, spec in models.items() if isinstance(spec, dict) and spec.get("model")}
        if isinstance(models, dict)
        else {}
    )
    return settings.get("model") or "local", roles


def _roles(settings: Mapping[str, object]) -> str:
    models = settings.get("component_models") or {}
    if not isinstance(models, dict) or not models:
        return ""
    return (
        "("
        + ", ".join(f"{role} {spec.get('model')}" for role, spec in sorted(models.items()) if isinstance(spec, dict))
        + ") "
    )


def replay_counts(settings: Mapping[str, object], inference: Mapping[str, float]) -> dict[str, object]:
    """The summary's ``replay``: the recorded run, the calls answered from recorded replies and those paid."""
    return {
        "from": settings.get("replay_from"),
        "replayed": int(inference.get("cache_hits", 0)),
        "paid": int(inference.get("calls", 0)),
        "offline": bool(settings.get("offline")),
    }
