"""A config file or a run directory is data: what a run would do on a file's say-so is confirmed first.

Three things a run does can hurt its user when a file asks for them: starting a command (a resource's
``resource_args.command``, with its ``cwd`` and ``env``, e.g. an MCP server), joining a Ray cluster at
``ray_address`` (its results are unpickled here) and sending an API key to a server.  What this command line or this Python call gives is the user's own; what comes from a
file (``--config``, a run's ``config.json`` on ``lits rerun`` / ``--resume``,
:meth:`~lits.runs.spec.RunSpec.from_config`) needs a confirmation: ``--trust-config``
(``trust_config=True``), a "yes" typed at a terminal, or an earlier confirmation of exactly the same
thing.  Confirmations are remembered per user as SHA-256 digests in ``$LITS_STATE_DIR/trusted``
(default ``~/.local/state/lits``), as ``direnv allow`` does, so resuming one's own run asks nothing,
while a ``config.json`` changed to name another command, server or key variable asks again.

A key goes to a server only when the base URL is the user's (given now, ``$OPENAI_BASE_URL``, or
OpenAI's default) or confirmed; ``api_key_env`` read from a file must name a variable ending in
``API_KEY`` (``MY_API_KEY``), anything else (``AWS_SECRET_ACCESS_KEY``, ``GITHUB_TOKEN``) is
confirmed first.  Loopback hosts are not exempt: on a shared machine any user may listen on
127.0.0.1.  Without a key to send, a base URL from a file needs no confirmation (the console
still says where every model's calls go).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping, Protocol

from lits.errors import UserError
from lits.io.secrets import KEY_ENV_VARS, is_masked, safe_url
from lits.runs.model_specs import ModelSettings


class TrustedSettings(ModelSettings, Protocol):
    """What the trust check reads of a run's spec or record (typed by shape: the spec imports this module)."""

    @property
    def resource_args(self) -> Mapping[str, object]: ...
    @property
    def executor(self) -> str: ...
    @property
    def ray_address(self) -> str | None: ...


#: An ``api_key_env`` a file may name without a confirmation: upper case, ending in ``API_KEY``.
KEY_VARIABLE = re.compile(r"[A-Z][A-Z0-9_]*API_KEY")
#: Where confirmations are remembered (a directory; the file in it is ``trusted``).
ENV_STATE_DIR = "LITS_STATE_DIR"


@dataclass(frozen=True)
class Given:
    """The base URLs, key variables and commands given outside any file: the user's own."""

    urls: frozenset[str] = frozenset()
    key_envs: frozenset[str] = frozenset()
    commands: frozenset[str] = frozenset()

    def __or__(self, other: "Given") -> "Given":
        return Given(self.urls | other.urls, self.key_envs | other.key_envs, self.commands | other.commands)


@dataclass(frozen=True)
class Action:
    """One thing a run would do that a file may have asked for: how it is shown, what identifies it."""

    shown: str
    identity: str
    given: bool

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.identity.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Confirmation:
    """Who stands behind a run's settings: ``given`` (None: all of them, as a Python call gives them),
    ``trusted`` (``--trust-config``), ``ask`` (a terminal's yes) and how to confirm, for the refusal."""

    given: Given | None = None
    trusted: bool = False
    ask: Callable[[list[Action]], bool] | None = field(default=None, compare=False)
    how: str = "trust_config=True"


def given_values(fields: Mapping[str, object]) -> Given:
    """What ``fields`` (settings given on the command line or in a call) name: URLs, key variables, commands."""
    urls, key_envs = {fields.get("base_url")}, set()
    models = fields.get("component_models")
    for spec in models.values() if isinstance(models, Mapping) else ():
        spec = spec if isinstance(spec, Mapping) else getattr(spec, "__dict__", {})
        urls.add(spec.get("base_url"))
        args = spec.get("args")
        if isinstance(args, Mapping):
            key_envs |= {args.get("api_key_env"), args.get("key_env")}
    commands = [command_identity(fields.get("resource_args")), ray_identity(fields.get("ray_address"))]
    return Given(
        frozenset(u for u in urls if isinstance(u, str)),
        frozenset(k for k in key_envs if isinstance(k, str)),
        frozenset(c for c in commands if c),
    )


def ray_identity(address: object) -> str | None:
    """A Ray cluster to join: its results come back as pickles, so joining one runs what it sends."""
    return f"ray {address}" if isinstance(address, str) and address not in ("", "auto") else None


def command_identity(resource_args: object) -> str | None:
    """A resource's command with its working directory and environment, as one comparable string."""
    if not isinstance(resource_args, Mapping) or not resource_args.get("command"):
        return None
    return json.dumps({key: resource_args.get(key) for key in ("command", "cwd", "env")}, sort_keys=True, default=str)


def actions(settings: TrustedSettings, given: Given | None) -> list[Action]:
    """The commands the run would start and the keys it would send, each marked given or not."""
    from lits.runs.model_specs import KEY_ENV, ROLES, calls_a_server, role_spec, server_url

    out: dict[str, Action] = {}
    resource_args = settings.resource_args
    command = command_identity(resource_args)
    if command:
        env = resource_args.get("env")
        extra = [
            f"in {resource_args['cwd']}" if resource_args.get("cwd") else "",
            f"with env {', '.join(sorted(str(k) for k in env))}" if isinstance(env, Mapping) and env else "",
        ]
        shown = " ".join([f"start `{resource_args['command']}`", *[e for e in extra if e]])
        out[command] = Action(shown, f"command {command}", given is None or command in given.commands)
    ray = ray_identity(settings.ray_address) if settings.executor == "ray" else None
    if ray:
        out[ray] = Action(
            f"join the Ray cluster at {settings.ray_address}", ray, given is None or ray in given.commands
        )
    for role in ROLES:
        spec = role_spec(settings, role)
        base_url = spec["base_url"]
        if not calls_a_server(spec["model"], base_url) or (base_url and is_masked(base_url)):
            continue
        variable = (spec.get("args") or {}).get(KEY_ENV)
        variable = str(variable) if variable else next((v for v in KEY_ENV_VARS if os.environ.get(v)), None)
        if variable is None or not os.environ.get(variable):
            continue  # no key to send
        if variable not in KEY_ENV_VARS and KEY_VARIABLE.fullmatch(variable) is None:
            identity = f"key variable {variable}"
            out.setdefault(
                identity,
                Action(f"use ${variable} as the API key", identity, given is None or variable in given.key_envs),
            )
        url = server_url(base_url)
        identity = f"key ${variable} to {url}"
        out.setdefault(
            identity,
            Action(
                f"send ${variable} to {safe_url(url)}",
                identity,
                given is None or base_url is None or base_url in given.urls,
            ),
        )
    return list(out.values())


def confirm(settings: TrustedSettings, confirmation: Confirmation) -> list[Action]:
    """What the run will do on a file's say-so, once all of it is confirmed (remembered for next time); else
    one :class:`UserError` line naming it and how to confirm.  Nothing has been started or sent either way."""
    wanted = actions(settings, confirmation.given)
    if not wanted:
        return []
    pending = unconfirmed(wanted, confirmation)
    if pending and not (confirmation.ask is not None and confirmation.ask(pending)):
        what = "; ".join(a.shown for a in pending)
        where = "on the command line" if confirmation.how.startswith("--") else "in the call"
        raise UserError(
            f"the run's settings come from a file and would {what}; nothing was started or sent: "
            f"check them and give {confirmation.how} (or give these values {where})"
        )
    remember(a.digest for a in wanted)
    return [a for a in wanted if not a.given]


def unconfirmed(wanted: list[Action], confirmation: Confirmation) -> list[Action]:
    """The actions neither given, nor confirmed now, nor confirmed before."""
    known = remembered() if any(not a.given for a in wanted) else set()
    return [a for a in wanted if not (a.given or confirmation.trusted or a.digest in known)]


def ask_at_terminal(pending: list[Action]) -> bool:
    """A "yes" typed at a terminal confirms; without one (stdin not a terminal) nothing is asked."""
    if not sys.stdin.isatty():
        return False
    for action in pending:
        print(f"lits: a file asks this run to {action.shown}", file=sys.stderr)
    try:
        answer = input("lits: go ahead? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def _store() -> Path:
    base = os.environ.get(ENV_STATE_DIR) or os.path.join(
        os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state"), "lits"
    )
    return Path(base) / "trusted"


def remembered() -> set[str]:
    """The digests of what the user confirmed before (none when the file cannot be read)."""
    try:
        return set(_store().read_text(encoding="utf-8").split())
    except (OSError, UnicodeDecodeError):
        return set()


def remember(digests: Iterable[str]) -> None:
    """Add ``digests`` to the store; a store that cannot be written only means asking again next time."""
    new = sorted(set(digests) - remembered())
    if not new:
        return
    path = _store()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with open(path, "a", encoding="utf-8") as out:
            out.write("".join(f"{d}\n" for d in new))
    except OSError:
        pass
