"""The dependence test that decides whether a ``loop`` may run its iterations in parallel (``prange``).

The rule is deliberately narrow, so that "yes" is a proof and everything else is "no" (serial):

1. the loop counts up from a constant ``start >= 0`` in steps of the constant 1 (a negative index would wrap
   around and could alias another iteration's element);
2. nothing scalar is carried (a carried scalar is a reduction or a recurrence: iteration i needs i-1);
3. every carried array is touched only along one chain ``c -> setitem -> setitem -> ... -> output`` (or through
   a nested ``loop`` that passes it on the same way), and every read (``getitem``) or write (``setitem``) of a
   chain member indexes one fixed dimension ``d`` with exactly the induction variable ``i`` — not ``i + 1``, not
   a slice — with no ``None``/``...`` in the index. Iteration i then reads and writes only slice ``i`` of dim
   ``d``: distinct iterations touch disjoint elements, and no iteration reads what another writes.

Invariant operands are read-only snapshots (the code generator copies a carried array that is also passed as an
invariant), so reads of them never conflict.
"""

from __future__ import annotations

from dataclasses import dataclass

from jitgraph.ir.graph import Graph, Node
from jitgraph.ir.ops.indexing import Operand


@dataclass(frozen=True)
class Verdict:
    parallel: bool
    reason: str

    def __bool__(self) -> bool:
        return self.parallel


def const_int(node: Node) -> int | None:
    if node.op == "const" and isinstance(node.attrs["value"], int | bool) or (
            node.op == "const" and getattr(node.attrs["value"], "dtype", None) is not None
            and node.attrs["value"].dtype.kind in "iu" and node.attrs["value"].shape == ()):
        return int(node.attrs["value"])
    return None


def nonneg(node: Node, known: frozenset[Node] | set[Node] = frozenset()) -> bool:
    """A conservative proof that an integer scalar is >= 0: constants, unsigned values, ``known`` facts (the
    induction variables of enclosing loops that count up from a non-negative start) and sums/products of those."""
    if node in known:
        return True
    value = const_int(node)
    if value is not None:
        return value >= 0
    if getattr(node.type, "dtype", None) is not None and node.type.dtype.kind in "ub":  # type: ignore[union-attr]
        return True
    if node.op in ("add", "multiply", "minimum", "where", "check"):
        inputs = node.inputs[1:] if node.op == "where" else node.inputs[:1] if node.op == "check" else node.inputs
        return all(nonneg(i, known) for i in inputs)
    if node.op in ("maximum", "bitwise_and"):
        return any(nonneg(i, known) for i in node.inputs)
    return False


def independent(node: Node, known_nonneg: frozenset[Node] | set[Node] = frozenset()) -> Verdict:
    """Whether the iterations of ``loop`` node ``node`` are provably independent, and why (or why not).

    ``known_nonneg``: values of the enclosing graph proven >= 0 by the caller (enclosing induction variables).
    """
    if node.op != "loop":
        return Verdict(False, f"{node.op} is not a counted loop")
    start, _, step = node.inputs[:3]
    if const_int(step) != 1:
        return Verdict(False, "the step is not the constant 1")
    if not nonneg(start, known_nonneg):
        return Verdict(False, "the start is not provably >= 0 (a negative index would wrap around)")
    body = node.regions[0]
    k = node.attrs["carried"]
    if k == 0:
        return Verdict(False, "the loop carries nothing")
    for j in range(k):
        carried = body.inputs[1 + j]
        if carried.type.shape == ():  # type: ignore[union-attr]
            return Verdict(False, f"carried scalar {j} is a recurrence or reduction across iterations")
        why = _chain(body, carried, body.outputs[j], j, {body.inputs[0]}, [None])
        if why:
            return Verdict(False, f"carried array {j}: {why}")
    return Verdict(True, "each iteration reads and writes only its own index-i slice of every carried array")


def _position(spec: tuple, operands: tuple[Node, ...], induction: set[Node]) -> int | None:
    """The dim that the spec indexes with exactly the induction variable, or None."""
    if any(e is None or e is Ellipsis for e in spec):
        return None
    for pos, entry in enumerate(spec):
        if isinstance(entry, Operand) and operands[entry.k] in induction:
            return pos
    return None


def _access_ok(node: Node, induction: set[Node], dim: list[int | None]) -> bool:
    offset = 2 if node.op == "setitem" else 1
    pos = _position(node.attrs["spec"], node.inputs[offset:], induction)
    if pos is None or (dim[0] is not None and dim[0] != pos):
        return False
    dim[0] = pos
    return True


def _chain(graph: Graph, start: Node, end: Node, out_index: int, induction: set[Node],
           dim: list[int | None]) -> str:
    """Walk the chain of versions of one carried array from ``start`` to ``end``; '' if every access is safe."""
    users = graph.users()
    member = start
    while True:
        nxt = None
        if member in graph.outputs and (member is not end or list(graph.outputs).count(member) != 1):
            return "a version of it is returned as another loop-carried value"
        for user in users.get(member, []):
            if user.op == "getitem" and user.inputs[0] is member and member not in user.inputs[1:]:
                if not _access_ok(user, induction, dim):
                    return "it is read at an index that is not exactly the induction variable"
            elif user.op == "setitem" and user.inputs[0] is member and member not in user.inputs[1:]:
                if nxt is not None or not _access_ok(user, induction, dim):
                    return "it is written at an index that is not exactly the induction variable"
                nxt = user
            elif user.op == "loop" and list(user.inputs).count(member) == 1:
                if nxt is not None:
                    return "it is updated twice from the same version"
                why, nxt = _through_loop(graph, user, member, induction, dim, users)
                if why:
                    return why
            else:
                return f"it is used by {user.op}, which the dependence test does not analyse"
        if nxt is None:
            return "" if member is end else "the chain of in-place updates does not reach the loop's result"
        member = nxt


def _through_loop(graph: Graph, inner: Node, member: Node, induction: set[Node], dim: list[int | None],
                  users: dict[Node, list[Node]]) -> tuple[str, Node | None]:
    """A nested loop that carries ``member``: check its body with the outer induction variable's invariants."""
    k = inner.attrs["carried"]
    where = list(inner.inputs).index(member)
    if not 3 <= where < 3 + k:
        return "it is passed to a nested loop as a read-only invariant while being updated", None
    j = where - 3
    body = inner.regions[0]
    mapped = {body.inputs[1 + pos - 3] for pos, operand in enumerate(inner.inputs)
              if pos >= 3 + k and operand in induction}
    if not mapped:
        return "a nested loop updates it without knowing the induction variable", None
    why = _chain(body, body.inputs[1 + j], body.outputs[j], j, mapped, dim)
    if why:
        return f"in a nested loop, {why}", None
    projections = [u for u in users.get(inner, []) if u.op == "tuple_get" and u.attrs["index"] == j]
    if len(projections) != 1:
        return "the nested loop's result for it is used in more than one place", None
    return "", projections[0]
