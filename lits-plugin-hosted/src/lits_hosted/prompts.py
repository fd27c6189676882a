"""A LiTS prompt as the hosted chat APIs take it: a system text apart, alternating turns, cache marks.

Both Anthropic's Messages API and Bedrock's Converse API take the system prompt apart from the turns,
want the turns to alternate user/assistant starting with the user, and cache a prompt up to a marked
block.  The marks go on the *stable head* of a component's prompt: the system text (instructions, the
same for every call of a component) and the last assistant turn before the final user turn.  That
turn ends the worked examples of a few-shot chat (BlocksWorld's policy: examples as answered turns,
then the state), and in a conversation that grows step by step (a ReAct chain) it ends the history
that the next step's prompt repeats.  The final user turn (a search node's state, the newest
observation) is not marked: it rarely repeats as it is, and a cache write costs 1.25x.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from lits.api import Prompt


@dataclass(frozen=True)
class Conversation:
    system: str
    #: ``(role, text)``, alternating, the first a user turn.
    turns: tuple[tuple[str, str], ...]
    #: Indices of turns whose end is a cache mark (besides the system text, always marked when present).
    marked: tuple[int, ...]


def conversation(prompt: Prompt, *, cache: bool = True) -> Conversation:
    """Split ``prompt`` (text or chat messages) into system text and alternating turns, and mark its head."""
    if isinstance(prompt, str):
        return Conversation("", (("user", prompt),), ())
    system = "\n\n".join(str(m["content"]) for m in prompt if m["role"] == "system")
    turns: list[tuple[str, str]] = []
    for message in prompt:
        if message["role"] == "system":
            continue
        role = "assistant" if message["role"] == "assistant" else "user"
        if turns and turns[-1][0] == role:  # the APIs want alternating turns: same-role neighbours join
            turns[-1] = (role, f"{turns[-1][1]}\n\n{message['content']}")
        else:
            turns.append((role, str(message["content"])))
    if not turns or turns[0][0] != "user":
        turns.insert(0, ("user", "Begin."))
    answered = [i for i, (role, _) in enumerate(turns[:-1]) if role == "assistant" and turns[i + 1][0] == "user"]
    marked = (answered[-1],) if cache and answered else ()
    return Conversation(system, tuple(turns), marked)


def sent_stops(stops: Sequence[str], limit: int) -> list[str]:
    """The stop sequences the API is given: those with visible text (both APIs refuse whitespace-only
    ones, such as a newline), at most ``limit``; every stop is also applied to the reply here."""
    return [s for s in stops if s.strip()][:limit]


def cut_at_stops(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """``text`` up to its first stop sequence, and whether one was found."""
    cut = min((i for i in (text.find(s) for s in stops if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)
