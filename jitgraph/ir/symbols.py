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


class _AtLeastTwo:
    """Ordering shared by :class:`Sym` and :class:`SymExpr` as dimensions (at least 2): against 0 or 1 the answer
    holds for every size; against anything else it depends on the size, and raises."""

    __slots__ = ()

    def _order(self, other: object, op: str) -> bool:
        if isinstance(other, numbers.Integral) and other <= 1:
            return op in (">", ">=", "!=")
        raise SymbolicSizeError(f"{self!r} {op} {other!r} depends on the size")

    def __gt__(self, other: object) -> bool:
        return self._order(other, ">")

    def __ge__(self, other: object) -> bool:
        return self._order(other, ">=")

    def __lt__(self, other: object) -> bool:
        return self._order(other, "<")

    def __le__(self, other: object) -> bool:
        return self._order(other, "<=")


class Sym(_AtLeastTwo):
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

    def __bool__(self) -> bool:
        return True  # a size of at least 2

    def __reduce__(self) -> Any:
        raise SymbolicSizeError(f"symbolic size {self.name} cannot be pickled (instantiate the graph first)")


def is_symbolic(shape: tuple[Any, ...]) -> bool:
    """Whether a shape holds a symbol (or a linear expression of one)."""
    return any(type(d) is Sym or type(d) is SymExpr for d in shape)


def is_size_symbol(d: Any) -> bool:
    """Whether one dimension is symbolic."""
    return type(d) is Sym or type(d) is SymExpr


def normal(e: SymExpr) -> Sym | SymExpr:
    """``1 * s0 + 0`` is ``s0`` itself (one spelling per size, so equal sizes hash alike)."""
    return e.sym if e.mul == 1 and e.add == 0 else e


def slice_length(size: Sym | SymExpr, entry: slice) -> Sym | SymExpr:
    """The length of ``entry`` over a symbolic dimension, where it is linear in the symbol: step 1 or none (or -1
    over the whole dimension), a start of ``None`` or ``k >= 0`` and a stop of ``None`` or ``-k < 0``
    (``x[1:-1]``: ``s0-2``, ``x[2:]``, ``x[:-1]``). Those are exact whenever the result is at least 2, which an
    instance checks; anything else (``x[:3]``, ``x[-3:]``: ``min(3, s0)``) raises."""
    start, stop, step = entry.start, entry.stop, entry.step
    if step == -1 and start is None and stop is None:
        return size
    e = linear(size)
    if step not in (None, 1) or e is None or (start is not None and not (type(start) is int and start >= 0)) or \
            (stop is not None and not (type(stop) is int and stop < 0)):
        raise SymbolicSizeError(f"the length of {entry} of a dimension of size {size} depends on the size")
    if start is not None and start > 0 or stop is not None:
        if type(size) is SymExpr:
            raise SymbolicSizeError(f"a slice {entry} of a dimension of size {size}")
        return normal(SymExpr(e.sym, e.mul, e.add + (stop or 0) - (start or 0)))
    return size


def broadcast_dims(a: Any, b: Any) -> Any:
    """One position of NumPy's broadcasting with symbols: equal sizes, or a 1 against anything. A symbol against
    another symbol or a fixed size of 2 or more depends on the values (:class:`SymbolicSizeError`)."""
    if not is_size_symbol(a) and not is_size_symbol(b):
        raise TypeError("broadcast_dims is for symbolic sizes")
    if a == 1:
        return b
    if b == 1:
        return a
    if a == b:  # one symbol; two symbols, or a symbol and an int >= 2, raise (it depends on the sizes)
        return a
    raise ValueError(f"sizes {a} and {b} cannot be broadcast together")


class SymExpr(_AtLeastTwo):
    """``mul * sym + add``: a symbolic size after integer arithmetic the traced code did on it as a Python int
    (``n - 1``, ``x.size``, ``2 * n``), or the length of a slice of a symbolic dimension (``x[1:-1]``: ``s0-2``).
    As a value it reaches the graph as a constant, which instantiation evaluates exactly (Python ints), as the traced
    code would have. As a dimension it stands, like a :class:`Sym`, for a size of at least 2: an instance whose
    sizes make one smaller is no instance (``SymbolicForm.sizes_of``). Equality is decided only where it holds for
    every size (the same symbol and factor); everything else raises."""

    __slots__ = ("add", "mul", "sym")

    def __init__(self, sym: Sym, mul: int = 1, add: int = 0) -> None:
        self.sym, self.mul, self.add = sym, mul, add

    def value(self, size: int) -> int:
        return self.mul * size + self.add

    def __repr__(self) -> str:
        scaled = self.sym.name if self.mul == 1 else f"{self.mul}*{self.sym.name}"
        return scaled if not self.add else f"{scaled}{self.add:+d}"

    def __eq__(self, other: object) -> bool:
        o = linear(other)
        if o is not None and o.sym.name == self.sym.name and o.mul == self.mul:
            return o.add == self.add  # s0-2 == s0-2; s0-2 != s0-1 at every size
        if o is None and isinstance(other, numbers.Integral) and other <= 1:
            return False  # a dimension of at least 2
        raise SymbolicSizeError(f"{self!r} == {other!r} depends on the size")

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(("SymExpr", self.sym.name, self.mul, self.add))

    def __bool__(self) -> bool:
        raise SymbolicSizeError(f"the truth of {self!r} depends on the size")

    def __reduce__(self) -> Any:
        raise SymbolicSizeError(f"symbolic size {self!r} cannot be pickled (instantiate the graph first)")


def linear(value: Any) -> SymExpr | None:
    """A symbolic size as ``mul * sym + add`` (None for anything else)."""
    if type(value) is Sym:
        return SymExpr(value)
    return value if type(value) is SymExpr else None


def size_arith(op: str, a: Any, b: Any) -> Sym | SymExpr | None:
    """``a op b`` for a symbolic size and a Python int (``+``, ``-``, ``*``), or None where the result is not a
    linear function of one symbol."""
    la, lb = linear(a), linear(b)
    if (la is None) == (lb is None):
        return None
    other = b if la is not None else a
    if type(other) is not int:
        return None
    e = la if la is not None else lb
    assert e is not None
    if op == "+":
        return normal(SymExpr(e.sym, e.mul, e.add + other))  # type: ignore[return-value]
    if op == "*":
        return normal(SymExpr(e.sym, e.mul * other, e.add * other)) if other else None  # type: ignore[return-value]
    if op == "-":
        return normal(SymExpr(e.sym, e.mul, e.add - other) if la is not None  # type: ignore[return-value]
                      else SymExpr(e.sym, -e.mul, other - e.add))
    return None


def size_of_shape(shape: tuple[Any, ...]) -> int | Sym | SymExpr:
    """``x.size`` where the shape may hold one symbol (a fixed size times it); two symbols raise."""
    syms = [d for d in shape if type(d) is Sym]
    fixed = 1
    for d in shape:
        if type(d) is not Sym:
            fixed *= d
    if not syms:
        return fixed
    if len(syms) > 1 or fixed == 0:
        raise SymbolicSizeError(f"the size of a shape {shape} depends on the sizes")
    return normal(SymExpr(syms[0], fixed))
