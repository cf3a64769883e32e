"""Reading an object's own attributes at trace time without touching its ``__dict__``.

Why: CPython (3.11-3.13) keeps a plain object's attributes inline, without a dict, until something asks for
``obj.__dict__`` (``vars(obj)``, ``getattr(obj, "__dict__")``). From then on the object has a real dict, and every
attribute load and store on it is slower, in the user's own code too: 30-60 ns an access, measured on 3.11, 3.12
and 3.13 (``o.a = x; o.b = y; return o.a``: 85 -> 150 ns). The tracer used to read ``obj.__dict__`` for every
attribute it traced, so a layer or optimiser object became slower for good once a method of it was compiled,
which the eager-mode calls of a demoted function (jit/eager_mode.py) and the user's uncompiled code then paid.

How: ``object.__getattribute__`` finds the instance's value first where the class attribute is not a data
descriptor (the tracer breaks on those before asking), without calling ``__getattr__``; the question is only
whether the value came from the instance or from the class. ``gc.get_referents`` lists what the object refers to:
its inline attribute values, or its dict once it has one. A value found among them (by identity) or in that dict
under ``name`` is the instance's; a value made by the lookup (a bound method) or the class's own object is not,
unless the instance holds that very object too, under some name: then it is taken as the instance's, which only
adds a guard that the class attribute would not need (never the other way round).
"""

from __future__ import annotations

import gc
import types
from typing import Any

_MISSING = object()


def has_instance_dict(obj: Any) -> bool:
    """Whether instances of ``type(obj)`` keep attributes in a ``__dict__`` (inline or not): a non-zero
    ``__dictoffset__``. Objects with ``__slots__`` alone have none."""
    return type(obj).__dictoffset__ != 0


_NO_USER_CODE = (types.FunctionType, staticmethod, classmethod)  # class attributes whose lookup runs no user code


def own_value(obj: Any, name: str, raw: Any) -> tuple[bool, Any]:
    """(True, value) where ``obj``'s own attributes hold ``name`` (as ``name in vars(obj)`` would say, or where
    the value is also held by the instance: module docstring), else (False, None). ``raw`` is the class attribute
    of that name (None: none): a descriptor whose ``__get__`` may run user code (``functools.cached_property``)
    is not looked up; its object's dict is read instead, as before. Creates no ``obj.__dict__`` otherwise."""
    if raw is not None and not isinstance(raw, _NO_USER_CODE) and hasattr(type(raw), "__get__"):
        own = obj.__dict__
        return (True, own[name]) if name in own else (False, None)
    try:
        value = object.__getattribute__(obj, name)
    except AttributeError:
        return False, None
    for ref in gc.get_referents(obj):
        if ref is value:
            return True, value
        if type(ref) is dict and ref.get(name, _MISSING) is value:  # the dict, once it exists
            return True, value
    return False, None
