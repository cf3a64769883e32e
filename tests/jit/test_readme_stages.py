"""The README's "Stages" example runs as written."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def stages_snippet() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Stages\n", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    return code


def test_readme_stages_example_runs_and_prints_each_stage():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(stages_snippet(), str(README), "exec"), {"__name__": "readme_stages"})  # noqa: S102
    text = out.getvalue()
    assert "Traced " in text and "Lowered " in text and "Compiled " in text
