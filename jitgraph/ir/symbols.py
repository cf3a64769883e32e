"""Symbolic sizes: a dimension the trace does not fix (``s0`` in ``f32[s0,784]``).

A dynamic dimension (``jitgraph/jit/dynamic_policy.py``) is traced as a :class:`Sym` instead of its value, so one
trace serves every size. The rules are those of ``torch.compile``'s automatic dynamic shapes, kept small:

* **0/1 specialisation.** A symbol stands for a size of at least 2. Sizes 0 (empty) and 1 (broadcasts) change what
  NumPy does, so a call with such a size is traced on its own, as before.
* **Duck sizing.** Dynamic dimensions that have the same size at the traced call share one symbol (``x @ w`` then
  checks ``s1 == s1``), and the entry holds only for calls where they are still equal. Two different symbols may be
  equal or not at another call, so comparing them raises.
* **No silent decisions.** A ``Sym`` is not an ``int``: it has no arithmetic, no ``__index__`` and no ordering
  against sizes of 2 or more, so any code (a shape rule, a tracer handler, NumPy) that would need its value raises
  :class:`SymbolicSizeError` or ``TypeError``. The trace then fails and the caller traces the call with those
  dimensions static instead. Only what holds for every size >= 2 is answered (``s0 == 1`` is False, ``s0 > 1`` is
  True, ``min(s0, 1)`` is 1).

Where a size must flow into the computation (``x / x.shape[0]``, ``for t in range(xs.shape[0])``) the tracer hands
out a graph constant whose value is the symbol (``const(s0)``); backends never see one: an entry's graph is
instantiated for each call's sizes (:mod:`jitgraph.ir.instantiate`) before the passes run.
"""

from __future__ import annotations

import numbers
from typing import Any


class SymbolicSizeError(Exception):
    """A question about a symbolic size that only its value could answer (``s0 == 784``, ``s0 + 1``): the trace
    that asked fails, and the call is traced with the dimension static."""


class Sym:
    """A symbolic dimension size (always >= 2). ``hint`` is its value at the traced call (for messages only)."""

    __slots__ = ("hint", "name")

    def __init__(self, name: str, hint: int) -> None:
        self.name = name
        self.hint = hint

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__

    def __hash__(self) -> int:
        return hash(("Sym", self.name))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sym):
            if self.name == other.name:
                return True
            raise SymbolicSizeError(f"{self.name} == {other.name} depends on the sizes")
        if not isinstance(other, numbers.Integral):  # NumPy integers too: never a silent identity comparison
            return NotImplemented  # type: ignore[return-value]
        if other <= 1:
            return False
        raise SymbolicSizeError(f"{self.name} == {other} depends on the size")

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def _order(self, other: object, op: str) -> bool:
        if isinstance(other, numbers.Integral) and other <= 1:
            return op in (">", ">=", "!=")  # a symbol is at least 2
        raise SymbolicSizeError(f"{self.name} {op} {other!r} depends on the size")

    def __gt__(self, other: object) -> bool:
        return self._order(other, ">")

    def __ge__(self, other: object) -> bool:
        return self._order(other, ">=")

    def __lt__(self, other: object) -> bool:
        return self._order(other, "<")

    def __le__(self, other: object) -> bool:
        return self._order(other, "<=")

    def __bool__(self) -> bool:
        return True  # a size of at least 2

    def __reduce__(self) -> Any:
        raise SymbolicSizeError(f"symbolic size {self.name} cannot be pickled (instantiate the graph first)")


def is_symbolic(shape: tuple[Any, ...]) -> bool:
    """Whether a shape holds a symbol."""
    return any(type(d) is Sym for d in shape)


def broadcast_dims(a: Any, b: Any) -> Any:
    """One position of NumPy's broadcasting with symbols: equal sizes, or a 1 against anything. A symbol against
    another symbol or a fixed size of 2 or more depends on the values (:class:`SymbolicSizeError`)."""
    if type(a) is not Sym and type(b) is not Sym:
        raise TypeError("broadcast_dims is for symbolic sizes")
    if a == 1:
        return b
    if b == 1:
        return a
    if a == b:  # one symbol; two symbols, or a symbol and an int >= 2, raise (it depends on the sizes)
        return a
    raise ValueError(f"sizes {a} and {b} cannot be broadcast together")
