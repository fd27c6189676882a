"""The design documents' Python (../shared/seeds) as our public API: every import they show works, and every
complete example runs, in the order written, with the names a reader has in scope."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from pathlib import Path


SEEDS = Path(__file__).resolve().parents[2].parent / "shared" / "seeds"
IMPORT = re.compile(
    r"^[ \t]*(from [\w.]+ import \([^)]*\)|from [\w.]+ import [\w, \t]+|import [\w., \t]+)"
    r"[ \t]*(?:#.*)?$",
    re.M,
)
#: What a reader of the documents has in scope: the public API, the standard library's usual names, a model.
PRELUDE = """
import json
from dataclasses import dataclass, field
from typing import Any, Dict, Generic, List, Optional, Sequence, Tuple, TypeVar
from lits.api import *
from lits.testing import ScriptedModel
model = ScriptedModel()
"""
#: Complete examples that name a placeholder the documents never define (an object of the reader's own).
PLACEHOLDERS = {
    "000#10": "db_client",
    "000#17": "action",
    "000#27": "BlocksWorldTransition (the plugin's, not imported)",
    "000#28": "RAPPolicy (imported only in a later example)",
    "000#29": "RAPPolicy (see 000#28)",
    "001#00": "tools",
    "001#01": "BlocksWorldTransition (not imported)",
    "001#04": "BlocksWorldTransition as defined there has no _step (a prompt-lookup illustration)",
    "001#09": "a relative import: an excerpt of a module inside a package",
    "001#14": "action",
    "002#00": "BlocksWorldTransition (not imported)",
    "002#13": "RefineRewardModel",
    "002#16": "step",
    "004#08": "action1",
}


def _blocks() -> list[tuple[str, int, str]]:
    if not SEEDS.is_dir():
        raise FileNotFoundError(f"the design documents are missing: expected them at {SEEDS}")
    return [
        (path.name[:3], i, block)
        for path in sorted(SEEDS.glob("*.txt"))
        for i, block in enumerate(re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S))
    ]


def test_every_import_the_design_documents_show_works() -> None:
    statements = set()
    for _, _, block in _blocks():
        for found in IMPORT.finditer(block):
            text = re.sub(r"#[^\n]*", "", found.group(1)).replace("(", "").replace(")", "")
            statement = " ".join(text.split()).rstrip(",")
            if not statement.startswith("from ."):
                statements.add(statement)
    assert len(statements) >= 20
    failed = []
    for statement in sorted(statements):
        try:
            exec(statement, {})
        except Exception as exc:  # collected, so one run names every broken path
            failed.append(f"{statement}: {type(exc).__name__}: {exc}")
    assert failed == []


def run_examples() -> tuple[int, dict[str, str]]:
    """(examples that ran, failures by id): one module per document, blocks in order, after the prelude."""
    namespaces: dict[str, dict[str, object]] = {}
    ran, failed = 0, {}
    for doc, i, block in _blocks():
        if doc not in namespaces:  # one module per document: dataclasses look their module up
            module = types.ModuleType(f"lits_seed_{doc}")
            sys.modules[module.__name__] = module
            namespaces[doc] = module.__dict__
            exec(PRELUDE, namespaces[doc])
        try:
            code = compile(block, f"{doc}#{i}", "exec")
        except SyntaxError:
            continue  # an excerpt with "..." elisions, not a program
        try:
            exec(code, namespaces[doc])
            ran += 1
        except Exception as exc:
            failed[f"{doc}#{i:02d}"] = f"{type(exc).__name__}: {exc}"
    return ran, failed


def test_every_complete_example_runs_in_the_order_written() -> None:
    # In a fresh interpreter: the examples register types and components for good.
    done = subprocess.run([sys.executable, __file__], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    ran, failed = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(failed) == set(PLACEHOLDERS), {k: v for k, v in failed.items() if k not in PLACEHOLDERS}
    assert ran >= 42


if __name__ == "__main__":
    print(json.dumps(run_examples()))
