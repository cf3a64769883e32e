"""Opcode handlers: the value stack, locals, cells, globals and building/unpacking containers."""

from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any

from jitgraph.tracer.bytecode import Instr
from jitgraph.tracer.guards import Source
from jitgraph.tracer.iteration import iterate
from jitgraph.tracer.values import NULL, ExternalCell, TArray, is_plain

if TYPE_CHECKING:
    from jitgraph.tracer.frame import Frame


class StackOps:
    def op_POP_TOP(self: Frame, ins: Instr) -> None:
        self.pop()

    def op_PUSH_NULL(self: Frame, ins: Instr) -> None:
        self.push(NULL)

    def op_COPY(self: Frame, ins: Instr) -> None:
        self.push(self.stack[-ins.arg])

    def op_SWAP(self: Frame, ins: Instr) -> None:
        self.stack[-1], self.stack[-ins.arg] = self.stack[-ins.arg], self.stack[-1]

    def op_LOAD_CONST(self: Frame, ins: Instr) -> None:
        self.push(ins.argval)

    def op_LOAD_FAST(self: Frame, ins: Instr) -> None:
        try:
            self.push(self.locals[ins.argval])
        except KeyError:
            err = UnboundLocalError(f"local variable '{ins.argval}' referenced before assignment")
            self.tx.graph_break(str(err), err)

    def op_STORE_FAST(self: Frame, ins: Instr) -> None:
        value = self.pop()
        if value is NULL:  # restoring a variable an inlined comprehension shadowed while it was unbound
            self.locals.pop(ins.argval, None)
        else:
            self.locals[ins.argval] = value

    def op_LOAD_FAST_AND_CLEAR(self: Frame, ins: Instr) -> None:
        self.push(self.locals.pop(ins.argval, NULL))

    def op_DELETE_FAST(self: Frame, ins: Instr) -> None:
        self.locals.pop(ins.argval, None)

    # ---- cells ----------------------------------------------------------------------------------------------
    def op_LOAD_DEREF(self: Frame, ins: Instr) -> None:
        cell = self.cells[ins.argval]
        if isinstance(cell, ExternalCell):
            try:
                contents = cell.cell.cell_contents
            except ValueError:
                self.tx.graph_break(f"free variable '{ins.argval}' is not bound yet",
                                    NameError(f"free variable '{ins.argval}' referenced before assignment"))
            self.push(self.tx.wrap_external(contents, cell.source))
            return
        try:
            self.push(cell.cell_contents)
        except ValueError:
            self.tx.graph_break(f"variable '{ins.argval}' is not bound yet",
                                NameError(f"cannot access free variable '{ins.argval}'"))

    def op_STORE_DEREF(self: Frame, ins: Instr) -> None:
        cell = self.cells[ins.argval]
        if isinstance(cell, ExternalCell) or id(cell) in self.tx.readonly_cells:
            self.tx.graph_break(f"assignment to nonlocal '{ins.argval}' of a function defined outside the trace")
        cell.cell_contents = self.pop()

    def op_LOAD_CLOSURE(self: Frame, ins: Instr) -> None:
        cell = self.cells[ins.argval]
        if isinstance(cell, ExternalCell):
            copy = types.CellType(self.tx.wrap_external(cell.cell.cell_contents, cell.source))
            self.tx.readonly_cells.add(id(self.tx.keep(copy)))
            self.cells[ins.argval] = copy
            cell = copy
        self.push(cell)

    # ---- globals --------------------------------------------------------------------------------------------
    def op_LOAD_GLOBAL(self: Frame, ins: Instr) -> None:
        name = ins.argval
        if self.tx.side_effects.has_attr(self.globals, name):  # rebound earlier in this trace
            self.push(self.tx.side_effects.attr(self.globals, name))
        elif name in self.globals:
            source = None
            if self.globals_source is not None:
                source = Source(f"{self.globals_source.code}[{name!r}]", name)
            self.push(self.tx.wrap_external(self.globals[name], source))
        elif name in self.builtins:
            self.push(self.builtins[name])
        else:
            err = NameError(f"name '{name}' is not defined")
            self.tx.graph_break(str(err), err)

    def op_STORE_GLOBAL(self: Frame, ins: Instr) -> None:
        value = self.pop()
        if self.globals_source is not None and self.tx.stored_back(f"{self.globals_source.code}[{ins.argval!r}]",
                                                                   value):
            return  # ``global W; W -= g`` stores back the array it updated in place
        if self.globals_source is None:
            self.tx.graph_break(f"assignment to global '{ins.argval}' of a module the tracer cannot name")
        self.tx.side_effects.store_attr(self.tx, self.globals, ins.argval, value, "global", self.globals_source)

    # ---- building containers --------------------------------------------------------------------------------
    def op_BUILD_TUPLE(self: Frame, ins: Instr) -> None:
        self.push(tuple(self.popn(ins.arg)))

    def op_BUILD_LIST(self: Frame, ins: Instr) -> None:
        self.push(list(self.popn(ins.arg)))

    def op_BUILD_SET(self: Frame, ins: Instr) -> None:
        items = self.popn(ins.arg)
        if not all(is_plain(i) for i in items):
            self.tx.graph_break("sets of arrays are not traced")
        self.push(set(items))

    def op_BUILD_MAP(self: Frame, ins: Instr) -> None:
        items = self.popn(2 * ins.arg)
        self.push({_key(self, items[i]): items[i + 1] for i in range(0, len(items), 2)})

    def op_BUILD_CONST_KEY_MAP(self: Frame, ins: Instr) -> None:
        keys = self.pop()
        values = self.popn(ins.arg)
        self.push(dict(zip(keys, values)))

    def op_BUILD_SLICE(self: Frame, ins: Instr) -> None:
        # A traced bound (``indptr[i]``) stays in the slice: subscripts lower it as a symbolic view (symarrays.py)
        # or break with the reason; any other use meets Python's own TypeError.
        self.push(slice(*self.popn(ins.arg)))

    def op_BUILD_STRING(self: Frame, ins: Instr) -> None:
        self.push("".join(self.popn(ins.arg)))

    def op_FORMAT_VALUE(self: Frame, ins: Instr) -> None:
        spec = self.pop() if ins.arg & 0x04 else ""
        value = self.pop()
        if not is_plain(value):
            self.tx.graph_break("formatting a traced value into a string needs its data")
        conversion = {0: lambda v: v, 1: str, 2: repr, 3: ascii}[ins.arg & 0x03]
        self.push(format(conversion(value), spec))

    def op_CONVERT_VALUE(self: Frame, ins: Instr) -> None:
        value = self.pop()
        if not is_plain(value):
            self.tx.graph_break("formatting a traced value into a string needs its data")
        self.push({1: str, 2: repr, 3: ascii}[ins.arg](value))

    def op_LIST_APPEND(self: Frame, ins: Instr) -> None:
        value = self.pop()
        self.stack[-ins.arg].append(value)

    def op_SET_ADD(self: Frame, ins: Instr) -> None:
        value = self.pop()
        if not is_plain(value):
            self.tx.graph_break("sets of arrays are not traced")
        self.stack[-ins.arg].add(value)

    def op_MAP_ADD(self: Frame, ins: Instr) -> None:
        value = self.pop()
        key = _key(self, self.pop())
        self.stack[-ins.arg][key] = value

    def op_LIST_EXTEND(self: Frame, ins: Instr) -> None:
        values = self.pop()
        self.stack[-ins.arg].extend(_iterable(self, values))

    def op_SET_UPDATE(self: Frame, ins: Instr) -> None:
        values = list(_iterable(self, self.pop()))
        if not all(is_plain(v) for v in values):
            self.tx.graph_break("sets of arrays are not traced")
        self.stack[-ins.arg].update(values)

    def op_DICT_UPDATE(self: Frame, ins: Instr) -> None:
        values = self.pop()
        if not isinstance(values, dict):
            self.tx.graph_break(f"dict update from {type(values).__name__}")
        self.stack[-ins.arg].update(values)

    def op_DICT_MERGE(self: Frame, ins: Instr) -> None:
        values = self.pop()
        if not isinstance(values, dict):
            self.tx.graph_break(f"** of a {type(values).__name__}")
        target = self.stack[-ins.arg]
        for k in values:
            if k in target:
                err = TypeError(f"got multiple values for keyword argument '{k}'")
                self.tx.graph_break(str(err), err)
        target.update(values)

    def op_LIST_TO_TUPLE(self: Frame, ins: Instr) -> None:
        self.push(tuple(self.pop()))

    def op_UNPACK_SEQUENCE(self: Frame, ins: Instr) -> None:
        items = list(_iterable(self, self.pop()))
        if len(items) != ins.arg:
            err = ValueError(f"expected {ins.arg} values to unpack, got {len(items)}")
            self.tx.graph_break(str(err), err)
        self.stack.extend(reversed(items))

    def op_UNPACK_EX(self: Frame, ins: Instr) -> None:
        before, after = ins.arg & 0xFF, ins.arg >> 8
        items = list(_iterable(self, self.pop()))
        if len(items) < before + after:
            err = ValueError(f"not enough values to unpack (expected at least {before + after}, got {len(items)})")
            self.tx.graph_break(str(err), err)
        middle = items[before:len(items) - after]
        out = items[:before] + [middle] + items[len(items) - after:]
        self.stack.extend(reversed(out))


def _key(frame: Frame, key: Any) -> Any:
    if isinstance(key, TArray) or not _hashable(key):
        frame.tx.graph_break("a dict key that is not a trace-time constant")
    return key


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _iterable(frame: Frame, value: Any) -> Any:
    return iterate(frame.tx, value)
