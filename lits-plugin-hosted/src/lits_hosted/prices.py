"""What a hosted call costs: list prices per model, and cached prompt tokens at the vendor's ratios.

Anthropic (and Claude on Bedrock) bill a prompt in three parts: tokens written to the prompt cache at
1.25x the input price (five-minute cache), tokens read from it at 0.1x, and the rest at the input
price.  The defaults below are the vendors' published list prices in US dollars per million tokens;
``--price-in``/``--price-out`` override them, ``$LITS_CACHE_WRITE_RATIO``/``$LITS_CACHE_READ_RATIO`` the
ratios.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

#: Cache writes (5-minute cache) and reads, as multiples of the input price (Anthropic's published ratios,
#: the same for Claude on Bedrock).
CACHE_WRITE_RATIO = 1.25
CACHE_READ_RATIO = 0.10
ENV_CACHE_WRITE_RATIO = "LITS_CACHE_WRITE_RATIO"
ENV_CACHE_READ_RATIO = "LITS_CACHE_READ_RATIO"

#: List prices (input, output) in USD per 1M tokens, by the model family a model id names.  Claude 3.5
#: Sonnet is the model of the LiTS paper's BlocksWorld, Crosswords and MapEval-SQL experiments.
LIST_PRICES: dict[str, tuple[float, float]] = {
    "claude-3-5-sonnet": (3.0, 15.0),
    "claude-3-7-sonnet": (3.0, 15.0),
    "claude-3-5-haiku": (0.8, 4.0),
    "claude-3-haiku": (0.25, 1.25),
}


@dataclass(frozen=True)
class Prices:
    """USD per 1M tokens, and the cache ratios."""

    input: float
    output: float
    cache_write_ratio: float = CACHE_WRITE_RATIO
    cache_read_ratio: float = CACHE_READ_RATIO

    def cost(self, tokens_in: int, tokens_out: int, cache_read: int = 0, cache_write: int = 0) -> float:
        """A call's cost; ``tokens_in`` is the whole prompt, of which ``cache_read`` and ``cache_write``."""
        plain = max(0, tokens_in - cache_read - cache_write)
        prompt = plain + cache_write * self.cache_write_ratio + cache_read * self.cache_read_ratio
        return (prompt * self.input + tokens_out * self.output) / 1e6


def list_price(model_id: str) -> tuple[float, float] | None:
    """The list price of the family a model id names (``anthropic.claude-3-5-sonnet-20240620-v1:0``,
    ``us.anthropic.claude-3-5-sonnet-...``, ``claude-3-5-sonnet-latest``); None when not listed."""
    for family, prices in LIST_PRICES.items():
        if family in model_id:
            return prices
    return None


def prices_for(model_id: str, price_in: float, price_out: float) -> tuple[Prices, bool]:
    """The prices a run uses: those given, else the list price (``True`` when they came from the list);
    0/0 for a model not listed and no prices given."""
    write = _ratio(ENV_CACHE_WRITE_RATIO, CACHE_WRITE_RATIO)
    read = _ratio(ENV_CACHE_READ_RATIO, CACHE_READ_RATIO)
    listed = list_price(model_id)
    if (price_in or price_out) or listed is None:
        return Prices(price_in, price_out, write, read), False
    return Prices(listed[0], listed[1], write, read), True


def _ratio(variable: str, default: float) -> float:
    value = os.environ.get(variable)
    if not value:
        return default
    try:
        ratio = float(value)
    except ValueError:
        raise ValueError(f"${variable} must be a number (a multiple of the input price), not {value!r}") from None
    if not ratio >= 0:
        raise ValueError(f"${variable} must be a number >= 0, not {value!r}")
    return ratio
