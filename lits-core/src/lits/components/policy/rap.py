"""``from lits.components.policy.rap import RAPPolicy``, as the design documents write it.

RAP (sub-question decomposition) ships with the math plugin, ``lits-plugin-math``; this
module is the documents' import path to it.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "RAPPolicy":
        from lits.runtime.extras import require

        return require(
            "lits_math.rap.policy", install="lits-plugin-math", what="RAPPolicy", package="the math plugin"
        ).RAPPolicy
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
