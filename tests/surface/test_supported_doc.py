"""docs/supported.md is what scripts/supported_functions.py generates from the tracer's tables now."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script():
    """The generator (scripts/ is not a package: loaded from its file)."""
    spec = importlib.util.spec_from_file_location("supported_functions", ROOT / "scripts" / "supported_functions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_page_equals_generated_text():
    page = (ROOT / "docs" / "supported.md").read_text()
    made_with = re.search(r"with NumPy (\S+) ", page)
    if made_with is None or made_with.group(1) != np.__version__:
        pytest.skip(f"docs/supported.md lists NumPy {made_with and made_with.group(1)}'s aliases; this is NumPy "
                    f"{np.__version__}")
    assert page == _script().render(), "docs/supported.md is stale: run python scripts/supported_functions.py"


def test_every_table_entry_is_listed():
    from jitgraph.tracer.numpy_table import ARRAY_METHODS, NUMPY

    text = _script().render()
    for fn in NUMPY:
        assert f"np.{fn.__name__}" in text or fn.__name__ in text, fn
    for name in ARRAY_METHODS:
        assert f"`ndarray.{name}`" in text, name
    for listed in ("np.linalg.norm", "np.pad", "np.argsort", "`min`", "`math.exp`", "np.linalg.solve"):
        assert listed in text
