"""Array semantics at trace time: operators, in-place updates, indexing and attributes.

Operators on tracked values record the ufunc NumPy would call (``a + b`` is ``add``); operators on trace-time
Python values are simply computed. In-place operators keep NumPy's rules: the result is cast back with
``same_kind`` casting (``int_array += 0.5`` raises ``UFuncTypeError`` eagerly, so here it falls back and NumPy
raises it) and must not change the target's shape.
"""

from __future__ import annotations

import operator
import types
from typing import Any

import numpy as np

from jitgraph.ir.ops.indexing import Operand
from jitgraph.ir.symbols import size_arith
from jitgraph.tracer import python_ints, selections
from jitgraph.tracer.context import TraceContext
from jitgraph.tracer.index_tricks import index_trick, is_index_trick
from jitgraph.tracer.split import NOT_CUT
from jitgraph.tracer.values import TArray, ViewStep, is_plain

BINARY_UFUNC = {
    "+": "add", "-": "subtract", "*": "multiply", "/": "divide", "//": "floor_divide", "%": "remainder",
    "**": "power", "@": "matmul", "&": "bitwise_and", "|": "bitwise_or", "^": "bitwise_xor",
    "<<": "left_shift", ">>": "right_shift",
}
COMPARE_UFUNC = {"<": "less", "<=": "less_equal", "==": "equal", "!=": "not_equal", ">": "greater",
                 ">=": "greater_equal"}
PY_BINARY = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "//": operator.floordiv,
    "%": operator.mod, "**": operator.pow, "@": operator.matmul, "&": operator.and_, "|": operator.or_,
    "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift,
}
PY_COMPARE = {"<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne, ">": operator.gt,
              ">=": operator.ge}
_IDENTITY_EQ = (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type, np.ufunc)


def python_op(tx: TraceContext, fn: Any, a: Any, b: Any, what: str) -> Any:
    """Apply a Python operator to trace-time values, turning Python's own error into a fallback."""
    structural = isinstance(a, tuple | list) and isinstance(b, tuple | list | int) and what in "+*"
    structural = structural or (isinstance(a, int) and isinstance(b, tuple | list) and what == "*")
    if not (structural or (is_plain(a) and is_plain(b))):
        if what in ("==", "!=") and isinstance(a, _IDENTITY_EQ) and isinstance(b, _IDENTITY_EQ):
            _guard_identities(tx, a, b, f"operator {what}")
            return fn(a, b)
        tx.graph_break(f"operator {what} on {type(a).__name__} and {type(b).__name__} objects")
    try:
        return fn(a, b)
    except Exception as exc:  # noqa: BLE001 - Python's own error, re-raised by the eager run
        tx.graph_break(f"Python raises {type(exc).__name__}: {exc}", exc)


_SINGLETONS = (None, True, False, Ellipsis, NotImplemented)


def identical(tx: TraceContext, a: Any, b: Any) -> bool:
    """``a is b``, with identity guards on the ordinary objects the answer depends on."""
    tx.side_effects.refuse_selected(a, b, why="is compared with `is`")
    if not any(v is s for v in (a, b) for s in _SINGLETONS):  # else the key's types decide it
        _guard_identities(tx, a, b, "`is` test")
    return a is b


def _guard_identities(tx: TraceContext, a: Any, b: Any, what: str) -> None:
    """The trace decides on the identity of ``a`` and ``b``: guard each outside object on it, or break."""
    for v in (a, b):
        if isinstance(v, TArray) or is_plain(v) or id(v) in tx.caller_owned or id(v) in tx.made_functions:
            continue  # modelled by the tracer (its own values, values keyed by contents, the caller's containers)
        if type(v).__module__.startswith("jitgraph."):
            continue
        sources = tx.sources_of(v)
        for source in sources:
            tx.guards.identity(source, v)
        if sources:
            tx.keep(v)
        elif not isinstance(v, _IDENTITY_EQ):  # functions, modules and types without a source are constants
            tx.graph_break(f"{what} on a {type(v).__name__} object the tracer cannot guard on")


def binary(tx: TraceContext, symbol: str, a: Any, b: Any, inplace: bool = False) -> Any:
    if selections.is_lazy(a) or selections.is_lazy(b):
        return selections.binary(tx, symbol, a, b, inplace, binary)
    _refuse_sequence_with_number(tx, symbol, a, b)
    sa, sb = tx.size_symbol(a), tx.size_symbol(b)
    sized = None if sa is None and sb is None else size_arith(symbol, a if sa is None else sa, b if sb is None else sb)
    if sized is not None:  # ``n - 1`` of a symbolic size: exact Python arithmetic, evaluated per size (symbols.py)
        return tx.size_value(sized)
    if isinstance(a, TArray) or isinstance(b, TArray):
        if _is_none(a) or _is_none(b):
            tx.graph_break(f"operator {symbol} with None", TypeError(f"unsupported operand type(s) for {symbol}"))
        ufunc = BINARY_UFUNC[symbol]
        if inplace and isinstance(a, TArray) and a.kind == "array":
            return inplace_update(tx, ufunc, a, b)
        if symbol in _PY_RAISING and _is_py_number(a) and _is_py_number(b):
            b = _python_scalar_checks(tx, symbol, a, b)
        if symbol == "**" and _square_fast_path(tx, a, b):
            return tx.result(tx.op("square", tx.read(a)))  # ndarray.__pow__(2) calls np.square: bool -> int8
        node = tx.op(ufunc, tx.node(a), tx.node(b))
        if _is_py_number(a) and _is_py_number(b) and node.tensor_type.weak and node.tensor_type.dtype.kind == "i":
            node = python_ints.checked(tx, node)  # Python ints do not wrap: run eagerly where int64 would
        return tx.result(node)
    if inplace and isinstance(a, list):
        if id(a) in tx.caller_owned:
            tx.graph_break("+= on a caller's list is a side effect")
        a += list(b) if isinstance(b, tuple | list) else tx.graph_break("list += non-sequence")
        return a
    return python_op(tx, PY_BINARY[symbol], a, b, symbol)


_PY_RAISING = ("/", "//", "%", "**")


def _refuse_sequence_with_number(tx: TraceContext, symbol: str, a: Any, b: Any) -> None:
    """``[0] * len(x[m])``, ``(1, 2) * np.int64(k)``: with a Python or NumPy *scalar* of the graph, Python's own
    sequence rules apply (repetition, ``TypeError`` for ``+``, ``==`` False), not a ufunc; only an ndarray operand
    makes it elementwise."""
    for seq, num in ((a, b), (b, a)):
        if isinstance(seq, list | tuple | str | bytes) and isinstance(num, TArray) and num.kind != "array":
            tx.graph_break(f"operator {symbol} of a {type(seq).__name__} and a number computed from array data "
                           "(Python's sequence rules need its value)")


def _is_py_number(value: Any) -> bool:
    """A Python number: a trace-time int/float/bool or a Python-float value of the graph (``kind == "py"``)."""
    if isinstance(value, TArray):
        return value.kind == "py"
    return type(value) in (int, float, bool)


def _python_scalar_checks(tx: TraceContext, symbol: str, a: Any, b: Any) -> Any:
    """Python float arithmetic raises where the graph's IEEE arithmetic does not: ``x / 0.0`` (and ``//``, ``%``)
    raises ZeroDivisionError, ``0.0 ** -1`` too, ``(-8.0) ** (1/3)`` is complex and ``1e200 ** 2`` raises
    OverflowError. The compiled code cannot change its result type or raise there, so operands that are arguments
    (or constants) are guarded to behave as at trace time, and the trace falls back when Python raises or returns a
    complex number (the eager run then does exactly that); values computed in the graph are not known at trace time,
    so a divisor computed there gets a run-time check, and a computed ``**`` falls back. Returns ``b``, checked."""
    if symbol == "**":
        if not isinstance(b, TArray) and b in (0, 1):
            return b  # x ** 0 and x ** 1 never raise
        operands = (_py_operand(tx, a), _py_operand(tx, b))
        if operands[1] is None and _small_base_int_power(tx, a, b):
            return _checked_exponent(tx, b)
        if operands[0] is None or operands[1] is None:
            tx.graph_break("`**` of Python floats computed in the graph (Python raises or returns complex for some "
                           "values, where the compiled code would give NaN or inf)")
        (va, ca, na), (vb, cb, nb) = operands
        ok = python_pow_ok(va, vb)
        code = f"{tx.guards.const(python_pow_ok)}({ca}, {cb})"
        text = f"{na} ** {nb} is a float"
        if ok:
            tx.guards.add(code, text)
            return b
        tx.guards.add(f"not {code}", f"{na} ** {nb} is not a float")
        tx.graph_break(f"{na} ** {nb}: Python raises or returns a complex number here")
    if not isinstance(b, TArray):
        if b == 0:
            err = _zero_division(symbol)
            tx.graph_break(f"Python raises {type(err).__name__}: {err}", err)
        return b
    divisor = _py_operand(tx, b)
    if divisor is None:
        return _checked_divisor(tx, symbol, b)
    value, code, name = divisor
    if value != 0:
        tx.guards.add(f"{code} != 0", f"{name} != 0")
        return b
    tx.guards.add(f"{code} == 0", f"{name} == 0")
    err = _zero_division(symbol)
    tx.graph_break(f"Python raises {type(err).__name__}: {err}", err)


def _zero_division(symbol: str) -> ZeroDivisionError:
    """The error Python raises for ``1.0 <symbol> 0.0``, with its own message (it differs per operator and version)."""
    try:
        PY_BINARY[symbol](1.0, 0.0)
    except ZeroDivisionError as exc:
        return exc
    raise AssertionError(f"1.0 {symbol} 0.0 did not raise")


def _small_base_int_power(tx: TraceContext, a: Any, b: Any) -> bool:
    """``beta1 ** t`` with a trace-time float ``0 < |beta1| <= 1`` and a Python int computed in the graph (a step
    counter kept on an object): Python's result is a float in [-1, 1] for every ``t >= 0``."""
    return (type(a) is float and 0 < abs(a) <= 1 and isinstance(b, TArray) and b.kind == "py"
            and tx.type_of(b).dtype.kind in "iu")


def _checked_exponent(tx: TraceContext, b: TArray) -> TArray:
    """The exponent of :func:`_small_base_int_power`, checked ``>= 0`` at run time (a negative one gives a result
    beyond 1, which may overflow, where Python raises OverflowError: the check has the call run eagerly)."""
    node = tx.read(b)
    pred = tx.op("greater_equal", node, tx.node(0))
    return tx.fresh(tx.op("check", node, pred, message="negative exponent computed in the graph",
                          error="RerunEagerly"))


def _checked_divisor(tx: TraceContext, symbol: str, b: TArray) -> TArray:
    """A Python-float divisor computed in the graph (``lr / (1 - beta1 ** t)``): a run-time check raises Python's
    ZeroDivisionError, with Python's own message, where it is zero."""
    node = tx.read(b)
    pred = tx.op("not_equal", node, tx.node(0.0))
    return tx.fresh(tx.op("check", node, pred, message=str(_zero_division(symbol)), error="ZeroDivisionError"))


def _py_operand(tx: TraceContext, value: Any) -> tuple[Any, str, str] | None:
    """(value at trace time, guard code, readable name) of a Python-number operand the guards can reach."""
    if not isinstance(value, TArray):
        return value, tx.guards.const(value), repr(value)
    entry = tx.py_input(value)
    if entry is None:
        return None
    return entry[0], entry[1].code, entry[1].name


def python_pow_ok(base: Any, exponent: Any) -> bool:
    """Whether Python's ``base ** exponent`` returns a float (it may raise, or return a complex number)."""
    try:
        return type(base ** exponent) is float
    except Exception:  # noqa: BLE001
        return False


def _square_fast_path(tx: TraceContext, a: Any, b: Any) -> bool:
    """``bool_array ** 2`` is ``np.square`` (int8), not ``np.power`` (int64): ``ndarray.__pow__`` special-cases a
    Python int 2. (Its other fast paths -- -1, 0.5 and float exponents -- give what ``np.power`` gives.)"""
    return (isinstance(a, TArray) and a.kind == "array" and type(b) is int and b == 2
            and tx.type_of(a).dtype == np.bool_)


def _is_none(value: Any) -> bool:
    return value is None


def inplace_update(tx: TraceContext, ufunc: str, target: TArray, operand: Any, out_dtype_check: bool = True) -> TArray:
    """``target <op>= operand``: compute, cast with NumPy's same_kind rule, write back through any view."""
    current = tx.read(target)
    result = tx.op(ufunc, current, tx.node(operand))
    store_into(tx, target, result, ufunc, operand)
    return target


def store_into(tx: TraceContext, target: TArray, result: Any, ufunc: str, operand: Any = None) -> None:
    """Write a ufunc result into ``target`` the way ``out=target`` would: same shape, same_kind cast."""
    t_target = tx.type_of(target)
    t_result = result.tensor_type
    if not np.can_cast(t_result.dtype, t_target.dtype, casting="same_kind"):
        tx.graph_break(f"in-place {ufunc} would cast {t_result.dtype} to {t_target.dtype} (NumPy raises "
                       "UFuncTypeError)", _numpy_casting_error(ufunc, t_target.dtype, operand, tx))
    if t_result.shape != t_target.shape:
        err = ValueError(f"non-broadcastable output operand with shape {t_target.shape} doesn't match the "
                         f"broadcast shape {t_result.shape}")
        tx.graph_break(str(err), err)
    if t_result.dtype != t_target.dtype or t_result.weak:
        result = tx.op("astype", result, dtype=t_target.dtype)
    tx.write(target, result)


def _numpy_casting_error(ufunc: str, dtype: np.dtype, operand: Any, tx: TraceContext) -> BaseException:
    """Ask NumPy for the exact exception the in-place op raises, on one-element prototypes."""
    target = np.ones(1, dtype)
    other: Any = 1
    if isinstance(operand, TArray):
        t = tx.type_of(operand)
        other = t.proto() if t.weak else np.ones(1, t.dtype)
    elif is_plain(operand):
        other = operand
    try:
        getattr(np, ufunc)(target, other, out=target)
    except Exception as exc:  # noqa: BLE001
        return exc
    return TypeError(f"Cannot cast ufunc '{ufunc}' output to {dtype} with casting rule 'same_kind'")


def compare(tx: TraceContext, symbol: str, a: Any, b: Any) -> Any:
    if selections.is_lazy(a) or selections.is_lazy(b):
        return selections.binary(tx, symbol, a, b, False, compare)
    _refuse_sequence_with_number(tx, symbol, a, b)
    if isinstance(a, TArray) or isinstance(b, TArray):
        if _is_none(a) or _is_none(b):
            return _compare_none(tx, symbol, b if _is_none(a) else a)
        node = tx.op(COMPARE_UFUNC[symbol], tx.node(a), tx.node(b))
        if _is_py_number(a) and _is_py_number(b):  # Python numbers compare to a Python bool, not np.bool_
            return tx.fresh(node, "py")
        return tx.result(node)
    return python_op(tx, PY_COMPARE[symbol], a, b, symbol)


def _compare_none(tx: TraceContext, symbol: str, value: TArray) -> Any:
    """``array == None`` is elementwise in NumPy (all False; ``!=`` all True); ``<`` and friends raise TypeError."""
    if symbol not in ("==", "!="):
        err = TypeError(f"'{symbol}' not supported between instances of an array and 'NoneType'")
        tx.graph_break(str(err), err)
    if value.kind != "array":
        return symbol == "!="
    return tx.result(tx.op("full", shape=tx.type_of(value).shape, dtype=np.dtype(bool), value=symbol == "!="))


UNARY_UFUNC = {"-": "negative", "+": "positive", "~": "invert"}
PY_UNARY = {"-": operator.neg, "+": operator.pos, "~": operator.invert}


def unary(tx: TraceContext, symbol: str, a: Any) -> Any:
    if selections.is_lazy(a):
        return selections.unary(tx, symbol, a, unary)
    if isinstance(a, TArray):
        return tx.result(tx.op(UNARY_UFUNC[symbol], tx.read(a)))
    if not is_plain(a):
        tx.graph_break(f"unary {symbol} on a {type(a).__name__} object")
    try:
        return PY_UNARY[symbol](a)
    except Exception as exc:  # noqa: BLE001
        tx.graph_break(f"Python raises {type(exc).__name__}: {exc}", exc)


# ---- indexing -------------------------------------------------------------------------------------------------
def parse_index(tx: TraceContext, index: Any) -> tuple[tuple[Any, ...], list[Any]]:
    """Split a NumPy index into a spec (ints, slices, None, ...) and array operands (``Operand(k)``)."""
    entries = index if isinstance(index, tuple) else (index,)
    spec: list[Any] = []
    operands: list[Any] = []
    for e in entries:
        if isinstance(e, bool | np.bool_):
            tx.graph_break("boolean scalar index")
        if isinstance(e, int | np.integer):
            spec.append(int(e))
        elif isinstance(e, slice):
            parts = []
            for p in (e.start, e.stop, e.step):
                if isinstance(p, TArray):
                    tx.graph_break("slice bounds computed from array data")
                if p is not None and not isinstance(p, int | np.integer):
                    err = TypeError("slice indices must be integers or None or have an __index__ method")
                    tx.graph_break(str(err), err)
                parts.append(None if p is None else int(p))
            spec.append(slice(*parts))
        elif e is None or e is Ellipsis:
            spec.append(e)
        elif isinstance(e, TArray | list | tuple | range | np.ndarray):
            node = tx.node(np.arange(e.start, e.stop, e.step) if isinstance(e, range) else e)  # NumPy takes ranges
            kind = node.tensor_type.dtype.kind
            if kind == "b":
                tx.graph_break("boolean mask index: reading x[mask] (or storing an array of the selected elements) "
                               "has a size that depends on the data; x[mask] = scalar and np.where(mask, a, x) "
                               "compile")
            if kind not in "iu":
                err = IndexError("arrays used as indices must be of integer (or boolean) type")
                tx.graph_break(str(err), err)
            spec.append(Operand(len(operands)))
            operands.append(node)
        else:
            err = IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer "
                             "or boolean arrays are valid indices")
            tx.graph_break(str(err), err)
    return tuple(spec), operands


def getitem(tx: TraceContext, container: Any, index: Any) -> Any:
    if selections.is_lazy(container):
        container.misuse()  # x[m][0]: the trace cuts at x[m] instead
    if isinstance(container, TArray):
        return array_getitem(tx, container, index)
    if is_index_trick(container):
        return index_trick(tx, container, index)  # np.c_[a, b], np.r_[...], np.mgrid[...]
    if isinstance(index, TArray):
        tx.graph_break("indexing a Python container with a value computed from array data")
    if isinstance(container, list | tuple | dict | str | range | bytes) or is_plain(container):
        try:
            return container[index]
        except Exception as exc:  # noqa: BLE001
            tx.graph_break(f"Python raises {type(exc).__name__}: {exc}", exc)
    tx.graph_break(f"indexing a {type(container).__name__} object (its __getitem__ is not traced)")


def array_getitem(tx: TraceContext, array: TArray, index: Any) -> TArray:
    if array.kind != "array":
        tx.graph_break("indexing a scalar", IndexError("invalid index to scalar variable."))
    value = selections.mask_read(tx, array, index)  # x[mask]: lazy (selections.py), or cut and resumed (resume.py)
    if value is not NOT_CUT:
        return value
    spec, operands = parse_index(tx, index)
    ndim = tx.type_of(array).ndim
    if not operands:
        full_int = (sum(isinstance(e, int) for e in spec) == ndim and
                    all(isinstance(e, int) for e in spec))
        if full_int:
            return tx.result(tx.op("getitem", tx.read(array), spec=spec))
        return tx.view(array, "getitem", spec=spec)
    node = tx.op("getitem", tx.read(array), *operands, spec=spec)
    return tx.result(node)


def setitem(tx: TraceContext, container: Any, index: Any, value: Any) -> None:
    if isinstance(container, TArray):
        array_setitem(tx, container, index, value)
        return
    if isinstance(container, list | dict):
        if isinstance(index, TArray):
            tx.graph_break("indexing a Python container with a value computed from array data")
        if id(container) in tx.caller_owned:
            current = container.get(index) if isinstance(container, dict) else _safe_get(container, index)
            if current is value:
                return  # ``d[k] -= x`` stores back the same (updated in place) array: nothing to do
            tx.graph_break("assigning into a caller's list or dict is a side effect")
        try:
            container[index] = value
        except Exception as exc:  # noqa: BLE001
            tx.graph_break(f"Python raises {type(exc).__name__}: {exc}", exc)
        return
    tx.graph_break(f"item assignment on a {type(container).__name__} object")


def _safe_get(container: list, index: Any) -> Any:
    try:
        return container[index]
    except Exception:  # noqa: BLE001
        return None


def array_setitem(tx: TraceContext, array: TArray, index: Any, value: Any) -> None:
    if array.kind != "array":
        err = TypeError(f"'{tx.type_of(array).dtype.type.__name__}' object does not support item assignment")
        tx.graph_break(str(err), err)
    if _mask_assignment(tx, array, index, value):
        return
    spec, operands = parse_index(tx, index)
    if not operands and isinstance(value, TArray) and value.buffer is array.buffer and \
            value.path == array.path + (ViewStep("getitem", (("spec", spec),)),):
        return  # ``x[i] += 1`` already wrote through the view; storing the view back changes nothing
    new = tx.op("setitem", tx.read(array), tx.node(value), *operands, spec=spec)
    tx.write(array, new)


def _mask_assignment(tx: TraceContext, array: TArray, index: Any, value: Any) -> bool:
    """``x[mask] = scalar`` with a boolean mask over ``x``'s leading axes has a static shape: it is
    ``where(mask, scalar, x)`` (a value of the trailing shape, one row for every selected row, too).

    (Reading ``x[mask]`` stays a break: its shape depends on the data.)"""
    mask = index[0] if isinstance(index, tuple) and len(index) == 1 else index
    if not isinstance(mask, TArray):
        return False
    mask_type, target = tx.type_of(mask), tx.type_of(array)
    k = mask_type.ndim
    if mask_type.dtype.kind != "b" or mask_type.shape != target.shape[:k]:
        return False
    if isinstance(value, TArray):
        vshape = tx.type_of(value).shape  # one value, or one row broadcast to every selected row (x[m] = row)
        if vshape != () and (len(vshape) > target.ndim - k or vshape != target.shape[target.ndim - len(vshape):]):
            return False
    elif not isinstance(value, int | float | bool | np.generic):
        return False
    cond = tx.read(mask)
    if k < target.ndim:
        cond = tx.op("reshape", cond, shape=mask_type.shape + (1,) * (target.ndim - k))
    new = tx.op("where", cond, tx.node(value), tx.read(array))
    if new.tensor_type.dtype != target.dtype:
        new = tx.op("astype", new, dtype=target.dtype)
    tx.write(array, new)
    return True
