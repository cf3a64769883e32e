"""Every error jitgraph raises, in one place.

Errors carry *where* (the user's ``file:line`` when known) and *how to get past it* (a hint), because a compiler
error that only says what went wrong leaves the user guessing which line of their own code to change.
"""

from __future__ import annotations


class JitgraphError(Exception):
    """Base class of all jitgraph errors; catch this to catch them all."""

    def __init__(self, message: str, *, filename: str | None = None, lineno: int | None = None,
                 hint: str | None = None) -> None:
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.hint = hint
        super().__init__(self._render())

    @property
    def location(self) -> str:
        if self.filename is None:
            return ""
        return f"{self.filename}:{self.lineno}" if self.lineno is not None else self.filename

    def _render(self) -> str:
        text = self.message
        if self.location:
            text += f"\n  at {self.location}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class UnsupportedError(JitgraphError):
    """Something has no entry in a dispatch table (opcode, NumPy callable, op emitter, dtype).

    The tracer turns it into a graph break; backends turn it into an eager fallback for the graph.
    """


class GraphBreakError(JitgraphError):
    """Raised under ``fullgraph=True`` when the tracer would otherwise fall back to eager."""


class VerifyError(JitgraphError):
    """The IR verifier found a malformed graph; the message shows the bad node and its neighbours."""


class TypeInferenceError(JitgraphError):
    """An op's shape/dtype rule rejected its inputs (the same inputs NumPy would reject)."""


class PassError(JitgraphError):
    """A graph pass raised; the message names the pass and the nodes around the failure."""


class BackendError(JitgraphError):
    """A backend could not compile or run a graph (missing toolkit, no GPU, ...)."""


class UnsupportedPythonError(JitgraphError):
    """The running CPython version has no bytecode table in ``jitgraph.tracer.bytecode``."""


class RerunEagerly(JitgraphError):
    """Raised by compiled code at a value it cannot represent as Python does -- a Python int beyond int64 (Python
    ints never overflow), ``int()`` of a float beyond it -- so that the driver runs the call eagerly instead. The
    graph's run-time check (``check`` with ``error="RerunEagerly"``) is a raising node like any other, so the driver
    has the arguments as they were before the call (jit/effects.py) and the eager run is exact. A user sees it only
    where no eager run is possible (a device graph)."""
