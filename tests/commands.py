"""Command lines the tests share, built in one place so a flag's spelling changes once."""

from __future__ import annotations


def blocksworld_search(
    *, iterations: int = 2, limit: int = 1, steps: int = 2, save_dir: str | None = "run"
) -> list[str]:
    """``lits search`` on BlocksWorld as the CLI tests run it: ``limit`` ``steps``-step problems, MCTS with
    ``iterations`` iterations, saved to ``save_dir`` (none when None); add the model and its server."""
    args = [
        "search",
        "--dataset",
        "blocksworld",
        "--dataset-arg",
        f"steps={steps}",
        "--limit",
        str(limit),
        "--search-arg",
        f"n_iterations={iterations}",
    ]
    return args + (["--save-dir", save_dir] if save_dir is not None else [])
