"""Options are checked where they enter (``jitgraph.compile``, ``jitgraph.explain``): an unknown name raises
TypeError with a did-you-mean and the valid names, a bad value ValueError; unknown JITGRAPH_* variables warn."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import jitgraph
from jitgraph.config import OPTIONS


def double(x):
    return x * 2.0


@pytest.mark.parametrize("call", [lambda: jitgraph.compile(double, resue_outputs=False),
                                  lambda: jitgraph.compile(resue_outputs=False),
                                  lambda: jitgraph.explain(double, resue_outputs=False)],
                         ids=["compile", "decorator", "explain"])
def test_unknown_option_is_a_type_error_with_did_you_mean(call):
    with pytest.raises(TypeError, match="resue_outputs") as info:
        call()
    text = str(info.value)
    assert "did you mean 'reuse_outputs'?" in text
    assert all(name in text for name in OPTIONS)


@pytest.mark.parametrize("options", [{"math": "libmm"}, {"backend": 3}, {"cache_limit": 0}, {"fullgraph": "yes"},
                                     {"reuse_outputs": "no"}])
def test_bad_value_is_a_value_error(options):
    (name,) = options
    with pytest.raises(ValueError, match=name):
        jitgraph.compile(double, **options)
    with pytest.raises(ValueError, match=name):
        jitgraph.explain(double, **options)


def test_valid_options_pass_and_reach_the_compiled_function():
    cf = jitgraph.compile(double, backend="eager", cache_limit=3, math="libm", reuse_outputs=False)
    assert cf.cache_limit == 3 and cf.options == {"math": "libm", "reuse_outputs": False}
    np.testing.assert_allclose(cf(np.ones(2)), [2.0, 2.0])


def test_unknown_environment_variable_warns_at_import():
    env = {**os.environ, "JITGRAPH_STRCT": "1"}
    proc = subprocess.run([sys.executable, "-W", "always", "-c", "import jitgraph"], capture_output=True,
                          text=True, env=env, check=True)
    assert "JITGRAPH_STRCT" in proc.stderr and "did you mean 'JITGRAPH_STRICT'?" in proc.stderr
