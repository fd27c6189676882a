"""The work behind each ``lits`` sub-command."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from lits.cli.errors import UserError, describe
from lits.cli.options import parse_pairs, select_instances


def cmd_plugins(args: argparse.Namespace) -> int:
    from lits.plugins import plugin_infos

    infos = plugin_infos()
    failed = 1 if any(i.error for i in infos) else 0
    if args.json:
        print(json.dumps([i.as_dict() for i in infos], indent=1))
        return failed
    for info in infos:
        status = f"ERROR {info.error}" if info.error else ""
        print(f"{info.distribution} {info.version} ({info.module}) {status}".rstrip())
        for kind, names in info.registered.items():
            if kind == "prompt":
                print(f"  prompts: {len(names)}")
            else:
                print(f"  {kind.replace('_', ' ')}: {', '.join(names)}")
    return failed


def cmd_search(args: argparse.Namespace) -> int:
    return _run(args, mode="search")


def cmd_chain(args: argparse.Namespace) -> int:
    return _run(args, mode="chain")


def cmd_compare(args: argparse.Namespace) -> int:
    from lits.runs.compare import compare_rows, format_rows

    rows = compare_rows([Path(d) for d in args.save_dirs])
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(format_rows(rows, markdown=args.markdown))
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from lits.components.factory import create_components
    from lits.observability import InferenceLog
    from lits.runs.artifacts import RunDir
    from lits.runs.evaluation import aggregate, format_table, reevaluate

    run_dir = RunDir(Path(args.save_dir))
    config = run_dir.read_config()
    results = run_dir.read_results()
    if not results:
        raise UserError(f"{run_dir.root} has no finished instances to evaluate")
    components = create_components(config["dataset"], None, transition=config.get("transition"),  # type: ignore[arg-type]
                                   resource_args=config.get("dataset_args") or {},
                                   framework=config.get("search_framework"))
    results = reevaluate(components, results, {})
    summary = aggregate(results, InferenceLog.read(run_dir.inference_log_path), run_dir.read_timings())
    previous = _read_json(run_dir.root / "eval_results.json")
    for key in ("policy_stats", "run_seconds", "calls_in_flight_avg"):  # measured by the run itself
        summary[key] = previous.get(key)
    _write_eval(run_dir, config, summary)
    print(json.dumps(summary, indent=1) if args.json else format_table(summary))
    return 0


# -- search and chain ------------------------------------------------------

def _run(args: argparse.Namespace, *, mode: str) -> int:
    from lits.components.factory import create_components
    from lits.lm.factory import create_model
    from lits.observability import InferenceLog
    from lits.registry import get_registration, get_search_framework, infer_task_type, load_dataset
    from lits.runs.evaluation import aggregate, format_table
    from lits.runs.runner import run_instances

    run_dir, settings = _settings(args, mode)
    dataset = settings["dataset"]
    try:
        get_registration("dataset", dataset)
    except KeyError as exc:
        raise UserError(describe(exc)) from None
    task_type = infer_task_type(dataset)

    if mode == "search":
        name = settings.get("search_framework")
        framework = get_search_framework(name, task_type) if name else None
        settings["search"] = settings.get("search") or (framework.search if framework else "mcts")
        agent_reg = get_registration("search", settings["search"])
        agent_args = {**(framework.search_args if framework else {}), **settings["search_args"]}
    else:
        settings["chain"] = settings.get("chain") or _default_chain(task_type)
        agent_reg = get_registration("chain", settings["chain"])
        agent_args = settings["chain_args"]
    config = _make_config(agent_reg, agent_args, mode)

    examples = load_dataset(dataset, **settings["dataset_args"])
    selected = select_instances(examples, settings["offset"], settings["limit"])
    if not selected:
        raise UserError(f"no instances selected from {dataset!r} ({len(examples)} available)")

    concurrency = settings["concurrency"]
    model = create_model(
        settings["model"],
        base_url=settings["base_url"],
        api=settings["api"],
        concurrency=concurrency,
        price_in=settings["price_in"],
        price_out=settings["price_out"],
    )
    components = create_components(
        dataset,
        model,
        policy=settings["policy"],
        transition=settings["transition"],
        reward=settings.get("reward"),
        n_actions=getattr(config, "n_actions", 1),
        temperature=getattr(config, "temperature", 0.0),
        resource_args=settings["dataset_args"],
        framework=settings.get("search_framework"),
        policy_kwargs=_depth_limit(task_type, config),
    )
    settings[f"{mode}_args"] = config.model_dump()
    run_dir.create()
    if not args.no_cache:
        from lits.lm.cache import ResponseCache

        model.use_cache(ResponseCache(args.cache or settings.get("cache") or run_dir.root / "cache.sqlite"))
    if not args.resume:
        run_dir.write_config(settings)
    print(f"lits: {mode} {dataset} with model {model.name} -> {run_dir.root}", file=sys.stderr)

    agent_cls = agent_reg.obj

    def make_agent() -> Any:
        if mode == "search":
            return agent_cls(config, components.policy, components.transition,
                             components.reward_model, checkpoint_dir=run_dir.checkpoints)
        return agent_cls(config, components.policy, components.transition,
                         checkpoint_dir=run_dir.checkpoints)

    try:
        outcome = run_instances(make_agent, components, selected, run_dir, mode=mode,
                                concurrency=concurrency, resume=args.resume)
    finally:
        model.close()
        if model.cache is not None:
            model.cache.close()
    log = InferenceLog.read(run_dir.inference_log_path)
    summary = aggregate(run_dir.read_results(), log, run_dir.read_timings())
    as_dict = getattr(getattr(components.policy, "stats", None), "as_dict", None)
    summary["policy_stats"] = as_dict() if as_dict is not None else None
    summary["run_seconds"] = round(outcome.seconds, 3)
    # How many of the --concurrency slots were busy on average while this process ran.
    busy = model.limiter.busy_area()
    summary["calls_in_flight_avg"] = round(busy / outcome.seconds, 2) if outcome.seconds > 0 else None
    _write_eval(run_dir, settings, summary)
    print(format_table(summary))
    if outcome.skipped:
        print(f"lits: {len(outcome.skipped)} instances were already done and were skipped", file=sys.stderr)
    if outcome.failed:
        first_idx, first = next(iter(sorted(outcome.failed.items())))
        print(f"lits: {len(outcome.failed)} instances failed (instance {first_idx}: {first}); "
              f"see {run_dir.root / 'execution.log'}, then rerun with --resume", file=sys.stderr)
        return 1
    return 0


def _settings(args: argparse.Namespace, mode: str) -> tuple[Any, dict[str, Any]]:
    from lits import __version__
    from lits.runs.artifacts import RunDir

    if args.resume:
        if not args.save_dir:
            raise UserError("--resume needs --save-dir of the run to continue")
        run_dir = RunDir(Path(args.save_dir))
        saved = run_dir.read_config()
        if saved.get("command") != mode:
            raise UserError(f"{run_dir.root} holds a {saved.get('command')} run, not a {mode} run")
        if args.concurrency is not None:  # operational: safe to change on resume
            saved["concurrency"] = _check_concurrency(args.concurrency)
        saved["concurrency"] = saved.get("concurrency") or default_concurrency(saved.get("model"))
        return run_dir, saved
    if not args.dataset:
        raise UserError("--dataset is required (see `lits plugins` for registered datasets)")
    settings: dict[str, Any] = {
        "command": mode,
        "dataset": args.dataset,
        "dataset_args": parse_pairs(args.dataset_arg, "--dataset-arg"),
        "offset": args.offset,
        "limit": args.limit,
        "policy": args.policy,
        "transition": args.transition,
        "model": args.model,
        "base_url": args.base_url,
        "api": args.api,
        "concurrency": _check_concurrency(args.concurrency) if args.concurrency is not None
        else default_concurrency(args.model),
        "price_in": args.price_in,
        "price_out": args.price_out,
        "cache": args.cache,
        "lits_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    if mode == "search":
        settings.update(search=args.search, reward=args.reward, search_framework=args.search_framework,
                        search_args=parse_pairs(args.search_arg, "--search-arg"))
        name = args.search_framework or args.search or "mcts"
    else:
        settings.update(chain=args.chain, chain_args=parse_pairs(args.chain_arg, "--chain-arg"))
        name = args.chain or "chain"
    root = Path(args.save_dir) if args.save_dir else Path("runs") / f"{args.dataset}-{name}-{time.strftime('%Y%m%d-%H%M%S')}"
    if (root / "config.json").exists():
        raise UserError(f"{root} already holds a run; pass --resume to continue it or choose another --save-dir")
    return RunDir(root), settings


#: Calls in flight against an HTTP server when --concurrency is not given: enough to keep a
#: local vLLM / llama.cpp server batching.  In-process models take one call at a time.
SERVER_CONCURRENCY = 16


def default_concurrency(model: Any) -> int:
    return 1 if model in (None, "", "local", "scripted") else SERVER_CONCURRENCY


def _check_concurrency(value: int) -> int:
    if value < 1:
        raise UserError("--concurrency must be at least 1")
    return value


def _make_config(reg: Any, values: dict[str, Any], mode: str) -> Any:
    config_class = reg.meta.get("config_class")
    if config_class is None:
        from lits.agents import ChainConfig, TreeSearchConfig

        config_class = TreeSearchConfig if mode == "search" else ChainConfig
    try:
        return config_class(**values)
    except Exception as exc:
        raise UserError(f"{reg.name}: {describe(exc)}") from None


def _depth_limit(task_type: str, config: Any) -> dict[str, Any]:
    """Language-grounded policies ask for the final answer at the agent's depth limit."""
    if task_type != "language_grounded":
        return {}
    limit = getattr(config, "max_depth", None) or getattr(config, "max_steps", None)
    return {"max_depth": limit} if limit else {}


DEFAULT_CHAINS = {"env_grounded": "env_chain", "tool_use": "react", "language_grounded": "cot"}


def _default_chain(task_type: str) -> str:
    if task_type not in DEFAULT_CHAINS:
        raise UserError(f"no default chain agent for {task_type} tasks; pass --chain NAME")
    return DEFAULT_CHAINS[task_type]


def _write_eval(run_dir: Any, config: dict[str, Any], summary: dict[str, Any]) -> None:
    from lits.runs.evaluation import format_table

    keys = ("dataset", "command", "search", "search_framework", "chain", "reward")
    run_dir.write_json("eval_results.json", {"config": {k: config.get(k) for k in keys}, **summary})
    (run_dir.root / "eval.log").write_text(format_table(summary) + "\n", encoding="utf-8")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


