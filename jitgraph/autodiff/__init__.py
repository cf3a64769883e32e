"""Automatic differentiation as graph transforms over the IR (rank 2: a sibling of tracer, passes and backends).

* ``reverse.py``   reverse mode: a traced graph -> one joint forward+backward graph (:func:`differentiate`).
* ``rules*.py``    the VJP table, one rule per op (:data:`VJP`), by kind: elementwise, structural, control flow.
* ``loops.py``     loop (BPTT with per-iteration history), cond and while.
* ``forward.py``   forward mode (:func:`jvp_graph`) as the transpose of reverse mode.
* ``partition.py`` saved vs recomputed: the minimum cut of the forward values the backward reads.
* ``split.py``     a joint graph cut in two at that cut (what ``vjp`` runs).
* ``emit.py``      the helpers rules are written with (broadcast adjoints, dtype casts).

The driver (``jitgraph/jit/grad.py``) traces the user's function, calls this, and compiles the joint graph like
any other: guards, cache, explain and fallback are the compiled function's.
"""

from jitgraph.autodiff.errors import DifferentiationError
from jitgraph.autodiff.forward import jvp_graph
from jitgraph.autodiff.reverse import JointGraph, check_differentiable, differentiate
from jitgraph.autodiff.rules import VJP

__all__ = ["VJP", "DifferentiationError", "JointGraph", "check_differentiable", "differentiate", "jvp_graph"]
