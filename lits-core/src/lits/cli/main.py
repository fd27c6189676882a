"""``lits``: plugins, search, chain, eval, compare, view, export.

Every failure a user can cause ends in one ``lits: error: ...`` line and exit
status 2, with API keys and URL credentials redacted; tracebacks of unexpected
errors go to the run's execution.log.  Runs exit 1 when instances failed or a
failing server stopped the run, 130 after Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Callable, Sequence, TextIO

from lits.cli import commands
from lits.cli.errors import UserError, describe
from lits.io.secrets import redact_text


def _add_role_models(g: argparse._ActionsContainer) -> None:
    """``--ROLE-model``, ``--ROLE-base-url`` and ``--ROLE-model-arg``: the spec's ``component_models``."""
    for role, short, what in (
        ("policy", "-pm", "the policy"),
        ("eval", "-em", "the reward model (e.g. a process reward model for --search-framework rest)"),
        ("transition", "-tm", "the transition"),
        ("bn", "-bm", "the branching-necessity evaluator (--search-arg add_continuation=true)"),
    ):
        default, server = (
            ("the policy's model", "--base-url, or the policy's server without --bn-model")
            if role == "bn"
            else ("--model", "--base-url")
        )
        g.add_argument(
            f"--{role}-model",
            short,
            default=None,
            metavar="NAME",
            help=f"model for {what} (default: {default}); a name, 'local', or a .gguf file",
        )
        g.add_argument(
            f"--{role}-base-url",
            default=None,
            metavar="URL",
            help=f"server of --{role}-model (default: {server}; may change on --resume)",
        )
        g.add_argument(
            f"--{role}-model-arg",
            action="append",
            default=[],
            metavar="K=V",
            help="that model's own setting: api=chat|completion, api_key_env=VARNAME (the key is "
            "read from that variable, never recorded), constraints=auto|gbnf|structured_outputs|"
            "guided|none (how the server holds replies to listed choices; auto: as it says of "
            "itself), temperature, max_tokens, seed (repeatable)",
        )


def _add_resume(g: argparse._ActionsContainer) -> None:
    """``--resume``, naming the flags that may be given again (the settings that do not change what a run
    computes)."""
    from lits.runs.spec import OPERATIONAL_FIELDS, settings_declared

    flags = [str(s.flag) for name, s in settings_declared().items() if name in OPERATIONAL_FIELDS]
    flags.insert(flags.index("--base-url") + 1, "--ROLE-base-url")
    g.add_argument(
        "--resume",
        action="store_true",
        help="continue the run in --save-dir; finished instances are not redone. Only operational "
        f"flags may be given again ({', '.join(flags)}); the rest come from the run, --attempts "
        "and --memory-arg included",
    )


def _add_layers(g: argparse._ActionsContainer) -> None:
    """Where a run's settings come from besides its flags, and checking them without running."""
    g.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="run settings from a TOML or YAML file (fields as in the Python API's RunSpec, e.g. "
        'dataset = "gsm8k", [search_args] n_iterations = 20); flags given override it',
    )
    g.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="set any run setting, or one key of a mapping: --set limit=5 --set search_args.max_depth=8 "
        "(after --config and the flags; repeatable)",
    )
    g.add_argument(
        "--dry-run",
        action="store_true",
        help="check every setting, the data, the plugins and the components, print the resolved run "
        "and a bound on its model calls; write nothing, call no model, start nothing",
    )


#: Options of ``lits search``/``lits chain`` that are no spec field's own, by the field they follow.
_HAND_WRITTEN = {"component_models": _add_role_models, "save_dir": _add_resume, "ray_address": _add_layers}


#: The commands LiTS itself has (a plugin's command of the same name is not added).
BUILTIN_COMMANDS = frozenset(
    {"plugins", "search", "chain", "rerun", "compare", "curve", "eval", "view", "new", "export"}
)


def build_parser(with_plugins: bool = False, run_options: bool = True) -> argparse.ArgumentParser:
    """``run_options``: give ``search`` and ``chain`` their options (made from the spec, which other commands
    need not import)."""
    from lits.version import __version__

    parser = argparse.ArgumentParser(prog="lits", description="LLM reasoning by tree search.")
    parser.add_argument("--version", action="version", version=f"lits {__version__}")
    parser.add_argument(
        "--disable-plugin",
        action="append",
        default=[],
        metavar="NAME",
        help="do not load this plugin (distribution or entry-point name; repeatable; adds to $LITS_DISABLE_PLUGINS)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("plugins", help="list installed plugins and what they registered")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--check", action="store_true", help="also check that each registered component can run (exit 1 on a problem)"
    )
    p.add_argument(
        "--show",
        metavar="NAME",
        default=None,
        help="print a registered algorithm's or component's settings with types and defaults",
    )
    p.set_defaults(func=commands.cmd_plugins)

    for name, what, func in (
        ("search", "run a tree search over dataset instances", commands.cmd_search),
        ("chain", "run a chain agent (no search) over dataset instances", commands.cmd_chain),
    ):
        p = sub.add_parser(name, help=what)
        if run_options:
            from lits.cli.settings import add_spec_options

            add_spec_options(p, name, _HAND_WRITTEN)
        p.set_defaults(func=func)

    p = sub.add_parser("rerun", help="run a finished run again from its config.json, into a new save dir")
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run to repeat")
    p.add_argument("--save-dir", default=None, help="where the new run goes (default: RUN_DIR-rerun-TIME)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="change a setting of the repeat, e.g. --set limit=2 (repeatable)",
    )
    p.add_argument("--dry-run", action="store_true", help="check and print the repeat's settings; run nothing")
    p.add_argument(
        "--trust-config",
        action="store_true",
        help="start the commands and send the API key to the base URLs that RUN_DIR/config.json names "
        "(without it a run asks at a terminal, else stops in one line)",
    )
    p.set_defaults(func=commands.cmd_rerun)

    p = sub.add_parser("compare", help="one table of accuracy, tokens, calls and time across runs")
    p.add_argument("save_dirs", nargs="+", metavar="SAVE_DIR", help="finished runs to compare")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument(
        "--plot",
        default=None,
        metavar="FILE",
        help="also draw accuracy against tokens, calls, seconds and cost (.png or .svg; needs the plot extra)",
    )
    p.set_defaults(func=commands.cmd_compare)

    p = sub.add_parser("curve", help="anytime accuracy: each search run's answer had it stopped at each budget")
    p.add_argument(
        "save_dirs",
        nargs="+",
        metavar="SAVE_DIR",
        help="finished MCTS or BFS runs (the first is the reference of the paired intervals)",
    )
    p.add_argument(
        "--budget",
        choices=("iterations", "calls", "tokens", "seconds"),
        default="iterations",
        help="the x axis: iterations (BFS: depths), or model calls, tokens or model seconds per "
        "instance (from the inference log's iteration tags)",
    )
    p.add_argument(
        "--points",
        default=None,
        metavar="B1,B2,...",
        help="budgets to judge at, e.g. 10,20,50 (default: ten up to the first run's largest)",
    )
    p.add_argument("--json", action="store_true", help="print the curves as JSON")
    p.add_argument(
        "--plot",
        default=None,
        metavar="FILE",
        help="also draw accuracy against the budget, one line per run (.png or .svg; needs the plot extra)",
    )
    p.set_defaults(func=commands.cmd_curve)

    p = sub.add_parser("eval", help="re-evaluate a finished run from its save dir")
    p.add_argument("--save-dir", required=True)
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    p.add_argument(
        "--verifier",
        action="store_true",
        help="also grade the reward model's step scores against the outcomes under each node (AUROC, "
        "calibration, position preference): the 'verifier' section of eval_results.json",
    )
    p.set_defaults(func=commands.cmd_eval)

    from lits.cli.export_command import add_export_parser
    from lits.cli.new import add_new_parser
    from lits.cli.view_commands import add_view_parser

    add_view_parser(sub)
    add_export_parser(sub)
    add_new_parser(sub)
    if with_plugins:
        add_plugin_commands(sub, set(sub.choices))
    return parser


def add_plugin_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser], builtin: set[str]) -> None:
    """``lits NAME ...`` for each command a plugin registers (the ``register_commands`` hook)."""
    from lits.registry import get_registration, list_names

    for name in list_names("command"):
        if name in builtin:
            continue  # a built-in command keeps its name
        reg = get_registration("command", name)
        parser = sub.add_parser(name, help=str(reg.meta.get("help") or f"(from {reg.owner})"))
        try:
            reg.obj(parser)
        except Exception as exc:
            problem = f"the command {name!r} of {reg.owner} is broken: {describe(exc)}"
            parser.set_defaults(func=lambda args, problem=problem: _refuse(problem))


def _refuse(problem: str) -> int:
    raise UserError(problem)


def _command_word(argv: Sequence[str]) -> str | None:
    """The command the command line names, if any."""
    words = iter(argv)
    for word in words:
        if word in ("--disable-plugin",):
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def _wants_plugin_commands(argv: Sequence[str]) -> bool:
    """Whether the command line names no built-in command (a plugin's, or none: help lists them all)."""
    return "--version" not in argv and _command_word(argv) not in BUILTIN_COMMANDS


def _one_line_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Warnings (a torn journal line dropped, a damaged log line skipped) as one ``lits: warning:`` line."""
    text = " ".join(str(message).split())
    print(f"lits: warning: {redact_text(text)}", file=file or sys.stderr)


#: pydantic's switch for its own plugins (observability hooks such as logfire's), read at each model class build.
PYDANTIC_PLUGINS_ENV = "PYDANTIC_DISABLE_PLUGINS"


def main(argv: Sequence[str] | None = None, prefix: Sequence[str] = ()) -> int:
    warnings.showwarning = _one_line_warning
    # pydantic looks for its plugins by parsing every installed distribution's entry points when the first model
    # class is built (~0.1 s of a start); the CLI uses none. Set to empty to keep them (docs/plugins.md).
    os.environ.setdefault(PYDANTIC_PLUGINS_ENV, "__all__")
    words = [*prefix, *(sys.argv[1:] if argv is None else argv)]
    parser = build_parser(
        with_plugins=_wants_plugin_commands(words), run_options=_command_word(words) in ("search", "chain")
    )
    args = parser.parse_args(words)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if args.disable_plugin:  # read when plugins load, which is later (lazily)
        from lits.plugin_host.plugins import ENV_DISABLE

        given = [os.environ.get(ENV_DISABLE, ""), *args.disable_plugin]
        os.environ[ENV_DISABLE] = ",".join(name for name in given if name)
    try:
        if args.command in ("search", "chain", "eval", "rerun"):
            from lits.cli.plugin_commands import warn_broken_plugins

            warn_broken_plugins()
        return int(args.func(args) or 0)
    except KeyboardInterrupt:  # before a run was under way (a run handles Ctrl-C itself)
        print("lits: interrupted; a run that was set up continues with --resume --save-dir DIR", file=sys.stderr)
        return 130
    except UserError as exc:
        print(f"lits: error: {redact_text(str(exc))}", file=sys.stderr)
        return 2
    except Exception as exc:  # anything else still gets one clear line
        print(f"lits: error: {describe(exc)}", file=sys.stderr)
        return 2


def _alias(command: str) -> Callable[[], int]:
    def run() -> int:
        return main(prefix=[command])

    return run


search_main = _alias("search")
chain_main = _alias("chain")
eval_main = _alias("eval")
