"""Chain-in-Tree continuation: a node gets several children only when it needs them.

With ``add_continuation=true`` every expansion first asks a branching-necessity
(BN) evaluator whether the node's next step is open (worth several children)
or settled.  A settled node gets one child, so the search runs on along a
chain inside the tree and spends nothing on siblings it would not need: no
extra fast rewards, transitions or rewards for them.  The evaluators:

* ``direct`` asks the BN model (``--bn-model``, default the policy's) whether
  the next step is obvious; one call per decision.
* ``sc_exact`` samples ``bn_k`` next steps from the policy, each on its own
  sampling stream (seeded, so repeatable and cached apart), and branches when
  they differ: steps that state a final answer by their answers (the
  dataset's equivalence, as self-consistency votes), others by their texts;
  the sampled steps are the children when it branches.
* ``sc`` as ``sc_exact``, but steps that differ are shown to the BN
  model, which says whether they mean the same (one call, only then).
* ``entropy`` branches when the normalized entropy of the sampled steps'
  clusters (grouped as ``sc_exact`` groups them) exceeds ``bn_threshold``
  (default 0.6: a 2-1 split of three samples continues, a 1-1-1 split
  branches).
* ``confidence`` asks the policy's model for its log-probabilities while it
  proposes and branches when the probability of the first step's text is
  below ``1 - bn_threshold`` (default 0.6), or with ``bn_confidence=token``
  when the geometric mean of its tokens' probabilities is (long free-text
  steps).  A settled node keeps that step alone and costs no reward call
  (nor, where the server answers one sample per request, the siblings'
  policy calls).  A model that gives no log-probabilities branches.

The sampling methods draw at ``bn_temperature`` (default: the search's).

Each verdict is kept on its node (``SearchNode.branching``: method, branch,
score, why), journaled with it, and counted in ``search_stats``:
``bn_decisions``, ``bn_branched``, ``bn_continued``, ``bn_calls`` (calls the
BN model made) and ``bn_samples`` (policy calls made to sample steps for it).
The prompts are registered (``register_prompts``: component ``bn``, agent
``continuation``), so a dataset may word its own.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Callable, Protocol, Sequence, TypeVar

from lits.agents.config import TreeSearchConfig
from lits.answers import answer_rules
from lits.components.base import accepts_exclude
from lits.runtime.concurrency import parallel_map
from lits.lm.base import Completion, LanguageModel, Prompt, recording_replies, sampling_stream
from lits.runtime.observability import call_context
from lits.prompts.registry import PromptRegistry
from lits.structures.base import Step, step_key
from lits.structures.env_grounded import EnvState
from lits.structures.node import Branching, SearchNode

N = TypeVar("N", bound=SearchNode)


class TreeSearch(Protocol):
    """What continuation uses of the search that calls it (:class:`~lits.agents.tree.base.BaseTreeSearch`, which
    imports this module: the search knows continuation, not the other way round)."""

    @property
    def config(self) -> TreeSearchConfig: ...

    @property
    def policy(self) -> Any: ...

    @property
    def transition(self) -> Any: ...

    @property
    def bn_model(self) -> LanguageModel | None: ...

    @property
    def query(self) -> object: ...

    @property
    def iteration(self) -> int: ...

    @property
    def stats(self) -> dict[str, Any]: ...

    @property
    def _lock(self) -> threading.Lock: ...

    def new_node(self, cls: type[N] | None = None, **fields: Any) -> N: ...

    def mark(self, node: SearchNode) -> None: ...

    def phase(self, name: str, **tags: object) -> call_context: ...

    def sample(
        self,
        node: SearchNode,
        n: int,
        phase: str = "expand",
        *,
        count: bool = True,
        temperature: float | None = None,
        greedy_first: bool | None = None,
        exclude: Sequence[str] = (),
    ) -> list[Step]: ...

    def score_children(self, parents: list[SearchNode], phase: str = "expand") -> None: ...


#: The score above which a method branches when ``bn_threshold`` is not given.
DEFAULT_THRESHOLDS = {"sc": 0.0, "sc_exact": 0.0, "entropy": 0.6, "direct": 0.5, "confidence": 0.4}
#: The prompts' names in the registry: (component, agent).
PROMPT_COMPONENT, PROMPT_AGENT = "bn", "continuation"
#: Counters this module adds to ``search_stats``.
STATS = ("bn_decisions", "bn_branched", "bn_continued", "bn_calls", "bn_samples")


def propose(search: TreeSearch, node: SearchNode, phase: str) -> list[Step]:
    """The steps to attach to ``node``: one unless the BN evaluator finds it needs branching."""
    config = search.config
    method = config.bn_method
    threshold = config.bn_threshold if config.bn_threshold is not None else DEFAULT_THRESHOLDS[method]
    samples = 0
    with search.phase(phase, depth=node.depth, iteration=search.iteration):
        if method == "direct":
            verdict, calls = _direct(search, node, phase, threshold)
            steps = search.sample(node, config.n_actions if verdict["branch"] else 1, phase)
        elif method == "confidence":
            verdict, steps = _confidence(search, node, phase, threshold)
            calls = 0
        else:
            k = config.bn_k or max(2, config.n_actions)
            candidates = _candidates(search, node, phase, k)
            samples = k
            verdict, calls, keep = _agreement(search, node, phase, method, candidates, threshold)
            steps = candidates if verdict["branch"] else keep
    node.branching = verdict
    search.mark(node)
    with search._lock:
        stats = search.stats
        for key in STATS:
            stats.setdefault(key, 0)
        stats["bn_decisions"] += 1
        stats["bn_branched" if verdict["branch"] else "bn_continued"] += 1
        stats["bn_calls"] += calls
        stats["bn_samples"] += samples
        if samples:  # the sampled steps were this expansion's proposals
            stats["expansions"] += 1
    return steps


def inherit_scores(search: TreeSearch, parents: list[SearchNode]) -> list[SearchNode]:
    """The parents whose children still need fast rewards.

    A continued node's lone child is a chain step: it takes its parent's fast
    reward (the step that began the chain was judged) instead of a call of
    its own.  Below the root only: the root has no judged step to pass on.
    """
    rest = []
    for parent in parents:
        verdict = parent.branching
        if verdict is None or verdict["branch"] or parent.parent is None or len(parent.children) != 1:
            rest.append(parent)
            continue
        child = parent.children[0]
        # The parent, not its id: a tree-parallel batch numbers its new nodes only after its rollouts.
        child.fast_reward, child.fast_reward_details = parent.fast_reward, {"inherited_from_parent": True}
        search.mark(child)
    return rest


def reopen(search: TreeSearch, path: Sequence[SearchNode], phase: str = "reopen") -> bool:
    """A chain that ended unsolved: one of its continued nodes gets the siblings it was spared.

    The least sure verdict is reopened first, the shallowest among equals (an early step decides
    most of what follows).  Returns False when no node on ``path`` was continued.
    """
    continued = [n for n in path[:-1] if n.branching is not None and not n.branching["branch"]]
    if not continued:
        return False
    node = max(continued, key=lambda n: (n.branching["score"] if n.branching else 0.0, -n.depth))
    if node.branching is None:
        return False
    have = {step_key(c.step) for c in node.children}
    # A policy told which steps the node has is asked only for the ones it was spared.
    taken = [str(_action(c.step)) for c in node.children] if accepts_exclude(search.policy) else []
    with search.phase(phase, depth=node.depth, iteration=search.iteration):
        steps = search.sample(node, max(1, search.config.n_actions - len(taken)), phase, exclude=taken)
    for step in steps:
        key = step_key(step)
        if key not in have and not step.error:
            have.add(key)
            node.add_child(search.new_node(action=_action(step), step=step))
    search.score_children([node], phase)
    node.branching = {
        **node.branching,
        "branch": True,
        "why": node.branching["why"] + "; reopened: the chain below it ended unsolved",
    }
    search.mark(node)
    with search._lock:
        search.stats["bn_reopened"] = search.stats.get("bn_reopened", 0) + 1
    return True


def _candidates(search: TreeSearch, node: SearchNode, phase: str, k: int) -> list[Step]:
    """``k`` next steps, each from its own policy call on its own sampling stream (errors dropped)."""

    def one(j: int) -> list[Step]:
        with sampling_stream(j), call_context(sample=j):  # with greedy_first, only the first sample is greedy
            return search.sample(
                node,
                1,
                phase,
                count=False,
                temperature=search.config.bn_temperature,
                greedy_first=j == 0 and search.config.greedy_first,
            )[:1]

    drawn = [step for steps in parallel_map(one, range(k)) for step in steps]
    usable = [s for s in drawn if not s.error]
    return usable or drawn[:1]


def _agreement(
    search: TreeSearch, node: SearchNode, phase: str, method: str, candidates: list[Step], threshold: float
) -> tuple[Branching, int, list[Step]]:
    """The verdict on sampled steps, the BN model calls it took, and the one step to keep if not branching."""
    clusters = _clusters(search, candidates)
    sizes = sorted((len(c) for c in clusters), reverse=True)
    largest = max(clusters, key=len) if clusters else candidates
    keep = largest[:1]
    total = max(1, len(candidates))
    calls = 0
    if method == "entropy":
        score = _normalized_entropy(sizes, total)
        why = f"entropy {score:.2f} of {len(candidates)} sampled steps in {len(clusters)} distinct"
    else:
        score = 1 - sizes[0] / total if sizes else 0.0
        why = f"{len(clusters)} distinct of {len(candidates)} sampled steps"
        if method == "sc" and len(clusters) > 1:
            same, calls = _same_meaning(search, node, phase, [str(_action(c[0])) for c in clusters])
            if same:
                score, why = 0.0, why + "; the BN model judged them the same in meaning"
            else:
                why += "; the BN model judged them different"
    branch = score > threshold
    return {"method": method, "branch": branch, "score": round(score, 4), "why": why}, calls, keep


def _clusters(search: TreeSearch, steps: Sequence[Step]) -> list[list[Step]]:
    """Sampled steps grouped by what they say, in the order first seen.

    Steps that state a final answer agree when their answers do (the dataset's ``equivalent``: the vote of
    self-consistency), however they are worded; other steps agree when their words do.
    """
    extract = getattr(search.transition, "extract_answer", None)
    equivalent = _equivalence(search)
    groups: list[tuple[str | None, str, list[Step]]] = []
    for step in steps:
        answer = step.get_answer() if hasattr(step, "get_answer") else None
        if answer is None and callable(extract):
            answer = extract(str(_action(step)))
        said = None if answer is None else str(answer)
        text = _text_key(step)
        for known, words, members in groups:
            if (said is None and known is None and words == text) or (
                said is not None and known is not None and equivalent(said, known)
            ):
                members.append(step)
                break
        else:
            groups.append((said, text, [step]))
    return [members for _, _, members in groups]


def _equivalence(search: TreeSearch) -> Callable[[str, str], bool]:
    """The dataset's answer equivalence (registered with it), else equal normalized text."""
    return answer_rules(search.policy.task_name)[1]


def _normalized_entropy(sizes: Sequence[int], total: int) -> float:
    """Entropy of the cluster distribution over the most it could be for ``total`` samples (0..1)."""
    if total < 2:
        return 0.0
    entropy = -sum(n / total * math.log(n / total) for n in sizes if n)
    return entropy / math.log(total)


def _confidence(search: TreeSearch, node: SearchNode, phase: str, threshold: float) -> tuple[Branching, list[Step]]:
    """The expansion's first step and how sure the model was of it; siblings only when it was unsure.

    A model that answers one sample per request (llama.cpp's slots) is asked for the first step alone and,
    when unsure, for the rest as the expansion would ask; one that batches samples is asked for all
    ``n_actions`` in one request, and a settled node keeps the first: either way a branching node costs
    what an expansion does.
    """
    n = search.config.n_actions
    model = search.policy.base_model
    batched = n > 1 and (model is None or model.batches_samples)
    with recording_replies() as replies:
        steps = search.sample(node, n if batched else 1, phase)
    usable = [s for s in steps if not s.error]
    per_token = search.config.bn_confidence == "token"
    probability = _probability_of(usable[0], replies, per_token) if usable else None
    if probability is None:
        score = 1.0
        why = (
            "the policy proposed no usable step"
            if not usable
            else "no reply of the model's reads as the step: branch to be safe"
            if any(r.logprobs for r in replies)
            else "the model gave no log-probabilities: branch to be safe"
        )
    else:
        score = round(1 - probability, 4)
        why = (
            f"the model gave its step's tokens a mean probability {probability:.2f}"
            if per_token
            else f"the model gave its step probability {probability:.2f}"
        )
    branch = score > threshold
    if not branch:
        steps = usable[:1]
    elif not batched and n > 1:
        # A policy that cannot be told what it has proposed is asked for all n_actions again (a repeat of the
        # first step is one child).
        taken = [str(_action(s)) for s in usable] if accepts_exclude(search.policy) else []
        steps += search.sample(node, n - len(taken), phase, count=False, exclude=taken)
    return {"method": "confidence", "branch": branch, "score": score, "why": why}, steps


def _probability_of(step: Step, replies: Sequence[Completion], per_token: bool = False) -> float | None:
    """The probability the model gave the reply that became ``step`` (the last one that says it)."""
    said = _text_key(step)
    saying = [reply for reply in replies if said and said in _text_key(reply)]
    return reply_probability(saying[-1], per_token) if saying else None


def reply_probability(reply: Completion, per_token: bool = False) -> float | None:
    """The probability the model gave the reply's text (its tokens' together, or their geometric mean with
    ``per_token``); None without log-probabilities."""
    if not reply.logprobs:
        return None
    total = sum(t.logprob for t in reply.logprobs)
    return math.exp(total / len(reply.logprobs) if per_token else total)


def _direct(search: TreeSearch, node: SearchNode, phase: str, threshold: float) -> tuple[Branching, int]:
    """Ask the BN model whether the next step is obvious: Yes continues, No (or no clear answer) branches."""
    reply = _ask(search, "direct", question=_query(search), progress=_progress(node))
    answer = _yes_no(reply)
    score = {True: 0.0, False: 1.0, None: 1.0}[answer]
    why = {
        True: "the BN model called the next step obvious",
        False: "the BN model saw several options",
        None: f"no Yes/No in the BN model's reply {reply[:40]!r}: branch to be safe",
    }[answer]
    return {"method": "direct", "branch": score > threshold, "score": score, "why": why}, 1


def _same_meaning(search: TreeSearch, node: SearchNode, phase: str, texts: list[str]) -> tuple[bool, int]:
    """Whether the BN model reads the distinct sampled steps as one step (one call)."""
    listed = "\n".join(f"- {t}" for t in texts)
    reply = _ask(search, "same", question=_query(search), progress=_progress(node), candidates=listed)
    return _yes_no(reply) is True, 1


def _ask(search: TreeSearch, key: str, **fields: str) -> str:
    """One call to the BN model with the registered prompt ``key``, tagged as the ``bn`` component."""
    policy = search.policy
    task_name, task_type = policy.task_name, policy.TASK_TYPE
    system = PromptRegistry.get(PROMPT_COMPONENT, PROMPT_AGENT, task_name, task_type) or ""
    templates = PromptRegistry.get_usr(PROMPT_COMPONENT, PROMPT_AGENT, task_name, task_type) or {}
    user = str(templates[key]).format(**fields)
    model = search.bn_model if search.bn_model is not None else policy.base_model
    if model is None:
        raise ValueError("add_continuation with a BN model call needs a model (--bn-model, or the policy's)")
    prompt: Prompt = (
        [{"role": "system", "content": str(system)}, {"role": "user", "content": user}]
        if model.chat_native
        else f"{system}\n\n{user}".lstrip()
    )
    with call_context(component=PROMPT_COMPONENT):
        replies = model.generate(prompt, n=1, temperature=0.0, max_tokens=8, stop=["\n"])
    return str(replies[0]) if replies else ""


def _yes_no(reply: str) -> bool | None:
    words = reply.strip().lower().lstrip("*\"' ").split()
    first = words[0].strip(".,:;!*\"'") if words else ""
    return True if first == "yes" else False if first == "no" else None


def _query(search: TreeSearch) -> str:
    return str(search.query)


def _progress(node: SearchNode) -> str:
    """What the state shows so far: the steps taken and, for an environment, where it stands."""
    state = node.state
    steps: list[str] = [str(_action(s)) for s in state] if isinstance(state, list) else []
    lines = [f"Step {i}: {text}" for i, text in enumerate(steps, 1) if text]
    shown = "Steps so far:\n" + "\n".join(lines) if lines else "No steps taken yet."
    where = state.env_state if isinstance(state, EnvState) else None
    return f"{shown}\nCurrent state: {where}" if where else shown


def _action(step: object) -> object:
    """A step's action; a node without a step (None) or a bare action stands for itself."""
    get = getattr(step, "get_action", None)
    return get() if callable(get) else getattr(step, "action", step)


def _text_key(step: object) -> str:
    """Steps with equal keys say the same in the same words (case, spacing and a final period aside)."""
    return " ".join(str(_action(step)).lower().split()).rstrip(".")
