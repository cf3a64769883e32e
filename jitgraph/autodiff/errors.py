"""The one error the autodiff transform raises, so a caller can tell "cannot differentiate this" from a bug."""

from __future__ import annotations

from jitgraph.errors import JitgraphError


class DifferentiationError(JitgraphError):
    """A function cannot be differentiated as asked: an op without a derivative rule, a gradient requested for an
    integer or boolean argument, an argument the function writes in place, a loss that is not a float scalar.
    The message names the op or argument; ``filename``/``lineno`` point at the user's line where known."""
