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
from typing import Callable, Optional, Sequence, TextIO

from lits.cli import commands
from lits.cli.errors import UserError, describe
from lits.secrets import redact_text


def _add_data_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("data")
    g.add_argument("--dataset", help="registered dataset name (e.g. blocksworld)")
    g.add_argument("--dataset-arg", action="append", default=[], metavar="K=V",
                   help="keyword argument for the dataset loader (repeatable)")
    g.add_argument("--offset", type=int, default=None, help="skip the first N instances (default 0)")
    g.add_argument("--limit", type=int, default=None, help="run at most N instances")
    g.add_argument("--resource", default=None, metavar="NAME",
                   help="tools from this registered resource instead of the dataset's own (tool-use datasets), "
                        "e.g. 'mcp' for an MCP server's tools")
    g.add_argument("--resource-arg", action="append", default=[], metavar="K=V",
                   help="keyword argument for the resource, e.g. command=\"python -m my_server\", "
                        "url=http://127.0.0.1:PORT/mcp, timeout=SECONDS (repeatable)")


def _add_model_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("model")
    g.add_argument("--model", default=None,
                   help="'local' (embedded Gemma 3 270M, the default), 'scripted' (offline echo for "
                        "smoke tests), a .gguf file (llama.cpp in process), or a model name served at --base-url")
    g.add_argument("--base-url", default=None,
                   help="OpenAI-compatible server, e.g. http://127.0.0.1:8080/v1 (default: $OPENAI_BASE_URL); "
                        "the key comes only from $OPENAI_API_KEY or $LITS_API_KEY")
    g.add_argument("--api", choices=["chat", "completion"], default=None,
                   help="endpoint to use on the server (default: chat)")
    for role, short, what in (("policy", "-pm", "the policy"), ("eval", "-em", "the reward model (e.g. a "
                              "process reward model for --search-framework rest)"),
                              ("transition", "-tm", "the transition"),
                              ("bn", "-bm", "the branching-necessity evaluator (--search-arg add_continuation=true)")):
        default, server = (("the policy's model", "--base-url, or the policy's server without --bn-model")
                           if role == "bn" else ("--model", "--base-url"))
        g.add_argument(f"--{role}-model", short, default=None, metavar="NAME",
                       help=f"model for {what} (default: {default}); a name, 'local', or a .gguf file")
        g.add_argument(f"--{role}-base-url", default=None, metavar="URL",
                       help=f"server of --{role}-model (default: {server}; may change on --resume)")
        g.add_argument(f"--{role}-model-arg", action="append", default=[], metavar="K=V",
                       help="that model's own setting: api=chat|completion, api_key_env=VARNAME (the key is "
                            "read from that variable, never recorded), constraints=auto|gbnf|structured_outputs|"
                            "guided|none (how the server holds replies to listed choices; auto: as it says of "
                            "itself), temperature, max_tokens, seed (repeatable)")
    g.add_argument("--concurrency", type=int, default=None,
                   help="model calls in flight at once, across instances (default: 16 against a server, "
                        "1 for the embedded or scripted model; recorded in config.json)")
    g.add_argument("--call-budget", type=float, default=None, metavar="SECONDS",
                   help="time one model call may take, retries of server faults included (default 300)")
    g.add_argument("--read-timeout", type=float, default=None, metavar="SECONDS",
                   help="time one attempt waits for the server's reply (default 60; a hang costs at most this)")
    g.add_argument("--cache", default=None, metavar="PATH",
                   help="response cache file (default: cache.sqlite in the save dir); "
                        "share one between runs to never pay twice for a call (keyed on the model name "
                        "and request, not the server's address)")
    g.add_argument("--no-cache", action="store_true", help="do not read or write the response cache")
    g.add_argument("--log-prompts", action="store_true", default=None,
                   help="also record each call's prompt and reply in inference.jsonl (shown by `lits view`; "
                        "makes the log many times larger)")
    g.add_argument("--free-replies", action="store_true", default=None,
                   help="never ask the server to hold replies to the known choices (legal actions, Yes/No "
                        "lines); measures the model's own format-following (recorded in config.json)")
    g.add_argument("--price-in", type=float, default=None, help="price per 1M input tokens (default 0)")
    g.add_argument("--price-out", type=float, default=None, help="price per 1M output tokens (default 0)")


def _add_run_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("run")
    g.add_argument("--save-dir", default=None, help="where all run artifacts go (default: runs/NAME-TIME)")
    g.add_argument("--resume", action="store_true",
                   help="continue the run in --save-dir; finished instances are not redone. Only "
                        "operational flags may be given again (--concurrency, --base-url, --ROLE-base-url, --cache, "
                        "--no-cache, --call-budget, --read-timeout, prices, --log-prompts, --executor, "
                        "--ray-address); the rest come from the run, --attempts and --memory-arg included")
    g.add_argument("--executor", choices=["local", "ray"], default=None,
                   help="where instances run: 'local' (threads of this process, the default) or 'ray' (tasks "
                        "on a Ray cluster; needs lits-core[ray], and LiTS and the run's plugins on every node)")
    g.add_argument("--ray-address", default=None, metavar="ADDR",
                   help="with --executor ray: the cluster to join, 'auto' (the running one) or HOST:PORT "
                        "(default: start a local Ray instance for this run)")
    g.add_argument("--config", default=None, metavar="FILE",
                   help="run settings from a TOML or YAML file (fields as in the Python API's RunSpec, e.g. "
                        "dataset = \"gsm8k\", [search_args] n_iterations = 20); flags given override it")
    g.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="set any run setting, or one key of a mapping: --set limit=5 --set search_args.max_depth=8 "
                        "(after --config and the flags; repeatable)")
    g.add_argument("--dry-run", action="store_true",
                   help="check every setting, the data, the plugins and the components, print the resolved run "
                        "and a bound on its model calls; write nothing, call no model, start nothing")
    g.add_argument("--trust-config", action="store_true",
                   help="start the commands (e.g. resource_args.command) and send the API key to the base URLs "
                        "that --config or, with --resume, the run's config.json names; without it a run asks "
                        "at a terminal, else stops in one line (see docs/models.md)")
    g.add_argument("--attempts", type=int, default=None, metavar="N",
                   help="try each instance up to N times; an attempt that solves ends it (pass@1 and pass@N in "
                        "the summary; default 1)")
    g.add_argument("--memory-arg", action="append", default=[], metavar="K=V",
                   help="memory between attempts: augmentors=fact,reflection (see `lits plugins`), and their "
                        "options, e.g. max_facts=8 (repeatable)")
    g.add_argument("--replay-from", default=None, metavar="RUN",
                   help="answer each model request from the replies the run in RUN recorded (its response "
                        "cache): the k-th sample of a request is the k-th recorded; only what RUN lacks is paid "
                        "for (see docs/comparing-methods.md)")
    g.add_argument("--offline", action="store_true", default=None,
                   help="with --replay-from: pay for nothing; an instance asking what RUN did not record fails, "
                        "named in one line (give it again with each --resume)")
    g.add_argument("--policy", default=None, help="registered policy name (default: by dataset, else generic)")
    g.add_argument("--transition", default=None, help="registered transition name (default: the dataset's)")


#: The commands LiTS itself has (a plugin's command of the same name is not added).
BUILTIN_COMMANDS = frozenset({"plugins", "search", "chain", "rerun", "compare", "curve", "eval", "view", "new",
                              "export"})


def build_parser(with_plugins: bool = False) -> argparse.ArgumentParser:
    from lits import __version__

    parser = argparse.ArgumentParser(prog="lits", description="LLM reasoning by tree search.")
    parser.add_argument("--version", action="version", version=f"lits {__version__}")
    parser.add_argument("--disable-plugin", action="append", default=[], metavar="NAME",
                        help="do not load this plugin (distribution or entry-point name; repeatable; "
                             "adds to $LITS_DISABLE_PLUGINS)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("plugins", help="list installed plugins and what they registered")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--check", action="store_true",
                   help="also check that each registered component can run (exit 1 on a problem)")
    p.add_argument("--show", metavar="NAME", default=None,
                   help="print a registered algorithm's or component's settings with types and defaults")
    p.set_defaults(func=commands.cmd_plugins)

    p = sub.add_parser("search", help="run a tree search over dataset instances")
    _add_data_options(p)
    _add_model_options(p)
    _add_run_options(p)
    p.add_argument("--search", default=None,
                   help="registered search algorithm (default: the search framework's, else mcts)")
    p.add_argument("--search-arg", action="append", default=[], metavar="K=V",
                   help="search setting, e.g. n_iterations=10 (see the algorithm's config; repeatable)")
    p.add_argument("--search-framework", default=None, metavar="NAME",
                   help="a registered bundle of policy, transition and reward (e.g. rest, tot_bfs, rap); "
                        "--policy/--transition/--reward still override its parts")
    p.add_argument("--reward", default=None, help="registered reward model name")
    p.add_argument("--reward-arg", action="append", default=[], metavar="K=V",
                   help="reward model setting, e.g. separator='<extra_0>' for prm-classifier (see "
                        "lits plugins --show NAME; repeatable)")
    p.set_defaults(func=commands.cmd_search)

    p = sub.add_parser("chain", help="run a chain agent (no search) over dataset instances")
    _add_data_options(p)
    _add_model_options(p)
    _add_run_options(p)
    p.add_argument("--chain", default=None, help="registered chain agent (default: by task type)")
    p.add_argument("--chain-arg", action="append", default=[], metavar="K=V",
                   help="chain setting, e.g. max_steps=10 (repeatable)")
    p.add_argument("--budget", default=None, metavar="UNIT=N",
                   help="one compute budget for the whole run, tokens=N, calls=N or seconds=N (model seconds): "
                        "--chain sc draws up to k chains per instance, stops an instance whose vote is settled "
                        "and gives what it did not spend to the others")
    p.set_defaults(func=commands.cmd_chain)

    p = sub.add_parser("rerun", help="run a finished run again from its config.json, into a new save dir")
    p.add_argument("run_dir", metavar="RUN_DIR", help="the run to repeat")
    p.add_argument("--save-dir", default=None, help="where the new run goes (default: RUN_DIR-rerun-TIME)")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="change a setting of the repeat, e.g. --set limit=2 (repeatable)")
    p.add_argument("--dry-run", action="store_true", help="check and print the repeat's settings; run nothing")
    p.add_argument("--trust-config", action="store_true",
                   help="start the commands and send the API key to the base URLs that RUN_DIR/config.json names "
                        "(without it a run asks at a terminal, else stops in one line)")
    p.set_defaults(func=commands.cmd_rerun)

    p = sub.add_parser("compare", help="one table of accuracy, tokens, calls and time across runs")
    p.add_argument("save_dirs", nargs="+", metavar="SAVE_DIR", help="finished runs to compare")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    p.add_argument("--plot", default=None, metavar="FILE",
                   help="also draw accuracy against tokens, calls, seconds and cost (.png or .svg; "
                        "needs the plot extra)")
    p.set_defaults(func=commands.cmd_compare)

    p = sub.add_parser("curve", help="anytime accuracy: each search run's answer had it stopped at each budget")
    p.add_argument("save_dirs", nargs="+", metavar="SAVE_DIR", help="finished MCTS or BFS runs (the first is the "
                   "reference of the paired intervals)")
    p.add_argument("--budget", choices=("iterations", "calls", "tokens", "seconds"), default="iterations",
                   help="the x axis: iterations (BFS: depths), or model calls, tokens or model seconds per "
                        "instance (from the inference log's iteration tags)")
    p.add_argument("--points", default=None, metavar="B1,B2,...",
                   help="budgets to judge at, e.g. 10,20,50 (default: ten up to the first run's largest)")
    p.add_argument("--json", action="store_true", help="print the curves as JSON")
    p.add_argument("--plot", default=None, metavar="FILE",
                   help="also draw accuracy against the budget, one line per run (.png or .svg; needs the plot "
                        "extra)")
    p.set_defaults(func=commands.cmd_curve)

    p = sub.add_parser("eval", help="re-evaluate a finished run from its save dir")
    p.add_argument("--save-dir", required=True)
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    p.add_argument("--verifier", action="store_true",
                   help="also grade the reward model's step scores against the outcomes under each node (AUROC, "
                        "calibration, position preference): the 'verifier' section of eval_results.json")
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


def _wants_plugin_commands(argv: Sequence[str]) -> bool:
    """Whether the command line names no built-in command (a plugin's, or none: help lists them all)."""
    if "--version" in argv:
        return False
    words = iter(argv)
    for word in words:
        if word in ("--disable-plugin",):
            next(words, None)
        elif not word.startswith("-"):
            return word not in BUILTIN_COMMANDS
    return True


def _one_line_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                      file: Optional[TextIO] = None,
                      line: Optional[str] = None) -> None:
    """Warnings (a torn journal line dropped, a damaged log line skipped) as one ``lits: warning:`` line."""
    text = " ".join(str(message).split())
    print(f"lits: warning: {redact_text(text)}", file=file or sys.stderr)


def main(argv: Optional[Sequence[str]] = None, prefix: Sequence[str] = ()) -> int:
    warnings.showwarning = _one_line_warning
    words = [*prefix, *(sys.argv[1:] if argv is None else argv)]
    parser = build_parser(with_plugins=_wants_plugin_commands(words))
    args = parser.parse_args(words)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    if args.disable_plugin:  # read when plugins load, which is later (lazily)
        from lits.plugins import ENV_DISABLE

        given = [os.environ.get(ENV_DISABLE, ""), *args.disable_plugin]
        os.environ[ENV_DISABLE] = ",".join(name for name in given if name)
    try:
        if args.command in ("search", "chain", "eval", "rerun"):
            from lits.cli.plugin_commands import warn_broken_plugins

            warn_broken_plugins()
        return int(args.func(args) or 0)
    except KeyboardInterrupt:  # before a run was under way (a run handles Ctrl-C itself)
        print("lits: interrupted; a run that was set up continues with --resume --save-dir DIR",
              file=sys.stderr)
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
