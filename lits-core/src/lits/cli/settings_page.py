"""``docs/run-settings.md``, written from the :class:`~lits.runs.spec.RunSpec` fields' declarations.

``python -m lits.cli.settings_page > docs/run-settings.md`` regenerates the page; a test fails when the page
and the spec disagree, so a new setting's row comes with its field.
"""

from __future__ import annotations

from lits.runs.spec import UNRECORDED, RunSpec, Setting, settings_declared

INTRO = """\
# Run settings

Every setting of a `lits search` / `lits chain` run, as one table per option group of `lits search --help`.
The field is the name in the Python API (`lits.search(..., field=...)`, `RunSpec(field=...)`), in a
`--config` file and in `--set field=value`; `K=V` flags give one key of a mapping field per flag.

*On resume*: a setting that changes what the run computes is **fixed** (`--resume` and `lits.resume` refuse
a different value, naming it); one that only changes how the run goes **may change**, and the change is
recorded in `config.json`.

Generated from `RunSpec` (`lits-core/src/lits/runs/spec.py`): `python -m lits.cli.settings_page >
docs/run-settings.md`.

*Adding a setting* touches three files: its field in `RunSpec` with its `Setting(group, help, computes=...)`,
the one place that uses it (it reads `settings.NAME` on the run's `RunRecord`, `lits-core/src/lits/runs/record.py`),
and this page, regenerated.  The flag, the resume rule and `config.json` follow from the field: a run records
it when it is not at its default, so runs made before it existed read the same.
"""
TITLES = {
    "data": "Data",
    "model": "Model",
    "run": "Run",
    "search": "`lits search` only",
    "chain": "`lits chain` only",
    None: "Python only (no flag)",
}


def _default(name: str) -> str:
    info = RunSpec.model_fields[name]
    if info.is_required():
        return "required"
    value = info.get_default(call_default_factory=True)
    return f"`{value!r}`"


def _on_resume(name: str, declared: Setting) -> str:
    if name in UNRECORDED:
        return "not recorded"
    return "fixed" if declared.computes else "may change"


def render() -> str:
    """The page, one table per group in the fields' order."""
    out = [INTRO.rstrip("\n")]
    declared = settings_declared()
    for group, title in TITLES.items():
        out += [f"\n## {title}\n", "| field | flag | default | on resume | what it sets |", "|---|---|---|---|---|"]
        for name, setting in declared.items():
            if setting.group == group:
                flag = f"`{setting.flag}`" if setting.flag else ""
                text = setting.help.replace("|", "\\|")
                out.append(f"| `{name}` | {flag} | {_default(name)} | {_on_resume(name, setting)} | {text} |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    print(render(), end="")
