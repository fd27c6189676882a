"""Core's own components and algorithms, registered like any plugin's (pluggy hookimpls)."""

from __future__ import annotations

import os
from typing import Any, Callable, Optional

from lits.hookspecs import hookimpl

DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Options passed through to :class:`~lits.lm.openai_compat.OpenAICompatibleModel`.
SERVER_OPTIONS = ("price_in", "price_out", "timeout", "call_budget", "connect_timeout", "read_timeout",
                  "max_attempts", "adaptive_read_timeout", "patience_floor")


@hookimpl
def register_policies(register: Callable[..., Any]) -> None:
    from lits.components.policy.concat import ConcatPolicy
    from lits.components.policy.env_grounded import EnvGroundedPolicy
    from lits.components.policy.tool_use import ToolUsePolicy

    register("env_grounded", EnvGroundedPolicy, task_type="env_grounded")
    register("tool_use", ToolUsePolicy, task_type="tool_use")
    register("concat", ConcatPolicy, task_type="language_grounded")


@hookimpl
def register_reward_models(register: Callable[..., Any]) -> None:
    from lits.components.reward.env_grounded import EnvGroundedPRM
    from lits.components.reward.generative import GenerativePRM
    from lits.components.reward.tool_use import ToolUsePRM

    register("env_grounded", EnvGroundedPRM, task_type="env_grounded")
    register("tool_use", ToolUsePRM, task_type="tool_use")
    register("generative", GenerativePRM, task_type="language_grounded")


@hookimpl
def register_transitions(register: Callable[..., Any]) -> None:
    from lits.components.transition.concat import ConcatTransition
    from lits.components.transition.tool_use import ToolUseTransition

    register("tool_use", ToolUseTransition, task_type="tool_use")
    register("concat", ConcatTransition, task_type="language_grounded")


@hookimpl
def register_prompts(register: Callable[..., Any]) -> None:
    from lits.prompts import env_grounded as env
    from lits.prompts import language_grounded as lang
    from lits.prompts import tool_use

    for key in ("env_grounded", "default"):
        register("policy", "env_grounded", key, env.POLICY_SYSTEM)
        register("policy", "env_grounded", key, env.POLICY_USER, user=True)
        register("reward", "env_grounded", key, env.REWARD_SYSTEM)
        register("reward", "env_grounded", key, env.REWARD_USER, user=True)
    for key in ("tool_use", "default"):
        register("policy", "tool_use", key, tool_use.POLICY_SYSTEM)
        register("policy", "tool_use", key, tool_use.POLICY_USER, user=True)
    for key in ("language_grounded", "default"):
        register("policy", "concat", key, lang.POLICY_SYSTEM)
        register("policy", "concat", key, lang.POLICY_USER, user=True)
        register("reward", "generative", key, lang.REWARD_SYSTEM)
        register("reward", "generative", key, lang.REWARD_USER, user=True)


@hookimpl
def register_searches(register: Callable[..., Any]) -> None:
    from lits.agents import BFS, MCTS, BFSConfig, MCTSConfig

    register("mcts", MCTS, config_class=MCTSConfig)
    register("bfs", BFS, config_class=BFSConfig)


@hookimpl
def register_chains(register: Callable[..., Any]) -> None:
    from lits.agents import ChainConfig, CoTChain, EnvChain, ReActChat

    register("env_chain", EnvChain, config_class=ChainConfig)
    register("react", ReActChat, config_class=ChainConfig)
    register("cot", CoTChain, config_class=ChainConfig)


@hookimpl
def register_search_frameworks(register: Callable[..., Any]) -> None:
    # Chain-of-thought components under two algorithms: the paper's component-reuse demonstration.
    register("rest", policy="concat", transition="concat", reward_model="generative", search="mcts",
             search_args={"early_stop": False},
             description="ReST-MCTS*: step-by-step thoughts, a generative process reward, MCTS")
    register("tot_bfs", policy="concat", transition="concat", reward_model="generative", search="bfs",
             search_args={"early_stop": False},
             description="Tree of Thoughts: the same components under breadth-first beam search")


@hookimpl
def register_models(register: Callable[..., Any]) -> None:
    register("local", local_model, description="embedded Gemma 3 270M on llama.cpp, in-process (the default)")
    register("scripted", scripted_model, description="deterministic offline stand-in, for smoke tests")
    register("openai", server_model, description="a model served by an OpenAI-compatible server at --base-url "
                                                 "(vLLM, llama.cpp, Ollama, OpenAI); any unregistered name")


def local_model(spec: str, *, base_url: Optional[str] = None, concurrency: int = 1, **options: Any) -> Any:
    if base_url:
        raise ValueError("--base-url is for server models; give --model NAME too (not 'local')")
    from lits.lm.local import LocalLlamaModel

    return LocalLlamaModel(concurrency=concurrency)


def scripted_model(spec: str, *, concurrency: int = 1, **options: Any) -> Any:
    from lits.testing import ScriptedModel

    return ScriptedModel(concurrency=concurrency, chat_native=True)


def server_model(spec: str, *, base_url: Optional[str] = None, api: Optional[str] = None, concurrency: int = 1,
                 **options: Any) -> Any:
    from lits.lm.openai_compat import OpenAICompatibleModel

    return OpenAICompatibleModel(
        spec,
        base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL,
        api=api or "chat",  # type: ignore[arg-type]
        concurrency=concurrency,
        **{k: v for k, v in options.items() if k in SERVER_OPTIONS},
    )
