"""Which model each component calls: ``--policy-model``, ``--eval-model``, ``--transition-model``, ``--bn-model``.

A run has a default model (``--model``/``--base-url``/``--api``); a component
given its own model, server or settings uses that spec instead.  Settings keep
what was given per component under ``component_models``; :func:`role_spec`
resolves the full spec a component uses.  Components whose specs are equal
share one model object (one limiter, one cache), see :func:`spec_key`.
"""

from __future__ import annotations

import json
import math
from typing import Literal, Mapping, Protocol, TypedDict

from lits.errors import UserError


#: A component that calls a model, as :data:`ROLES` lists them.
Role = Literal["policy", "eval", "transition", "bn"]


class GivenComponentModel(Protocol):
    """One component's own model as given (:class:`lits.runs.spec.ComponentModel`)."""

    @property
    def model(self) -> str | None: ...
    @property
    def base_url(self) -> str | None: ...
    @property
    def args(self) -> Mapping[str, object]: ...


class ModelSettings(Protocol):
    """What the model specs read of a run's spec or record; typed by shape, so this module stays below both."""

    @property
    def model(self) -> str: ...
    @property
    def base_url(self) -> str | None: ...
    @property
    def api(self) -> str | None: ...
    @property
    def component_models(self) -> Mapping[Role, GivenComponentModel]: ...


#: The components that call a model, as the flags name them (``eval`` is the reward model, ``bn`` the
#: branching-necessity evaluator of Chain-in-Tree continuation).
ROLES = ("policy", "eval", "transition", "bn")
#: Roles that use another role's model when given none of their own (the BN evaluator: the policy's).
FALLBACK_ROLES = {"bn": "policy"}

#: ``--ROLE-model-arg`` keys: the endpoint, where the key comes from, how the server constrains decoding
#: (:mod:`lits.lm.server.constraints`), and sampling settings applied to every call of that model (they win over
#: what the component asks for).
SAMPLING_ARGS: dict[str, type] = {"temperature": float, "max_tokens": int, "seed": int}
MODEL_ARGS = ("api", "api_key_env", "constraints", *SAMPLING_ARGS)
#: ``api_key_env`` as settings hold it: config.json drops every key that looks like a secret
#: (``api_key...``), and the variable's *name* must survive for ``--resume``.
KEY_ENV = "key_env"
#: Model args that may change on ``--resume`` (they do not change what the model answers; ``constraints``
#: says how to ask the server for the same replies, which a server upgraded meanwhile may ask differently).
OPERATIONAL_ARGS = (KEY_ENV, "constraints")
#: Model names served in this process (never at a ``--base-url``).
IN_PROCESS = ("local", "scripted")


def is_gguf(spec: str | None) -> bool:
    """A model spec naming a GGUF file: loaded by the embedded llama.cpp backend unless a server is given."""
    return bool(spec) and str(spec).lower().endswith(".gguf")


class ModelSpec(TypedDict):
    """The model one component uses: name, server, API and ``--ROLE-model-arg`` settings."""

    model: str
    base_url: str | None
    api: str | None
    args: dict[str, object]


def server_url(base_url: str | None) -> str:
    """Where a server model's calls go: its base URL, else ``$OPENAI_BASE_URL``, else OpenAI's."""
    import os

    from lits.builtins import DEFAULT_BASE_URL

    return base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL


def calls_a_server(model: str, base_url: str | None) -> bool:
    """True for a model served over HTTP by the built-in OpenAI-compatible backend (what may carry a key)."""
    from lits.registry import list_names

    if is_gguf(model):
        return bool(base_url)
    return model not in IN_PROCESS and not (model in list_names("model") and model != "openai")


def in_process(spec: str) -> bool:
    return spec in IN_PROCESS or is_gguf(spec)


def check_model_args(role: str, args: Mapping[str, object]) -> dict[str, object]:
    """``--ROLE-model-arg`` values checked and typed; an unknown key names the closest known one."""
    from lits.lm.server.constraints import dialect_setting
    from lits.plugin_host.store import unknown_name_message

    flag = f"--{role}-model-arg"
    out: dict[str, object] = {}
    for key, value in args.items():
        if key not in MODEL_ARGS:
            raise UserError(
                unknown_name_message(f"{flag} setting", key, list(MODEL_ARGS)).replace(
                    "; registered:", "; its settings:"
                )
            )
        if key == "api" and value not in ("chat", "completion"):
            raise UserError(f"{flag} api must be 'chat' or 'completion', not {value!r}")
        if key == "constraints":
            try:
                dialect_setting(value, flag)
            except ValueError as exc:
                raise UserError(str(exc)) from None
        if key == "api_key_env" and not (isinstance(value, str) and value.isidentifier()):
            raise UserError(f"{flag} api_key_env names an environment variable, e.g. api_key_env=MY_KEY")
        if key in SAMPLING_ARGS:
            kind = SAMPLING_ARGS[key]
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
                or (kind is int and value != int(value))
                or value < 0
            ):
                raise UserError(
                    f"{flag} {key} must be a finite {'whole ' if kind is int else ''}number of 0 or more, not {value!r}"
                )
            value = kind(value)
        out[KEY_ENV if key == "api_key_env" else key] = value
    return out


def role_spec(settings: ModelSettings, role: str) -> ModelSpec:
    """The full model spec ``role`` uses: its own flags over the run's ``--model``/``--base-url``/``--api``.

    A component given only a model name keeps the run's ``--base-url`` (one server, several models),
    unless its model runs in this process (``local``, ``scripted``, a ``.gguf`` file).  A role in
    :data:`FALLBACK_ROLES` given nothing of its own uses its fallback role's spec."""
    given = next((chosen for name, chosen in settings.component_models.items() if name == role), None)
    if given is None and role in FALLBACK_ROLES:
        return role_spec(settings, FALLBACK_ROLES[role])
    own = given.model if given else None
    model = own or settings.model or "local"
    args = dict(given.args) if given else {}
    base_url = given.base_url if given else None
    if base_url is None and not (own and in_process(model)):
        base_url = settings.base_url
    api = args.pop("api", None)
    return {
        "model": model,
        "base_url": base_url,
        "api": api if isinstance(api, str) and api else settings.api,
        "args": args,
    }


def default_spec(settings: ModelSettings) -> ModelSpec:
    return {
        "model": settings.model or "local",
        "base_url": settings.base_url,
        "api": settings.api,
        "args": {},
    }


def spec_key(spec: ModelSpec) -> str:
    """Equal for specs that must share one model object."""
    return json.dumps(spec, sort_keys=True, default=str)


def describe_models(settings: ModelSettings) -> str:
    """``policy=A eval=B transition=A`` (server shown when a component has its own)."""
    parts = []
    for role in ROLES:
        spec = role_spec(settings, role)
        from lits.io.secrets import safe_url

        own = spec["base_url"] and spec["base_url"] != settings.base_url
        where = f"@{safe_url(str(spec['base_url']))}" if own else ""
        parts.append(f"{role}={spec['model']}{where}")
    return " ".join(parts)


def call_destinations(settings: ModelSettings) -> str:
    """``http://127.0.0.1:8080/v1 (policy, eval, transition, bn)``: where each server model's calls go, as
    scheme, host, port and path only; empty when every model runs in this process."""
    from lits.io.secrets import safe_url

    by_url: dict[str, list[str]] = {}
    for role in ROLES:
        spec = role_spec(settings, role)
        if calls_a_server(spec["model"], spec["base_url"]):
            by_url.setdefault(safe_url(server_url(spec["base_url"])), []).append(role)
    return ", ".join(f"{url} ({', '.join(roles)})" for url, roles in by_url.items())


def uses_own_models(settings: ModelSettings) -> bool:
    """True when some component's spec differs from the run's default model."""
    default = spec_key(default_spec(settings))
    return any(spec_key(role_spec(settings, role)) != default for role in ROLES)
