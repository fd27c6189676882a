"""LiTS from Python: the names a script, a notebook or a plugin needs, in one place.

Run a whole dataset (the library under ``lits search`` / ``lits chain``)::

    import lits

    result = lits.search("blocksworld", model="scripted", limit=2, search_args={"n_iterations": 5})
    print(result.solved, result.accuracy, result.cost["calls"])

A run writes the same save dir as the command line (``lits view DIR`` shows it), resumes with
:func:`resume`, and takes components by registered name, by class, or as objects you built.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from lits.agents import ChainConfig, TreeSearchConfig
from lits.agents.tree import BaseTreeSearch, bfs
from lits.components.base import LlmTransition, Policy, RewardModel, Transition
from lits.components.policy.env_grounded import EnvGroundedPolicy
from lits.components.policy.tool_use import ToolUsePolicy
from lits.components.reward.env_grounded import EnvGroundedPRM
from lits.components.reward.generative import GenerativePRM
from lits.components.transition.env_grounded import EnvGroundedTransition
from lits.components.transition.tool_use import ToolUseTransition
from lits.errors import UserError
from lits.hookspecs import hookimpl
from lits.lm.base import LanguageModel
from lits.lm.factory import create_model
from lits.memory import Augmentor, AugmentorContext, Outcome
from lits.prompts.registry import PromptRegistry
from lits.registry import (
    register_augmentor,
    register_chain,
    register_dataset,
    register_model,
    register_policy,
    register_resource,
    register_reward_model,
    register_search,
    register_system_prompt,
    register_transition,
    register_user_prompt,
)
from lits.runs.results.result import InstanceOutcome, RunResult
from lits.runs.spec import OPERATIONAL_FIELDS, ComponentModel, RunSpec, SpecError
from lits.structures.base import Action, State, Step, TrajectoryState
from lits.structures.env_grounded import EnvAction, EnvState, EnvStep
from lits.structures.node import SearchNode
from lits.structures.tool_use import ToolUseAction, ToolUseState, ToolUseStep
from lits.tools import BaseTool, Tool
from lits.type_registry import register_state, register_type

if TYPE_CHECKING:
    from lits.runs.planning import Plan

__all__ = [
    # running
    "run", "search", "chain", "resume", "run_async", "plan", "RunSpec", "ComponentModel", "RunResult",
    "InstanceOutcome", "SpecError", "UserError", "model",
    # building blocks (the seeds' names)
    "Policy", "Transition", "RewardModel", "LlmTransition", "EnvGroundedTransition", "EnvGroundedPolicy",
    "EnvGroundedPRM", "GenerativePRM", "ToolUsePolicy", "ToolUseTransition", "LanguageModel",
    "Step", "State", "Action", "TrajectoryState", "EnvState", "EnvStep", "EnvAction", "ToolUseStep", "ToolUseState",
    "ToolUseAction", "SearchNode", "Tool", "BaseTool", "TreeSearchConfig", "ChainConfig", "BaseTreeSearch", "bfs",
    "PromptRegistry", "Augmentor", "AugmentorContext", "Outcome",
    # registering
    "hookimpl", "register_transition", "register_policy", "register_reward_model", "register_dataset",
    "register_search", "register_chain", "register_resource", "register_model", "register_system_prompt",
    "register_user_prompt", "register_type", "register_state", "register_augmentor",
]


def run(spec: Optional[RunSpec] = None, /, **fields: object) -> RunResult:
    """Run ``spec`` (or a spec made from ``fields``; given both, ``fields`` override the spec's).

    Raises :class:`UserError` (one line) for a bad setting, an unknown name or a full disk, and for a command
    to start or a server to send a key to that a file named (``RunSpec.from_config``) unless
    ``trust_config=True``; instances that fail are reported in the result (``result.failed``), not raised."""
    from lits.runs.results.result import read_result
    from lits.runs.session import execute, new_run

    spec = RunSpec.make(**fields) if spec is None else spec.with_fields(**fields)
    run_dir, settings = new_run(spec)
    done = execute(run_dir, settings, objects=spec.objects(), confirmation=spec.confirmation())
    return read_result(run_dir.root, done.selected, done.outcome.failed, done.outcome.stop_reason)


def search(dataset: str, **fields: object) -> RunResult:
    """A tree search over ``dataset``: ``search="mcts"`` (default) or any registered one, ``search_args={...}``."""
    return run(RunSpec.make(command="search", dataset=dataset, **fields))


def chain(dataset: str, **fields: object) -> RunResult:
    """A chain agent (no search) over ``dataset``: ``chain=`` a registered one (default: by task type)."""
    return run(RunSpec.make(command="chain", dataset=dataset, **fields))


def resume(save_dir: str | Path, **changes: object) -> RunResult:
    """Finish the run in ``save_dir``; finished instances are not redone.

    Only operational settings may change (``concurrency``, ``base_url``, ``cache``, timeouts, prices,
    ``executor``...); components the run was given as objects are passed again as ``policy=`` etc.
    A command or a key destination from the run's config.json that was not confirmed before needs
    ``trust_config=True`` (or the base URL given again)."""
    from lits.runs.results.artifacts import RunDir, RunFileError
    from lits.runs.results.result import read_result
    from lits.runs.resuming import resumed_settings
    from lits.runs.session import execute
    from lits.runs.spec import OBJECT_PREFIX, component_name
    from lits.runs.trust import Confirmation, given_values

    run_dir = RunDir(Path(save_dir))
    try:
        saved = run_dir.read_config()
    except RunFileError as exc:  # a damaged or tampered config.json is bad input, like a bad spec
        raise UserError(str(exc)) from None
    trusted = bool(changes.pop("trust_config", False))
    objects: dict[str, object] = {role: changes.pop(role) for role in ("policy", "transition", "reward")
                               if role in changes}
    for role, obj in objects.items():
        if component_name(obj) != saved.get(role):
            raise SpecError(role, f"must be what the run had ({saved.get(role)!r}), not {component_name(obj)!r}")
    for role in ("policy", "transition", "reward"):
        if str(saved.get(role) or "").startswith(OBJECT_PREFIX) and role not in objects:
            was = str(saved.get(role))[len(OBJECT_PREFIX):]
            raise SpecError(role, f"was an object ({was}); pass it again as {role}=")
    unknown = [key for key in changes if key not in OPERATIONAL_FIELDS]
    if unknown:
        raise SpecError(unknown[0], "cannot change on resume: it would change what the run computes; "
                                    "start a new run with another save_dir")
    merged = RunSpec.from_config({**saved, **{r: None for r in objects}}, **changes)  # checks the new values
    settings = resumed_settings(run_dir, saved, {key: getattr(merged, key) for key in changes})
    confirmation = Confirmation(given=given_values(changes), trusted=trusted)
    done = execute(run_dir, settings, resume=True, objects=objects, confirmation=confirmation)
    return read_result(run_dir.root, done.selected, done.outcome.failed, done.outcome.stop_reason)


def plan(spec: Optional[RunSpec] = None, /, **fields: object) -> Plan:
    """What :func:`run` would do, checked as a run checks it, with no model call and nothing written
    (``--dry-run``): the resolved ``settings``, the ``instances``, each component's ``models`` and a bound on
    model ``calls``."""
    from lits.runs.planning import plan as plan_run
    from lits.runs.session import new_run

    spec = RunSpec.make(**fields) if spec is None else spec.with_fields(**fields)
    _, settings = new_run(spec, check_only=True)
    return plan_run(settings, spec.objects())


async def run_async(spec: Optional[RunSpec] = None, /, **fields: object) -> RunResult:
    """:func:`run` for code already in an event loop: the run goes to a worker thread."""
    return await asyncio.to_thread(run, spec, **fields)


def model(name: str = "local", **options: Any) -> LanguageModel:
    """A language model by spec, as ``--model`` takes it: ``"local"``, ``"scripted"``, a ``.gguf`` file, or a
    name served at ``base_url=...``; for building component objects yourself."""
    return create_model(name, **options)


