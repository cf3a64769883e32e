"""How to get past a graph break: one hint per family of break reasons, matched by the words in the reason.

A table rather than logic in the renderer, so a new break reason gets its hint by adding one row.
"""

from __future__ import annotations

HINTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("data-dependent", "computed from array data", "array data"),
     ("the branch depends on array values: compute both sides and select with np.where(cond, a, b), or move "
      "the decision out of the compiled function and pass it in as a Python bool/int")),
    (("print", "printing", "formatting a traced value"),
     "print outside the compiled function (return the value and print it there)"),
    (("boolean mask index",),
     "use np.where(mask, x, 0) or x * mask instead of x[mask] (x[mask] has a data-dependent shape)"),
    (("which the tracer does not know", "unsupported callable", "constructing a"),
     "call this function outside the compiled function and pass its result in, or write it with NumPy calls"),
    (("side effect", "assigning into a caller's", "del of an item"),
     "return the new value instead of storing it in a global, an attribute or a caller's list/dict"),
    (("raise statement", "Python raises", "NumPy would raise"),
     ("this call raises eagerly too: fix the arguments (shapes/dtypes) or check them outside the compiled "
      "function")),
    (("try/except", "with blocks"),
     "move the try/with block outside the compiled function"),
    (("early exit", "return inside", "do not meet again"),
     "compute the result for every path and pick it with np.where instead of returning or breaking early"),
    (("overlap in memory", "share memory"),
     "pass separate arrays (np.copy one of them) when calling the compiled function"),
    (("recursion", "call depth"),
     "rewrite the recursion as a loop over a trace-time constant range"),
    (("loop", "while"),
     "make the trip count a Python int argument or constant so the tracer can unroll or lower the loop"),
    (("internal tracer error", "backend failed"),
     "a jitgraph bug: the call ran eagerly and is correct; please report it with JITGRAPH_LOGS=graph,breaks"),
    (("dtype",),
     "make the dtypes explicit (astype) so they do not depend on values"),
)

DEFAULT_HINT = "rewrite this line with NumPy operations on arrays, or move it outside the compiled function"


def hint_for(reason: str) -> str:
    """The first hint whose words occur in ``reason`` (case-insensitive)."""
    text = reason.lower()
    for words, hint in HINTS:
        if any(w.lower() in text for w in words):
            return hint
    return DEFAULT_HINT
