"""The rows of each kind of training data, built from a run's graded trees (:mod:`lits.export.trees`).

* ``sft``: TRL's conversational prompt-completion: ``prompt`` (the policy's chat messages at the root),
  ``completion`` (one assistant message: the solved path's steps, one per line); per step, the policy's
  messages at the state before each step and the step.
* ``preference``: TRL's conversational preference (DPO): ``prompt`` (the policy's messages at the parent),
  ``chosen`` / ``rejected`` (one assistant message each: two sibling steps), ``margin``.
* ``process``: TRL's stepwise supervision: ``prompt`` (the problem), ``completions`` (the steps of a path to
  a terminal node), ``labels`` (each step's Monte-Carlo value at least the threshold), ``values`` (the soft
  labels); with ``style="openrlhf"``: ``input`` (the problem and the steps, each followed by the placeholder
  token), ``label`` (``+`` / ``-`` per step), ``value`` (soft labels).

Every row also carries ``instance_id`` and ``run`` (the hold-out split and the card read them; trainers
ignore unknown columns).  Only what the model wrote goes into a completion: never the gold answer.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from lits.export.trees import InstanceTree, NodeValue, RunTrees
from lits.lm.base import Message
from lits.structures.node import SearchNode

Row = dict[str, Any]
#: The step separator OpenRLHF's PRM recipes use for Math-Shepherd data (``--placeholder_token``).
PLACEHOLDER = "ки"
#: The columns each kind's trainer reads (what de-duplication compares).
TRAINING_COLUMNS = {
    "sft": ("prompt", "completion"),
    "preference": ("prompt", "chosen", "rejected"),
    "process": ("prompt", "completions", "labels"),
    "process-openrlhf": ("input", "label"),
}


@dataclass(frozen=True)
class RowOptions:
    """What each kind keeps (the ``lits export`` flags)."""

    all_solved: bool = False
    #: SFT: one row per step of a solved path (the policy's prompt at the state before it), not per path.
    per_step: bool = False
    examples: bool = True
    min_visits: int = 1
    min_margin: float | None = None
    threshold: float = 0.5
    style: str = "trl"
    placeholder: str = PLACEHOLDER


def step_text(node: SearchNode) -> str:
    """What the model wrote for the step that led to ``node``: the step's assistant turn (never a tool's
    observation, which the environment wrote)."""
    if node.step is not None:
        said = [str(m["content"]) for m in node.step.to_messages() if m.get("role") == "assistant"]
        return "\n".join(said).strip()
    return "" if node.action is None else str(node.action).strip()


def policy_messages(
    run: RunTrees, node: SearchNode, query: object, *, whole: bool = False, examples: bool = True
) -> list[Message]:
    """The chat messages the run's policy sends at ``node``'s state (without sibling exclusions).

    A policy with ``messages(state, query)`` (chain of thought, tool use) renders them; an env-grounded
    policy renders its prompt with the state's legal actions.  A policy that renders neither gets the problem
    and the steps so far as one user message.  ``whole``: the policy's ask for the rest of the solution, where
    it has one.  ``examples=False`` drops the worked examples (the turns between the system prompt and the
    last ask)."""
    policy: Any = run.components.policy
    state = node.state
    messages: list[Message] | None = None
    if state is not None:
        try:
            render = getattr(policy, "messages", None)
            prompt = getattr(policy, "prompt", None)
            if callable(render):
                wants_whole = whole and "whole" in inspect.signature(render).parameters
                messages = render(state, query, whole=True) if wants_whole else render(state, query)
            elif prompt is not None and callable(getattr(prompt, "messages", None)):
                listed = getattr(policy, "generate_all_actions", None)
                valid = listed(state.env_state) if callable(listed) else None  # type: ignore[attr-defined]
                messages = prompt.messages(state, query, valid or [])
        except Exception:  # a policy that cannot render offline: the documented fallback below
            messages = None
    if not messages:
        run.fallback_prompts += 1
        done = [step_text(n) for n in node.path()[1:]]
        shown = "".join(f"\nStep {i}: {text}" for i, text in enumerate(done, 1))
        messages = [{"role": "user", "content": f"{query}{shown}"}]
    if not examples and len(messages) > 2:
        head = [messages[0]] if messages[0].get("role") == "system" else []
        messages = [*head, messages[-1]]
    return [dict(m) for m in messages]  # type: ignore[misc]


def _assistant(text: str) -> list[Message]:
    return [{"role": "assistant", "content": text}]


def _meta(run: RunTrees, tree: InstanceTree) -> Row:
    return {"instance_id": tree.id, "run": run.root.name}


def sft_rows(run: RunTrees, options: RowOptions) -> list[Row]:
    """One row per solved instance (the chosen path when its own answer is correct, else the first correct
    terminal's), or with ``all_solved`` one per distinct correct path: the policy's ask for the whole solution
    at the root and the path's steps, one a line; with ``per_step`` one row per step of such a path: the
    policy's prompt at the state before the step, and the step."""
    rows: list[Row] = []
    for tree in run.instances:
        if not tree.solved:
            continue
        by_id = {n.id: n for n in tree.root.iter_tree()}
        good = [by_id[i] for i, ok in sorted(tree.correct.items()) if ok]
        if not good:
            continue
        chosen = tree.selected[-1]
        ends = good if options.all_solved else [chosen if chosen in good else good[0]]
        seen: set[tuple[str, ...]] = set()
        for end in ends:
            steps = tuple(step_text(n) for n in end.path()[1:])
            if not steps or steps in seen:
                continue
            seen.add(steps)
            if options.per_step:
                rows += [
                    {
                        "prompt": policy_messages(run, node.parent, tree.query, examples=options.examples),
                        "completion": _assistant(step_text(node)),
                        "steps": [step_text(node)],
                        **_meta(run, tree),
                    }
                    for node in end.path()[1:]
                    if node.parent is not None and step_text(node)
                ]
                continue
            rows.append(
                {
                    "prompt": policy_messages(run, tree.root, tree.query, whole=True, examples=options.examples),
                    "completion": _assistant("\n".join(steps)),
                    "steps": list(steps),
                    **_meta(run, tree),
                }
            )
    return rows


def _labelled(tree: InstanceTree, node: SearchNode, options: RowOptions) -> NodeValue | None:
    value = tree.values.get(node.id)
    return value if value is not None and value.outcomes >= max(1, options.min_visits) else None


def preference_rows(run: RunTrees, options: RowOptions) -> list[Row]:
    """Sibling pairs: one child's outcomes include a correct one and the other's include none (or, with
    ``min_margin``, the first's value exceeds the second's by at least that)."""
    rows: list[Row] = []
    for tree in run.instances:
        for parent in tree.nodes():
            children = [
                (c, v) for c in parent.children if (v := _labelled(tree, c, options)) is not None and step_text(c)
            ]
            if len(children) < 2:
                continue
            prompt: list[Message] | None = None
            for good, gv in children:
                for bad, bv in children:
                    if good is bad or step_text(good) == step_text(bad):
                        continue
                    margin = gv.value - bv.value
                    split = gv.correct > 0 and bv.correct == 0
                    clear = options.min_margin is not None and margin >= options.min_margin
                    if not (split or clear) or margin <= 0:
                        continue
                    if prompt is None:
                        prompt = policy_messages(run, parent, tree.query, examples=options.examples)
                    rows.append(
                        {
                            "prompt": prompt,
                            "chosen": _assistant(step_text(good)),
                            "rejected": _assistant(step_text(bad)),
                            "margin": round(margin, 6),
                            **_meta(run, tree),
                        }
                    )
    return rows


def problem_text(tree: InstanceTree) -> str:
    """The problem as a process reward model reads it: the question, or an env-grounded task's start and goal
    (its query is the goal alone)."""
    start = getattr(tree.root.state, "init_state", None)
    return f"Start: {start}\nGoal: {tree.query}" if start else str(tree.query)


def process_rows(run: RunTrees, options: RowOptions) -> list[Row]:
    """One row per path to a terminal node or to a rollout's last node, cut before its first step without a
    value (fewer outcomes than ``min_visits``): the steps, their Monte-Carlo values and hard labels at
    ``threshold``."""
    rows: list[Row] = []
    for tree in run.instances:
        by_id = {n.id: n for n in tree.root.iter_tree()}
        problem = problem_text(tree)
        for end_id in sorted(set(tree.correct) | {path[-1].id for path in tree.rollouts}):
            steps: list[str] = []
            values: list[float] = []
            for node in by_id[end_id].path()[1:]:
                value = _labelled(tree, node, options)
                text = step_text(node)
                if value is None or not text:
                    break
                steps.append(text)
                values.append(round(value.value, 6))
            if steps:
                rows.append(_process_row(problem, steps, values, options, _meta(run, tree)))
    return rows


def _process_row(problem: str, steps: list[str], values: list[float], options: RowOptions, meta: Row) -> Row:
    hard = [v >= options.threshold for v in values]
    if options.style == "openrlhf":
        text = problem + "".join(f"\n{step} {options.placeholder}" for step in steps)
        return {"input": text, "label": ["+" if h else "-" for h in hard], "value": values, **meta}
    return {"prompt": problem, "completions": steps, "labels": hard, "values": values, **meta}


BUILDERS = {"sft": sft_rows, "preference": preference_rows, "process": process_rows}
