"""The hooks a LiTS plugin may implement.

Each hook receives a ``register`` callable; call it once per thing you add.
Decorators in :mod:`lits.registry` are the other way to register and end up
in the same store (:mod:`lits.plugin_host.store`).  Call hooks with keyword arguments;
implementations take exactly ``register`` (no defaults).  Specs may only ever
gain arguments, never lose them.
"""

from __future__ import annotations

from typing import Any, Callable

import pluggy

hookspec = pluggy.HookspecMarker("lits")
hookimpl = pluggy.HookimplMarker("lits")


@hookspec
def register_transitions(register: Callable[..., Any]) -> None:
    """``register(name, cls, task_type=None)`` for each Transition class."""


@hookspec
def register_policies(register: Callable[..., Any]) -> None:
    """``register(name, cls, task_type=None)`` for each Policy class."""


@hookspec
def register_reward_models(register: Callable[..., Any]) -> None:
    """``register(name, cls, task_type=None)`` for each RewardModel class."""


@hookspec
def register_datasets(register: Callable[..., Any]) -> None:
    """``register(name, loader, task_type=None, **meta)`` for each dataset loader."""


@hookspec
def register_resources(register: Callable[..., Any]) -> None:
    """``register(name, loader)``: loader returns ``{"tools": [...], "tool_context": str}``."""


@hookspec
def register_searches(register: Callable[..., Any]) -> None:
    """``register(name, cls, config_class=None)`` for each tree-search algorithm."""


@hookspec
def register_chains(register: Callable[..., Any]) -> None:
    """``register(name, cls, config_class=None)`` for each chain agent."""


@hookspec
def register_prompts(register: Callable[..., Any]) -> None:
    """``register(component, agent, key, value, user=False)`` for each prompt."""


@hookspec
def register_search_frameworks(register: Callable[..., Any]) -> None:
    """``register(name, policy=, transition=, reward_model=, search="mcts", search_args=None, description="")``.

    Names registered components as one ``--search-framework`` bundle.
    """


@hookspec
def register_commands(register: Callable[..., Any]) -> None:
    """``register(name, add_arguments, help="")``: ``lits NAME ...`` becomes a command.

    ``add_arguments(parser)`` fills the command's ``argparse`` parser (sub-commands too) and sets
    ``func`` (``args -> exit status``) with ``parser.set_defaults``; ``add_arguments`` may be given as
    ``"module:function"`` so nothing is imported until the command is used.
    """


@hookspec
def register_models(register: Callable[..., Any]) -> None:
    """``register(name, factory, description="", concurrency=None)``: ``factory(spec, **options)`` returns a
    LanguageModel; ``concurrency``: its calls in flight when ``--concurrency`` is not given (default: a
    server's, 16; an in-process backend says 1).

    ``--model NAME`` or ``--model NAME/model`` picks it (the factory gets the whole spec); options are ``base_url``, ``api``, ``concurrency``,
    ``price_in``, ``price_out`` (take ``**options`` and use what you need), and the run's ``CallOptions``
    (``log_prompts``, ``constrain_replies``, ``sampling``, ``limiter``: pass them on to ``LanguageModel``,
    e.g. ``MyModel(..., **call_options(options))``).
    """


@hookspec
def register_augmentors(register: Callable[..., Any]) -> None:
    """``register(name, cls, description="")`` for each augmentor (a ``lits.memory.Augmentor`` subclass).

    ``--memory-arg augmentors=NAME[,NAME]`` runs it between a run's attempts of each instance.
    """
