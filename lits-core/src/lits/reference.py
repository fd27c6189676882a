"""The plugin author's reference, written from the code itself.

``python -m lits.reference > docs/plugin-reference.md`` regenerates the page;
a test fails when the page and the code disagree, so the reference cannot
drift: every hook with its arguments, the decorators, what each component
base asks of a subclass and what it does by default, ``BaseTreeSearch``, the
node fields and every agent setting with its default.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Callable, Iterable

from pydantic import BaseModel

PROSE_DATASETS = """\
## Dataset examples

A loader registered with `@register_dataset(name, task_type=...)` returns a list of dicts.

| key | who reads it |
|---|---|
| `query` | every agent: the question or goal (`query_or_goals` and `question`, the original LiTS's keys, are accepted too) |
| every key | the transition's `init_state(**example)` |
| `id` | results files (default: the index) |
| `eval_goals` | evaluation only: ground truth that search never sees (e.g. a crossword's answers) |
| `optimal_plan`, `n_steps` | env-grounded evaluation: plan length against the optimum |
| `answer` | language-grounded / tool-use evaluation (or the dataset's `evaluate(example, answer)` from `register_dataset(..., evaluate=...)`) |

An example without a query is a one-line error naming the dataset, the example and the key, before any call is paid.
"""

PROSE_REWARDS = """\
## The reward scale

Every shipped reward model returns values in **[0, 1]** (fast rewards and rewards), so a threshold
means the same across domains: the env-grounded PRM mixes the action's probability with the domain's
goal progress (`fast_weight`) and scores `goal_reward` (1) when the goal is reached; the generative PRM
and the tool-use PRM give P(Yes); RAP's reward is usefulness^α · confidence^(1−α). Keep a plugin's
reward model on the same scale.
"""

PROSE_STOPS = """\
## Stop reasons (`stopped` in `results/{idx}.json`)

| word | meaning |
|---|---|
| `solution` | a terminal node was found and `early_stop` is on (chains: the state is terminal) |
| `budget` | the iteration budget (MCTS) or the depth budget (BFS) was spent, or what a run's `--budget` granted so far |
| `time` | `runtime_limit` seconds passed |
| `exhausted` | nothing was left to expand |
| `max_steps` / `no_action` | a chain ran out of steps / the policy proposed nothing |
"""


def render() -> str:
    """The whole reference page as Markdown."""
    from lits.plugin_host import hookspecs
    from lits import registry
    from lits.agents.config import (
        BFSConfig,
        ChainConfig,
        CoTConfig,
        MCTSConfig,
        SelfConsistencyConfig,
        TreeSearchConfig,
    )
    from lits.agents.tree.base import BaseTreeSearch
    from lits.components.base import Policy, RewardModel, Transition
    from lits.components.transition.env_grounded import EnvGroundedTransition
    from lits.memory.base import Augmentor
    from lits.structures.node import BFSNode, MCTSNode, SearchNode

    parts = [
        "# Plugin author's reference\n",
        "Generated from the code by `python -m lits.reference`; a test keeps it in step with the code.\n",
        "## Hooks (`lits.plugin_host.hookspecs`)\n",
        "Implement any of them in the module your `lits.plugins` entry point names, decorated with "
        "`@hookimpl` (`from lits.api import hookimpl`); each receives `register` and returns nothing.\n",
        _routines((n, getattr(hookspecs, n)) for n in sorted(dir(hookspecs)) if n.startswith("register_")),
        "## Decorators (`lits.registry`)\n",
        "The other door into the same store.\n",
        _routines(
            (n, getattr(registry, n))
            for n in sorted(registry.__all__)
            if n.startswith("register_") and n not in ("register_prompt",)
        ),
        "## Components\n",
        "Subclass one base per component. *abstract* methods must be written; the others have the default "
        "described. Constructor keywords a class declares (a class attribute or method) may be passed to it; "
        "any other keyword is an error naming the closest setting.\n",
        _class_methods(Transition, "Transition"),
        _class_methods(
            EnvGroundedTransition,
            "EnvGroundedTransition (env-grounded domains)",
            extra="An env-grounded domain must also implement `init_state`, `goal_check` and either "
            "`generate_actions` (enumerable) or `validate_action` (open-ended); `lits plugins "
            "--check` and every run check this.\n",
        ),
        _class_methods(Policy, "Policy"),
        _class_methods(RewardModel, "RewardModel"),
        "## Augmentors (`--memory-arg augmentors=NAME`)\n",
        "Subclass `lits.memory.Augmentor`, keep what it remembers in `self.memory` (JSON: saved with each "
        "attempt, restored on `--resume`), declare the `--memory-arg` keys it reads in `OPTIONS`, and register it "
        "with `register_augmentors` or `@register_augmentor(name)`. See docs/memory-and-attempts.md.\n",
        _class_methods(Augmentor, "Augmentor"),
        "## Search algorithms\n",
        "Subclass `BaseTreeSearch` and implement `search()`; register it with "
        "`@register_search(name, config_class=...)`.\n",
        _class_methods(BaseTreeSearch, "BaseTreeSearch"),
        "### Node fields\n",
        _dataclass_fields(SearchNode),
        _dataclass_fields(MCTSNode, only_own=True),
        _dataclass_fields(BFSNode, only_own=True),
        "## Settings (`--search-arg` / `--chain-arg`)\n",
        *(_config(c) for c in (TreeSearchConfig, MCTSConfig, BFSConfig, ChainConfig, CoTConfig, SelfConsistencyConfig)),
        PROSE_DATASETS,
        PROSE_REWARDS,
        PROSE_STOPS,
    ]
    return "\n".join(p.rstrip() + "\n" for p in parts if p)


def _first_line(obj: object) -> str:
    doc = inspect.getdoc(obj) or ""
    return " ".join(doc.split("\n\n")[0].split())


def _routines(items: Iterable[tuple[str, Callable[..., object]]]) -> str:
    rows = ["| name | arguments | what |", "|---|---|---|"]
    for name, fn in items:
        rows.append(f"| `{name}` | `{_signature(fn)}` | {_first_line(fn).replace('|', '/')} |")
    return "\n".join(rows) + "\n"


def _signature(fn: Callable[..., object]) -> str:
    try:
        try:
            text = str(inspect.signature(fn, eval_str=True))
        except Exception:  # an annotation that cannot be resolved here: show it as written
            text = str(inspect.signature(fn)).replace("'", "")
    except (TypeError, ValueError):
        return "(...)"
    text = text.replace("typing.", "").replace("collections.abc.", "").replace("~", "")
    return text.replace("|", "/")


def _class_methods(cls: type, title: str, extra: str = "") -> str:
    rows = [f"### {title}\n", extra, "| method | kind | default |", "|---|---|---|"]
    abstract: frozenset[str] = getattr(cls, "__abstractmethods__", frozenset())
    for name, member in sorted(vars(cls).items()):
        if name.startswith("__") or not (inspect.isfunction(member) or isinstance(member, (staticmethod, classmethod))):
            continue
        if name.startswith("_") and name not in abstract and name not in _HOOK_METHODS:
            continue
        fn = member.__func__ if isinstance(member, (staticmethod, classmethod)) else member
        kind = "abstract" if name in abstract else ("static" if isinstance(member, staticmethod) else "method")
        rows.append(f"| `{name}{_signature(fn)}` | {kind} | {_first_line(fn).replace('|', '/')} |")
    return "\n".join(r for r in rows if r) + "\n"


#: Underscore methods a subclass is meant to write (the public method wraps them).
_HOOK_METHODS = ("_step", "_get_actions", "_fast_reward", "_fast_rewards")


def _dataclass_fields(cls: type, only_own: bool = False) -> str:
    inherited = (
        {f.name for base in cls.__mro__[1:] if dataclasses.is_dataclass(base) for f in dataclasses.fields(base)}
        if only_own
        else set()
    )
    rows = [f"`{cls.__name__}`" + (" adds" if only_own else "") + ":", "", "| field | default |", "|---|---|"]
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in inherited or f.name in ("parent", "children"):
            continue
        if f.default is not dataclasses.MISSING:
            shown = repr(f.default)
        elif f.default_factory is not dataclasses.MISSING:
            shown = f"{getattr(f.default_factory, '__name__', 'factory')}()"
        else:
            shown = "required"
        rows.append(f"| `{f.name}` | `{shown}` |")
    return "\n".join(rows) + "\n"


def _config(cls: type[BaseModel]) -> str:
    own = set(cls.__annotations__)
    own_doc = " ".join((cls.__dict__.get("__doc__") or "").split())
    rows = [
        f"### `{cls.__name__}`" + (f" ({own_doc})" if own_doc else "") + "\n",
        "| setting | default | what |",
        "|---|---|---|",
    ]
    for name, field in cls.model_fields.items():
        if name not in own and cls.__name__ != "TreeSearchConfig" and cls.__name__ != "ChainConfig":
            continue
        rows.append(f"| `{name}` | `{field.default!r}` | {field.description or ''} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(render(), end="")
