"""One self-contained HTML page for a run: the page template, its CSS and JS, and the data as JSON.

Everything is inline (nothing is fetched, so the file works offline and can be
mailed); the script is the package's own (``static/view.js``), no library.
"""

from __future__ import annotations

import html
import json
import math
import re
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from lits.view.model import build_report

#: The file ``lits view`` writes into the run.
REPORT_NAME = "report.html"


#: The viewer's script, in order: parts of one function body (they share its scope, nothing is global
#: but ``window.litsView``, the hook scripts and tests use).
SCRIPT_PARTS = ("base.js", "charts.js", "run_page.js", "tree_view.js", "app.js")
SCRIPT_HEAD = (
    "/* LiTS run viewer: a run page and a tree page per instance, drawn from the JSON embedded in this "
    "file.\n   Plain JavaScript (lits/view/static/js), canvas for trees and SVG for charts: nothing is "
    'fetched, nothing is third-party. */\n(function () {\n  "use strict";\n'
)


def _static(*name: str) -> str:
    return resources.files("lits.view").joinpath("static", *name).read_text(encoding="utf-8")


def script() -> str:
    """The page's JavaScript: the parts of static/js/ inside one function."""
    return SCRIPT_HEAD + "".join(_static("js", part) for part in SCRIPT_PARTS) + "})();\n"


def embed_json(data: object) -> str:
    """JSON that is safe inside ``<script type="application/json">``: no ``</script>``, no ``<!--``.

    ``<``, ``>`` and ``&`` become ``\\u003c`` and friends (JSON.parse reads them
    back unchanged), as do the two line separators JavaScript once treated as newlines.
    """
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str, allow_nan=False)
    except ValueError:  # NaN or infinity somewhere (a reward model may return them): JSON has neither
        text = json.dumps(_finite(data), ensure_ascii=False, separators=(",", ":"), default=str, allow_nan=False)
    for raw, escaped in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return text


def render_report(report: dict[str, Any]) -> str:
    """The page for ``report`` (see :func:`lits.view.model.build_report`)."""
    page = _static("page.html")
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = {
        "__TITLE__": html.escape(str(report["run"]["name"])),
        "__GENERATED__": html.escape(f"read {generated}"),
        "__CSS__": _static("view.css"),
        "__JS__": script().replace("</script", "<\\/script"),
        "__DATA__": embed_json(report),
    }
    # one pass: a value (a run named __CSS__, a state holding __DATA__) is never scanned again
    return re.sub("|".join(parts), lambda m: parts[m.group(0)], page)


def _finite(value: object) -> object:
    """NaN and infinities (a reward model may return them) as null: JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def write_report(run_root: Path, out: Path | None = None) -> Path:
    """Write the run's page (default ``RUN_DIR/report.html``, atomically) and return its path."""
    from lits.io.durable import atomic_write_text

    run_root = Path(run_root)
    page = render_report(build_report(run_root))
    target = Path(out) if out is not None else run_root / REPORT_NAME
    atomic_write_text(target, page)
    return target
