"""``check_search``: a registered search algorithm runs, stops for a known reason and resumes exactly.

It runs the algorithm on a tiny env-grounded domain shipped here (registered
only inside :func:`lits.registry.isolated_registry`, so it never leaks into a
plugin's registry) with the scripted model, then kills it partway -- the
policy raises after k calls -- and resumes it from the checkpoint journal.
A resumed run must give exactly the uninterrupted run's tree, best path and
stop reason: that is what ``lits search --resume`` promises users.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from lits.components.transition.env_grounded import EnvGroundedTransition
from lits.structures.env_grounded import EnvAction, EnvState, EnvStep
from lits.testing.conformance import fail, first_difference

if TYPE_CHECKING:
    from pydantic import BaseModel

    from lits.agents import SearchResult
    from lits.registry import Registration

__all__ = ["STOP_REASONS", "TOY_DOMAIN", "TOY_EXAMPLE", "check_search"]

#: What ``BaseTreeSearch``, MCTS and BFS report as ``SearchResult.stopped``.
STOP_REASONS = ("solution", "budget", "time", "exhausted")
#: Small budgets every built-in config understands; only the fields a config declares are used.
DEFAULT_ARGS: dict[str, object] = {"n_actions": 2, "max_depth": 4, "early_stop": False}
TOY_DOMAIN = "lits-conformance-counter"
#: Reachable in three moves (double, add 3, double), so solutions appear but the tree keeps growing.
TOY_EXAMPLE: dict[str, str] = {"id": "counter-0", "query": "reach 10", "init_state_str": "count: 1"}
_OWNER = "lits.testing.search_conformance"


def _count(env_state: str) -> int:
    return int(env_state.rsplit(":", 1)[1])


class CounterTransition(EnvGroundedTransition):
    """The toy domain: a counter that can add 1, add 3 or double; the goal names the target."""

    @staticmethod
    def goal_check(query_or_goals: str, env_state: str) -> tuple[bool, float]:
        target, now = int(str(query_or_goals).rsplit(" ", 1)[1]), _count(env_state)
        return now == target, max(0.0, 1.0 - abs(target - now) / target)

    @staticmethod
    def generate_actions(env_state: str) -> list[str]:
        return ["add 1", "add 3", "double"]

    def init_state(self, **kwargs: Any) -> EnvState:
        return EnvState(init_state=kwargs["init_state_str"])

    def _step(
        self, state: EnvState, step_or_action: object, query_or_goals: Any, **kwargs: object
    ) -> tuple[EnvState, dict[str, object]]:
        action = str(step_or_action.action if isinstance(step_or_action, EnvStep) else step_or_action)
        now = _count(state.env_state)
        now = now * 2 if action == "double" else now + int(action.split()[1])
        new_state = state.copy()
        new_state.append(EnvStep(action=EnvAction(action), next_state=f"count: {now}"))
        return new_state, {"goal_reached": self.goal_check(query_or_goals, new_state.env_state)}


def _register_toy() -> None:
    from lits.plugin_host.store import add_registration, register_prompt

    add_registration("transition", TOY_DOMAIN, CounterTransition, task_type="env_grounded", owner=_OWNER)
    add_registration(
        "dataset", TOY_DOMAIN, lambda **kwargs: [dict(TOY_EXAMPLE)], task_type="env_grounded", owner=_OWNER
    )
    register_prompt("policy", "env_grounded", TOY_DOMAIN, "Reach the target number.", owner=_OWNER)
    register_prompt(
        "policy",
        "env_grounded",
        TOY_DOMAIN,
        {"state": "Goal: {goals}\nNow: {env_state}\nMoves so far:\n{plan}Valid actions:\n{actions}\n\nNext move:\n"},
        user=True,
        owner=_OWNER,
    )


class _Killed(Exception):
    """Stands in for a kill: raised by the policy after a set number of calls."""


class _Run:
    """One search run on the toy domain, with fresh components (as a fresh process has)."""

    def __init__(self, cls: type, config: BaseModel, checkpoint_dir: Path, kill_after: int | None = None) -> None:
        from lits.components.factory import create_components
        from lits.testing.scripted import ScriptedModel

        parts = create_components(
            TOY_DOMAIN,
            ScriptedModel(chat_native=True),
            n_actions=getattr(config, "n_actions", 2),
            temperature=getattr(config, "temperature", 0.8),
        )
        self.calls = 0
        propose = parts.policy.get_actions

        def counted(*args: Any, **kwargs: Any) -> Any:
            if kill_after is not None and self.calls >= kill_after:
                raise _Killed()
            self.calls += 1
            return propose(*args, **kwargs)

        parts.policy.get_actions = counted  # type: ignore[method-assign]
        self.search = cls(config, parts.policy, parts.transition, parts.reward_model, checkpoint_dir=checkpoint_dir)

    def run(self, resume: bool = False) -> SearchResult:
        return self.search.run(TOY_EXAMPLE["query"], 0, dict(TOY_EXAMPLE), resume=resume)


@contextlib.contextmanager
def _every_checkpoint_on_disk() -> Iterator[None]:
    """Write each checkpoint at once, as a slow search would, so a kill finds what a real kill finds."""
    from lits.agents.tree import journal

    saved = journal.FLUSH_SECONDS
    journal.FLUSH_SECONDS = 0.0
    try:
        yield
    finally:
        journal.FLUSH_SECONDS = saved


def _config(where: str, reg: Registration, search_args: Mapping[str, object] | None) -> BaseModel:
    from lits.agents import TreeSearchConfig

    config_class: type[BaseModel] = reg.meta.get("config_class") or TreeSearchConfig
    fields = getattr(config_class, "model_fields", {})
    values = {**{k: v for k, v in DEFAULT_ARGS.items() if k in fields}, **dict(search_args or {})}
    try:
        return config_class(**values)
    except Exception as exc:
        fail(where, f"its config class {config_class.__name__} rejects {values}: {' '.join(str(exc).split())}")


def _check_result(where: str, result: object, stop_reasons: Sequence[str]) -> None:
    from lits.agents import SearchResult

    if not isinstance(result, SearchResult):
        fail(where, f"run() returned a {type(result).__name__}, not a SearchResult")
    if result.stopped not in stop_reasons:
        fail(where, f"stop reason {result.stopped!r} is not one of {', '.join(stop_reasons)}")
    ids = [n.id for n in result.root.iter_tree()]
    if len(set(ids)) != len(ids):
        fail(where, f"node id {next(i for i in ids if ids.count(i) > 1)} is used twice (create nodes with new_node)")
    path = result.best_path
    if not path or path[0] is not result.root or any(b.parent is not a for a, b in zip(path, path[1:])):
        fail(where, "the best path is not a chain of nodes from the root")
    if len(ids) < 2:
        fail(where, "the tree never grew past the root on the toy domain")


def _difference(whole: SearchResult, other: SearchResult) -> str | None:
    """How ``other`` differs from the uninterrupted run ``whole`` (tree, best path, stop reason, counters)."""
    diff = first_difference(whole.root.to_dict(), other.root.to_dict())
    if diff:
        return f"the tree differs at root.{diff}"
    best = ([n.id for n in whole.best_path], [n.id for n in other.best_path])
    if best[0] != best[1]:
        return f"the best path is nodes {best[1]}, not {best[0]}"
    for field in ("stopped", "solved", "iterations"):
        if getattr(whole, field) != getattr(other, field):
            return f"{field} is {getattr(other, field)!r}, not {getattr(whole, field)!r}"
    stats = first_difference(whole.stats, other.stats)
    return f"the stats differ ({stats})" if stats else None


def check_search(
    name: str,
    search_args: Mapping[str, object] | None = None,
    *,
    kill_after: Sequence[int] | None = None,
    stop_reasons: Sequence[str] = STOP_REASONS,
) -> SearchResult:
    """Check the search registered as ``name``; returns its uninterrupted ``SearchResult``.

    ``search_args`` are its settings (small defaults for ``n_actions``,
    ``max_depth`` and ``early_stop=False`` are filled in when its config
    declares them).  Two uninterrupted runs must agree (determinism); the run
    is then killed after each of ``kill_after`` policy calls (default: the
    first, the middle and the last but one) and resumed from its journal.
    """
    from lits.agents import BaseTreeSearch
    from lits.components.checks import problems_of
    from lits.runtime.concurrency import fan_out_width
    from lits.plugin_host.plugins import ensure_plugins_loaded
    from lits.registry import get_registration, isolated_registry

    where = f"check_search({name!r})"
    ensure_plugins_loaded()  # before isolating, so the plugins stay loaded afterwards
    try:
        reg = get_registration("search", name)
        cls = reg.obj
    except LookupError as exc:
        fail(where, str(exc.args[0]) if exc.args else "not registered")
    problems = problems_of("search", cls)
    if problems or not issubclass(cls, BaseTreeSearch):
        fail(where, "; ".join(problems) or f"{cls.__name__} does not subclass BaseTreeSearch")
    config = _config(where, reg, search_args)
    with (
        isolated_registry(),
        _every_checkpoint_on_disk(),
        fan_out_width(1),
        tempfile.TemporaryDirectory(prefix="lits-check-search-") as tmp,
    ):
        _register_toy()
        whole = _uninterrupted(where, cls, config, Path(tmp), stop_reasons)
        total = whole.calls
        points = sorted({1, total // 2, total - 1} if kill_after is None else set(kill_after))
        for k in (p for p in points if 0 <= p < total):
            _kill_and_resume(where, cls, config, Path(tmp) / f"killed-{k}", k, total, whole.result)
        return whole.result


class _Whole:
    def __init__(self, result: SearchResult, calls: int) -> None:
        self.result, self.calls = result, calls


def _uninterrupted(where: str, cls: type, config: BaseModel, tmp: Path, stop_reasons: Sequence[str]) -> _Whole:
    runs = []
    for attempt in ("first", "second"):
        run = _Run(cls, config, tmp / attempt)
        try:
            result = run.run()
        except Exception as exc:
            fail(where, f"the search raised {type(exc).__name__}: {exc} on the toy domain")
        _check_result(where, result, stop_reasons)
        runs.append(_Whole(result, run.calls))
    diff = _difference(runs[0].result, runs[1].result)
    if diff:
        fail(
            where,
            f"two uninterrupted runs differ: {diff} (break ties by node id; derive randomness "
            "from the seed, the instance and the iteration)",
        )
    if runs[0].calls < 2:
        fail(
            where,
            f"made {runs[0].calls} policy call(s) on the toy domain with {config.model_dump()}; "
            "give it settings that let it expand more than once",
        )
    return runs[0]


def _kill_and_resume(
    where: str, cls: type, config: BaseModel, directory: Path, k: int, total: int, whole: SearchResult
) -> None:
    killed = _Run(cls, config, directory, kill_after=k)
    try:
        killed.run()
    except _Killed:
        pass
    except Exception as exc:
        fail(
            where,
            f"killed after {k} of {total} policy calls, it raised {type(exc).__name__}: {exc} "
            "instead of letting the kill through",
        )
    else:
        fail(
            where,
            f"the policy raised after {k} of {total} calls, but the search went on "
            "(let exceptions from components propagate)",
        )
    journal = directory / "0.journal.jsonl"
    if (
        k == total // 2
        and getattr(config, "checkpoint_every", 1) == 1
        and (not journal.exists() or not journal.read_text().strip())
    ):
        fail(
            where,
            f"killed after {k} of {total} policy calls, it had journaled nothing: call "
            "self.save_checkpoint(self.iteration) after each iteration so a resume continues mid-instance",
        )
    resumed = _Run(cls, config, directory)
    try:
        result = resumed.run(resume=True)
    except Exception as exc:
        fail(where, f"resuming after a kill at policy call {k + 1} of {total} raised {type(exc).__name__}: {exc}")
    diff = _difference(whole, result)
    if diff:
        fail(
            where,
            f"resumed after a kill at policy call {k + 1} of {total}, the result is not an uninterrupted run's: {diff}",
        )
