"""Where a call would run eagerly but must not: under ``fullgraph=True``, and with GPU device arrays (NumPy
cannot run on them, and a silent copy to the host and back would hide the transfers the user chose to avoid)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from jitgraph.device_arrays import is_device_array
from jitgraph.jit.breaks import BreakReason
from jitgraph.tracer.context import GraphBreak

RECOMPILE_HINT = "raise cache_limit=, or keep the guards that changed stable"


def refuse_eager_on_device(name: str, leaves: list[Any], why: str, brk: GraphBreak | None, hint: str) -> None:
    """Raise when any leaf is a device array; return when all are host values (eager may run)."""
    if not any(type(v) is not np.ndarray and is_device_array(v) for v in leaves):
        return
    if brk is not None and brk.user_error is not None:
        raise brk.user_error  # what NumPy would raise on host copies of the arguments
    reason = BreakReason(brk.reason, brk.filename, brk.lineno) if brk is not None else BreakReason(why, None, None)
    raise reason.error(f"{name} cannot run eagerly on GPU device arrays: {why}", hint)


def refuse_break_on_device(name: str, leaves: list[Any], brk: GraphBreak) -> None:
    """A graph break with device arrays: say which line to rewrite (or that the arrays overlap)."""
    fix = "rewrite this line so the whole function is captured" if brk.filename else \
        "pass device arrays that do not overlap"
    refuse_eager_on_device(name, leaves, f"graph break: {brk.reason}", brk,
                           f"{fix}, or call it with host NumPy arrays (.copy_to_host()) to run it eagerly")


def raise_fullgraph(fn: Callable[..., Any], brk: GraphBreak, args: tuple, kwargs: dict[str, Any]) -> None:
    """fullgraph=True: the break raises GraphBreakError (or, for a user error, the exception NumPy raises)."""
    if brk.user_error is not None:
        fn(*args, **kwargs)  # NumPy/Python raises its own exception here, as it would eagerly
    raise BreakReason(brk.reason, brk.filename, brk.lineno).error(
        f"graph break: {brk.reason}", hint="fullgraph=True forbids falling back to eager; rewrite this line, or "
                                           "drop fullgraph=True to let the call run eagerly")
