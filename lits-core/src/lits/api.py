"""LiTS from Python: the names a script, a notebook or a plugin needs, in one place.

Run a whole dataset (the library under ``lits search`` / ``lits chain``)::

    import lits

    result = lits.search("blocksworld", model="scripted", limit=2, search_args={"n_iterations": 5})
    print(result.solved, result.accuracy, result.cost["calls"])

A run writes the same save dir as the command line (``lits view DIR`` shows it), resumes with
:func:`resume`, and takes components by registered name, by class, or as objects you built.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lits.agents import MCTS, ChainConfig, MCTSConfig, TreeSearchConfig
    from lits.agents.tree import BaseTreeSearch, bfs
    from lits.answers import (
        Equivalence,
        Extractor,
        answer_rules,
        extract_stated_answer,
        majority_vote,
        normalize_text,
        same_text,
    )
    from lits.components.base import LlmTransition, Policy, RewardModel, Transition
    from lits.components.factory import create_components
    from lits.components.parsing import count_fallback, count_reask, count_reply
    from lits.components.policy.env_grounded import EnvGroundedPolicy
    from lits.components.policy.tool_use import ToolUsePolicy
    from lits.components.reward.env_grounded import EnvGroundedPRM
    from lits.components.reward.generative import GenerativePRM
    from lits.components.reward.judging import Verdict, judge_yes, label_probability, score_else_ask, yes_probability
    from lits.components.transition.env_grounded import EnvGroundedTransition
    from lits.components.transition.tool_use import ToolUseTransition
    from lits.errors import UserError
    from lits.export import export_runs
    from lits.export.rows import RowOptions
    from lits.runtime.extras import require
    from lits.plugin_host.hookspecs import hookimpl
    from lits.lm.base import (
        CALL_OPTIONS,
        CallOptions,
        Completion,
        call_options,
        GenerationParams,
        LanguageModel,
        LoglikelihoodUnsupported,
        Message,
        ModelError,
        Prompt,
        ServerUnreachable,
        check_calls_allowed,
    )
    from lits.lm.http.retry import RETRY_STATUS, FaultStats, RetryPolicy, attempts_of
    from lits.lm.http.stack import ServerTransport, server_transport
    from lits.lm.openai_compat import DEFAULT_RETRY_BASE_WAIT, ENV_RETRY_BASE_WAIT, ServerRefused
    from lits.lm.usage import CallUsage, note_request
    from lits.io.secrets import redact_text, safe_url
    from lits.lm.pooling import POOLING_ENDPOINT, step_probabilities
    from lits.memory import Augmentor, AugmentorContext, Outcome
    from lits.prompts.registry import PromptRegistry
    from lits.registry import (
        load_dataset,
        register_augmentor,
        register_chain,
        register_command,
        register_dataset,
        register_model,
        register_policy,
        register_resource,
        register_reward_model,
        register_search,
        register_search_framework,
        register_system_prompt,
        register_transition,
        register_user_prompt,
    )
    from lits.runs.sweeps.curve import curves, format_curves
    from lits.runs.results.result import InstanceOutcome, RunResult
    from lits.runs.spec import ComponentModel, RunSpec, SpecError
    from lits.export.verifier import format_report, verifier_section
    from lits.structures.base import Action, State, Step, TrajectoryState
    from lits.structures.env_grounded import EnvAction, EnvState, EnvStep
    from lits.structures.node import SearchNode
    from lits.structures.tool_use import ToolUseAction, ToolUseState, ToolUseStep
    from lits.tools import BaseTool, Tool, ToolUnavailable, parse_tool_call
    from lits.tools.base import failure_reason
    from lits.type_registry import register_state, register_type
    from lits.prompts import language_grounded as language_grounded_prompts
    from lits.prompts import tool_use as tool_use_prompts
    from lits.runs.planning import Plan

__all__ = [
    # running
    "run",
    "search",
    "chain",
    "resume",
    "run_async",
    "plan",
    "model",
    "RunSpec",
    "ComponentModel",
    "RunResult",
    "InstanceOutcome",
    "SpecError",
    "UserError",
    # building blocks (the seeds' names)
    "Policy",
    "Transition",
    "RewardModel",
    "LlmTransition",
    "EnvGroundedTransition",
    "EnvGroundedPolicy",
    "EnvGroundedPRM",
    "GenerativePRM",
    "ToolUsePolicy",
    "ToolUseTransition",
    "LanguageModel",
    "Step",
    "State",
    "Action",
    "TrajectoryState",
    "EnvState",
    "EnvStep",
    "EnvAction",
    "ToolUseStep",
    "ToolUseState",
    "ToolUseAction",
    "SearchNode",
    "Tool",
    "BaseTool",
    "TreeSearchConfig",
    "ChainConfig",
    "BaseTreeSearch",
    "bfs",
    "MCTS",
    "MCTSConfig",
    "PromptRegistry",
    "Augmentor",
    "AugmentorContext",
    "Outcome",
    # what a plugin's components use: model replies and errors, judging, answers, tools, core's prompts
    "Prompt",
    "Message",
    "Completion",
    "ModelError",
    "LoglikelihoodUnsupported",
    "yes_probability",
    "judge_yes",
    "score_else_ask",
    "Verdict",
    "label_probability",
    "count_reply",
    "count_fallback",
    "count_reask",
    "POOLING_ENDPOINT",
    "step_probabilities",
    "majority_vote",
    "answer_rules",
    "extract_stated_answer",
    "normalize_text",
    "same_text",
    "Equivalence",
    "Extractor",
    "ToolUnavailable",
    "parse_tool_call",
    "failure_reason",
    "require",
    "language_grounded_prompts",
    "tool_use_prompts",
    "create_components",
    "load_dataset",
    # writing a model backend: its request shapes, usage records, and LiTS's transport with its retries
    "GenerationParams",
    "CallOptions",
    "CALL_OPTIONS",
    "call_options",
    "CallUsage",
    "note_request",
    "server_transport",
    "ServerTransport",
    "RetryPolicy",
    "FaultStats",
    "RETRY_STATUS",
    "attempts_of",
    "ServerRefused",
    "DEFAULT_RETRY_BASE_WAIT",
    "ENV_RETRY_BASE_WAIT",
    "redact_text",
    "safe_url",
    "ServerUnreachable",
    "check_calls_allowed",
    # reading finished runs
    "curves",
    "format_curves",
    "export_runs",
    "RowOptions",
    "verifier_section",
    "format_report",
    # registering
    "hookimpl",
    "register_transition",
    "register_policy",
    "register_reward_model",
    "register_dataset",
    "register_search",
    "register_chain",
    "register_resource",
    "register_model",
    "register_system_prompt",
    "register_user_prompt",
    "register_type",
    "register_state",
    "register_augmentor",
    "register_search_framework",
    "register_command",
]

#: Where each name of the face is defined: imported the first time it is used, so a plugin that takes one
#: base class from here pays for that class's module alone (and ``import lits.api`` costs nothing).
_HOMES: dict[str, str] = {
    "RunSpec": "lits.runs.spec",
    "ComponentModel": "lits.runs.spec",
    "SpecError": "lits.runs.spec",
    "RunResult": "lits.runs.results.result",
    "InstanceOutcome": "lits.runs.results.result",
    "UserError": "lits.errors",
    "Policy": "lits.components.base",
    "Transition": "lits.components.base",
    "RewardModel": "lits.components.base",
    "LlmTransition": "lits.components.base",
    "EnvGroundedTransition": "lits.components.transition.env_grounded",
    "EnvGroundedPolicy": "lits.components.policy.env_grounded",
    "EnvGroundedPRM": "lits.components.reward.env_grounded",
    "GenerativePRM": "lits.components.reward.generative",
    "ToolUsePolicy": "lits.components.policy.tool_use",
    "ToolUseTransition": "lits.components.transition.tool_use",
    "LanguageModel": "lits.lm.base",
    "Step": "lits.structures.base",
    "State": "lits.structures.base",
    "Action": "lits.structures.base",
    "TrajectoryState": "lits.structures.base",
    "EnvState": "lits.structures.env_grounded",
    "EnvStep": "lits.structures.env_grounded",
    "EnvAction": "lits.structures.env_grounded",
    "ToolUseStep": "lits.structures.tool_use",
    "ToolUseState": "lits.structures.tool_use",
    "ToolUseAction": "lits.structures.tool_use",
    "SearchNode": "lits.structures.node",
    "Tool": "lits.tools",
    "BaseTool": "lits.tools",
    "TreeSearchConfig": "lits.agents",
    "ChainConfig": "lits.agents",
    "MCTSConfig": "lits.agents",
    "MCTS": "lits.agents",
    "BaseTreeSearch": "lits.agents.tree",
    "bfs": "lits.agents.tree",
    "PromptRegistry": "lits.prompts.registry",
    "Augmentor": "lits.memory",
    "AugmentorContext": "lits.memory",
    "Outcome": "lits.memory",
    "Prompt": "lits.lm.base",
    "Message": "lits.lm.base",
    "Completion": "lits.lm.base",
    "ModelError": "lits.lm.base",
    "LoglikelihoodUnsupported": "lits.lm.base",
    "yes_probability": "lits.components.reward.judging",
    "judge_yes": "lits.components.reward.judging",
    "score_else_ask": "lits.components.reward.judging",
    "Verdict": "lits.components.reward.judging",
    "label_probability": "lits.components.reward.judging",
    "count_reply": "lits.components.parsing",
    "count_fallback": "lits.components.parsing",
    "count_reask": "lits.components.parsing",
    "POOLING_ENDPOINT": "lits.lm.pooling",
    "step_probabilities": "lits.lm.pooling",
    "majority_vote": "lits.answers",
    "answer_rules": "lits.answers",
    "extract_stated_answer": "lits.answers",
    "normalize_text": "lits.answers",
    "same_text": "lits.answers",
    "Equivalence": "lits.answers",
    "Extractor": "lits.answers",
    "ToolUnavailable": "lits.tools",
    "parse_tool_call": "lits.tools",
    "failure_reason": "lits.tools.base",
    "require": "lits.runtime.extras",
    "create_components": "lits.components.factory",
    "load_dataset": "lits.registry",
    "curves": "lits.runs.sweeps.curve",
    "format_curves": "lits.runs.sweeps.curve",
    "export_runs": "lits.export",
    "RowOptions": "lits.export.rows",
    "verifier_section": "lits.export.verifier",
    "format_report": "lits.export.verifier",
    "hookimpl": "lits.plugin_host.hookspecs",
    "register_type": "lits.type_registry",
    "register_state": "lits.type_registry",
    "register_transition": "lits.registry",
    "register_policy": "lits.registry",
    "register_reward_model": "lits.registry",
    "register_dataset": "lits.registry",
    "register_search": "lits.registry",
    "register_chain": "lits.registry",
    "register_resource": "lits.registry",
    "register_model": "lits.registry",
    "register_system_prompt": "lits.registry",
    "register_user_prompt": "lits.registry",
    "register_augmentor": "lits.registry",
    "register_command": "lits.registry",
    "register_search_framework": "lits.registry",
    "language_grounded_prompts": "lits.prompts.language_grounded:",
    "tool_use_prompts": "lits.prompts.tool_use:",
    "GenerationParams": "lits.lm.base",
    "CallOptions": "lits.lm.base",
    "CALL_OPTIONS": "lits.lm.base",
    "call_options": "lits.lm.base",
    "CallUsage": "lits.lm.usage",
    "note_request": "lits.lm.usage",
    "server_transport": "lits.lm.http.stack",
    "ServerTransport": "lits.lm.http.stack",
    "RetryPolicy": "lits.lm.http.retry",
    "FaultStats": "lits.lm.http.retry",
    "RETRY_STATUS": "lits.lm.http.retry",
    "attempts_of": "lits.lm.http.retry",
    "ServerRefused": "lits.lm.openai_compat",
    "DEFAULT_RETRY_BASE_WAIT": "lits.lm.openai_compat",
    "ENV_RETRY_BASE_WAIT": "lits.lm.openai_compat",
    "redact_text": "lits.io.secrets",
    "safe_url": "lits.io.secrets",
    "ServerUnreachable": "lits.lm.base",
    "check_calls_allowed": "lits.lm.base",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'lits.api' has no attribute {name!r}")
    module_name, is_module, _ = home.partition(":")
    module = importlib.import_module(module_name)
    value = module if is_module else getattr(module, name)
    globals()[name] = value  # once: the next use is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def run(spec: RunSpec | None = None, /, **fields: object) -> RunResult:
    """Run ``spec`` (or a spec made from ``fields``; given both, ``fields`` override the spec's).

    Raises :class:`UserError` (one line) for a bad setting, an unknown name or a full disk, and for a command
    to start or a server to send a key to that a file named (``RunSpec.from_config``) unless
    ``trust_config=True``; instances that fail are reported in the result (``result.failed``), not raised.
    ``progress=False`` (a spec field): the command line's progress lines are not printed."""
    from lits.runs.results.result import read_result
    from lits.runs.session import Silent, execute, new_run
    from lits.runs.spec import RunSpec

    spec = RunSpec.make(**fields) if spec is None else spec.with_fields(**fields)
    run_dir, settings = new_run(spec)
    done = execute(
        run_dir,
        settings,
        objects=spec.objects(),
        confirmation=spec.confirmation(),
        stream=None if spec.progress else Silent(),
    )
    return read_result(run_dir.root, done.selected, done.outcome.failed, done.outcome.stop_reason)


def search(dataset: str, **fields: object) -> RunResult:
    """A tree search over ``dataset``: ``search="mcts"`` (default) or any registered one, ``search_args={...}``."""
    from lits.runs.spec import RunSpec

    return run(RunSpec.make(command="search", dataset=dataset, **fields))


def chain(dataset: str, **fields: object) -> RunResult:
    """A chain agent (no search) over ``dataset``: ``chain=`` a registered one (default: by task type)."""
    from lits.runs.spec import RunSpec

    return run(RunSpec.make(command="chain", dataset=dataset, **fields))


def resume(save_dir: str | Path, **changes: object) -> RunResult:
    """Finish the run in ``save_dir``; finished instances are not redone.

    Only operational settings may change (``concurrency``, ``base_url``, ``cache``, timeouts, prices,
    ``executor``...); components the run was given as objects are passed again as ``policy=`` etc.
    A command or a key destination from the run's config.json that was not confirmed before needs
    ``trust_config=True`` (or the base URL given again).  ``progress=False``: print nothing."""
    from lits.runs.results.artifacts import RunDir, RunFileError
    from lits.runs.results.result import read_result
    from lits.runs.resuming import resumed_settings
    from lits.runs.session import Silent, execute
    from lits.errors import UserError
    from lits.runs.spec import OBJECT_PREFIX, OPERATIONAL_FIELDS, RunSpec, SpecError, component_name
    from lits.runs.trust import Confirmation, given_values

    run_dir = RunDir(Path(save_dir))
    try:
        saved = run_dir.read_config()
    except RunFileError as exc:  # a damaged or tampered config.json is bad input, like a bad spec
        raise UserError(str(exc)) from None
    trusted = bool(changes.pop("trust_config", False))
    quiet = not changes.pop("progress", True)
    objects: dict[str, object] = {
        role: changes.pop(role) for role in ("policy", "transition", "reward") if role in changes
    }
    recorded = saved.as_config()
    for role, obj in objects.items():
        if component_name(obj) != recorded.get(role):
            raise SpecError(role, f"must be what the run had ({recorded.get(role)!r}), not {component_name(obj)!r}")
    for role in ("policy", "transition", "reward"):
        if str(recorded.get(role) or "").startswith(OBJECT_PREFIX) and role not in objects:
            was = str(recorded.get(role))[len(OBJECT_PREFIX) :]
            raise SpecError(role, f"was an object ({was}); pass it again as {role}=")
    unknown = [key for key in changes if key not in OPERATIONAL_FIELDS | {"offline"}]  # a replay's, per resume
    if unknown:
        raise SpecError(
            unknown[0],
            "cannot change on resume: it would change what the run computes; start a new run with another save_dir",
        )
    merged = RunSpec.from_config({**recorded, **{r: None for r in objects}}, **changes)  # checks the new values
    settings = resumed_settings(run_dir, saved, {key: getattr(merged, key) for key in changes})
    confirmation = Confirmation(given=given_values(changes), trusted=trusted)
    done = execute(
        run_dir, settings, resume=True, objects=objects, confirmation=confirmation, stream=Silent() if quiet else None
    )
    return read_result(run_dir.root, done.selected, done.outcome.failed, done.outcome.stop_reason)


def plan(spec: RunSpec | None = None, /, **fields: object) -> Plan:
    """What :func:`run` would do, checked as a run checks it, with no model call and nothing written
    (``--dry-run``): the resolved ``settings``, the ``instances``, each component's ``models`` and a bound on
    model ``calls``."""
    from lits.runs.planning import plan as plan_run
    from lits.runs.session import new_run
    from lits.runs.spec import RunSpec

    spec = RunSpec.make(**fields) if spec is None else spec.with_fields(**fields)
    _, settings = new_run(spec, check_only=True)
    return plan_run(settings, spec.objects())


async def run_async(spec: RunSpec | None = None, /, **fields: object) -> RunResult:
    """:func:`run` for code already in an event loop: the run goes to a worker thread."""
    import asyncio  # here, not at the top: a plugin importing this face does not pay for the event loop's modules

    return await asyncio.to_thread(run, spec, **fields)


def model(name: str = "local", **options: Any) -> LanguageModel:
    """A language model by spec, as ``--model`` takes it: ``"local"``, ``"scripted"``, a ``.gguf`` file, or a
    name served at ``base_url=...``; for building component objects yourself."""
    from lits.lm.factory import create_model

    return create_model(name, **options)
