"""A paged prefix cache in miniature, as vLLM's automatic prefix caching accounts for prompt tokens.

Tokens are whitespace-separated words (``text.split()``: what the loopback
server and the scripted model count as tokens).  A prompt is cut into blocks
of ``block_size`` tokens; a full block is known by a hash of every token up to
its end, so it is found only where the whole prefix before it matches too.  A
request is served the leading blocks found, but never its last token (the
server computes that one for the next token's logits, so at most the full
blocks before it), and then leaves all its full blocks in the cache, which
keeps the ``capacity`` most recently used blocks.  Only prompts are cached,
not generated tokens.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Sequence


class PagedPrefixCache:
    def __init__(self, block_size: int = 16, capacity: int = 4096) -> None:
        if block_size < 1 or capacity < 1:
            raise ValueError("block_size and capacity must be at least 1")
        self.block_size = block_size
        self.capacity = capacity
        self._blocks: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()
        #: Prompt tokens seen and served from the cache, over every request.
        self.prompt_tokens = 0
        self.cached_tokens = 0

    def serve(self, tokens: Sequence[str]) -> int:
        """Read a prompt of ``tokens``: how many of them came from the cache."""
        size = self.block_size
        keys, chain = [], hashlib.blake2b(digest_size=16)
        for start in range(0, len(tokens) - size + 1, size):
            chain.update("\0".join(tokens[start : start + size]).encode() + b"\1")
            keys.append(chain.copy().digest())
        usable = max(0, (len(tokens) - 1) // size)  # blocks wholly before the last token
        with self._lock:
            hits = 0
            for key in keys[:usable]:
                if key not in self._blocks:
                    break
                hits += 1
            for key in keys:
                self._blocks[key] = None
                self._blocks.move_to_end(key)
            while len(self._blocks) > self.capacity:
                self._blocks.popitem(last=False)
            self.prompt_tokens += len(tokens)
            self.cached_tokens += hits * size
        return hits * size
