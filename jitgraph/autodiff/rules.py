"""The VJP table: op name -> derivative rule, one rule per op, assembled from the modules by kind.

Why a table (rules-as-data, as JAX's ``ad.primitive_transposes``): adding an op to the IR means adding one entry
here, and a missing entry is a structured error at the user's line (:func:`jitgraph.autodiff.reverse.backward`),
not a silent zero. ``tests/autodiff/test_rules.py`` checks every entry against central finite differences.
"""

from __future__ import annotations

from jitgraph.autodiff.rules_control import CONTROL_VJP
from jitgraph.autodiff.rules_elementwise import ELEMENTWISE_VJP, Rule, per_input
from jitgraph.autodiff.rules_structural import STRUCTURAL_VJP

PLUMBING_VJP: dict[str, Rule] = {
    # check(value, pred) is value after a run-time test; float(x) in a region is x as a Python number
    "check": per_input(lambda e, n, g: g, None),
    "to_python": per_input(lambda e, n, g: e.cast(g, n.inputs[0])),
}

VJP: dict[str, Rule] = {**ELEMENTWISE_VJP, **STRUCTURAL_VJP, **CONTROL_VJP, **PLUMBING_VJP}
