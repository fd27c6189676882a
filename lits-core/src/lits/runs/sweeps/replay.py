"""``--replay-from RUN``: find the replies RUN recorded, and count what a replay took from them.

The store that answers from them is :mod:`lits.lm.replay`; this module knows run directories.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from lits.io import layout
from lits.errors import UserError
from lits.lm.cache import CacheError, ResponseCache
from lits.lm.replay import ReplayStore
from lits.runs.results.artifacts import RunDir, RunFileError
from lits.runs.record import RunRecord


def recorded_cache(source: str) -> tuple[RunRecord, Path]:
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
    if config.no_cache:
        raise UserError(f"{flag}: that run recorded no replies (it ran with --no-cache)")
    path = Path(config.cache or root / layout.CACHE).expanduser()
    if not path.is_file():
        raise UserError(f"{flag}: its response cache {path} is missing, so there is nothing to replay")
    return config, path


def open_replay(own: ResponseCache, settings: RunRecord) -> ReplayStore:
    """The run's cache backed by the recorded run's; refuses a recorded run of another model (its replies
    are keyed on the model: none would be found)."""
    source = str(settings.replay_from)
    config, path = recorded_cache(source)
    if _models(config) != _models(settings):
        raise UserError(
            f"--replay-from {source}: that run used --model {config.model} "
            f"{_roles(config)}and this one --model {settings.model} {_roles(settings)}"
            "; a replay answers the same model's requests only"
        )
    try:
        recorded = ResponseCache(path)
    except CacheError as exc:
        raise UserError(str(exc)) from None
    return ReplayStore(own, recorded, source=Path(source), offline=settings.offline)


def _models(settings: RunRecord) -> tuple[str, dict[str, str]]:
    """The model, and each component's own model, by name (where they are served does not matter)."""
    roles = {str(role): chosen.model for role, chosen in settings.component_models.items() if chosen.model}
    return settings.model or "local", roles


def _roles(settings: RunRecord) -> str:
    models = settings.component_models
    if not models:
        return ""
    return "(" + ", ".join(f"{role} {chosen.model}" for role, chosen in sorted(models.items())) + ") "


def replay_counts(settings: RunRecord, inference: Mapping[str, float]) -> dict[str, object]:
    """The summary's ``replay``: the recorded run, the calls answered from recorded replies and those paid."""
    return {
        "from": settings.replay_from,
        "replayed": int(inference.get("cache_hits", 0)),
        "paid": int(inference.get("calls", 0)),
        "offline": settings.offline,
    }
