"""``--dry-run``: everything a run checks before it starts, and what it would cost, with no model call.

The dataset, the selection, the search or chain and its settings, the components (built without a
model) and each component's model spec are checked exactly as a run checks them; nothing is written,
no model is loaded or called, and nothing is started: a tool resource (an MCP server's command) is
checked but not loaded, and what a real run would need confirmed is listed (:mod:`lits.runs.trust`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, TypedDict

from lits.agents.config import AgentConfig, TreeSearchConfig
from lits.errors import UserError, one_line
from lits.runs.record import RunRecord
from lits.runs.setup import agent_registration, build_components, make_config, select
from lits.runs.trust import Confirmation, actions, unconfirmed


class Plan(TypedDict):
    """What :func:`plan` found: the resolved settings, the selected instances, where each component's calls
    would go and a bound on model calls (None when the agent declares no depth limit)."""

    settings: dict[str, object]
    instances: list[int]
    models: dict[str, str]
    calls_per_instance: int | None
    calls: int | None


def plan(settings: RunRecord, objects: Mapping[str, object] | None = None) -> Plan:
    """What the run would do: the resolved settings, the instances, the models and a bound on model calls."""
    from lits.registry import get_registration, infer_task_type

    resolved = settings.model_copy()
    mode = resolved.command
    if resolved.executor == "ray":
        from lits.runs.ray.executor import require_ray

        require_ray()
    try:
        get_registration("dataset", resolved.dataset)
    except KeyError as exc:
        raise UserError(one_line(exc)) from None
    task_type = infer_task_type(resolved.dataset)
    agent_reg, agent_args = agent_registration(resolved, mode, task_type)
    config = make_config(agent_reg, agent_args, mode)
    selected = select(resolved.dataset, resolved)
    try:
        build_components(
            resolved,
            {"policy": None, "eval": None, "transition": None, "bn": None},
            config,
            task_type,
            objects or {},
            start_resources=False,
        )
    except UserError:
        raise
    except Exception as exc:
        raise UserError(f"the components cannot be built: {one_line(exc)}") from None
    resolved.set_agent_args(config.model_dump())
    per_instance = with_attempts(calls_per_instance(config, mode), resolved)
    return {
        "settings": resolved.as_config(),
        "instances": [idx for idx, _ in selected],
        "models": check_models(resolved),
        "calls_per_instance": per_instance,
        "calls": None if per_instance is None else per_instance * len(selected),
    }


def calls_per_instance(config: AgentConfig, mode: str) -> int | None:
    """A bound on model calls per instance from the agent's own limits (None when it declares none).

    Search: each iteration expands at most ``max_depth`` nodes, each with one policy call, one reward
    call per proposed child and one transition call (with continuation, what its evaluator adds); a chain:
    three calls per step. Cached replies and early stops make real runs cheaper; re-asks of malformed
    replies can add one policy call per step."""
    if not isinstance(config, TreeSearchConfig):
        return 3 * config.max_steps
    depth, width = config.max_depth, config.n_actions
    # a search's own round count, declared by its config's subclass (MCTSConfig, BFSConfig, a plugin's) if at all
    iterations = getattr(config, "n_iterations", None)
    beam = getattr(config, "beam_width", None) or getattr(config, "n_beams", None)
    rounds = iterations if isinstance(iterations, int) else (beam if isinstance(beam, int) else 1)
    return rounds * depth * (2 + width + _bn_calls(config, width))


def _bn_calls(config: TreeSearchConfig, width: int) -> int:
    """What Chain-in-Tree's evaluator adds per expansion: a BN-model call, or its samples (and ``sc``'s call)."""
    if not config.add_continuation:
        return 0
    if config.bn_method == "direct":
        return 1
    k = config.bn_k or max(2, width)
    return k + (1 if config.bn_method == "sc" else 0)


def with_attempts(per_attempt: int | None, settings: RunRecord) -> int | None:
    """The bound over ``--attempts N``: N attempts, and one call per augmentor between two attempts (an
    augmentor that calls the model more often is not bounded)."""
    from lits.memory.memory import augmentor_classes

    augmentors = augmentor_classes(settings.memory_args)
    attempts = settings.attempts
    return None if per_attempt is None else per_attempt * attempts + len(augmentors) * (attempts - 1)


def check_models(settings: RunRecord) -> dict[str, str]:
    """Each component's model spec checked without loading it: where its calls would go."""
    from lits.registry import list_names
    from lits.runs.model_specs import KEY_ENV, ROLES, is_gguf, role_spec, server_url
    from lits.io.secrets import safe_url

    out: dict[str, str] = {}
    for role in ROLES:
        spec = role_spec(settings, role)
        name, base_url = str(spec["model"]), spec.get("base_url")
        key_env = (spec.get("args") or {}).get(KEY_ENV)
        if key_env and not os.environ.get(str(key_env)):
            raise UserError(f"api_key_env={key_env} for model {name}: ${key_env} is not set")
        if is_gguf(name) and not base_url:
            if not Path(name).expanduser().is_file():
                raise UserError(
                    f"model file {name} not found (without a base URL a spec ending in .gguf is a local file)"
                )
            out[role] = f"{name} (in this process)"
        elif name in ("local", "scripted"):
            out[role] = f"{name} (in this process)"
        elif name in list_names("model") and name != "openai":
            out[role] = f"{name} (backend {name})"
        else:
            out[role] = f"{name} at {safe_url(server_url(base_url))}"
    return out


def format_plan(planned: Plan) -> str:
    """The plan as the terminal shows it after the resolved settings."""
    instances = planned["instances"]
    shown = ", ".join(str(i) for i in instances[:10]) + (", ..." if len(instances) > 10 else "")
    models = "; ".join(f"{role}: {where}" for role, where in planned["models"].items())
    calls = (
        "no bound (the agent declares no depth limit)"
        if planned["calls"] is None
        else f"at most {planned['calls']} ({planned['calls_per_instance']} per instance)"
    )
    return (
        f"instances     {len(instances)} ({shown})\nmodels        {models}\nmodel calls   {calls}\n"
        "dry run: settings checked, nothing written, no model called"
    )


def to_confirm(settings: RunRecord, confirmation: Confirmation) -> str:
    """The line saying what a real run would ask to confirm (empty when nothing)."""
    pending = [a.shown for a in unconfirmed(actions(settings, confirmation.given), confirmation)]
    return (
        f"\nto confirm    {'; '.join(pending)} (from a file: a run asks, or give {confirmation.how})" if pending else ""
    )


def print_plan(settings: RunRecord, objects: Mapping[str, object] | None = None, *, confirmation: Confirmation) -> int:
    """``--dry-run``: the resolved settings as JSON (secrets dropped), then the plan; exit status 0."""
    import json

    from lits.runs.results.artifacts import redact

    planned = plan(settings, objects)
    shown = {k: v for k, v in redact(planned["settings"]).items() if k not in ("created", "lits_version")}
    print(json.dumps(shown, indent=1, sort_keys=True, default=str))
    print(format_plan(planned) + to_confirm(settings, confirmation))
    return 0
