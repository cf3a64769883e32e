"""How wide jitgraph's kernels vectorise: LLVM's per-function ``"prefer-vector-width"`` attribute.

Why: on Intel server cores with AVX-512 (Sapphire, Emerald and Granite Rapids) LLVM's x86 subtarget sets
``prefer-256-bit``, so Numba vectorises loops 8 float32 lanes wide where Inductor's C++ uses 16. Clearing that
feature through ``NUMBA_CPU_FEATURES`` would widen every ``@njit`` function of the process, the user's own
included. Instead each jitgraph kernel's LLVM functions carry ``"prefer-vector-width"="512"``, which LLVM reads per
function (``X86TargetMachine::getSubtargetImpl``: the vectoriser's cost model and the code generator both see it).
Measured on an Emerald Rapids host: the row-softmax kernel of W2 (4096x1024 float32, one thread) 6.9 ms at 256-bit,
4.4-4.6 ms at 512-bit.

How: the generated kernel modules decorate with :func:`njit` from here instead of Numba's. When a width applies it
passes Numba a ``pipeline_class`` (:class:`_WideCompiler`) whose compilations use a code library
(:class:`_WideLibrary`) that, just before LLVM's module optimisation, re-parses its module with every function
definition referring to one more attribute group holding the width. Nothing else in the process changes.

It uses two internals of Numba (``Compiler.compile_extra`` and ``CPUCodeLibrary._optimize_final_module``): where
they are missing, or where the rewritten module does not parse, the kernel keeps today's code, silently apart from
a debug log. The width is part of the disk cache key (:mod:`cache`), so kernels cached under one setting are never
loaded under another.

``JITGRAPH_VECTOR_WIDTH``: ``auto`` (the default) asks for 512 bits where LLVM's name for the CPU is in
:data:`WIDE_CPUS` and AVX-512F is on, and otherwise leaves LLVM's choice; it also leaves LLVM's choice when the
user set ``NUMBA_CPU_NAME`` or ``NUMBA_CPU_FEATURES`` (they chose the target). ``256`` and ``512`` ask for that width
(512 only where AVX-512F is on).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from functools import cache
from typing import Any

import llvmlite.binding as llvm
import numba
from numba.core import codegen as numba_codegen
from numba.core import compiler as numba_compiler

from jitgraph import config
from jitgraph.errors import BackendError

__all__ = ["SUPPORTED", "WIDE_CPUS", "VectorWidthError", "attribute_width", "njit", "widen_ir"]

_log = logging.getLogger("jitgraph.kernels")

# LLVM host CPU names whose cores run 512-bit vectors without a clock penalty worth avoiding (Skylake-X and Ice
# Lake servers do slow down, so LLVM's 256-bit preference stays there). Zen 4 splits 512-bit operations in two but
# gains from the wider registers and masks; Zen 5 has full-width units.
WIDE_CPUS = frozenset({"sapphirerapids", "emeraldrapids", "graniterapids", "graniterapids-d", "diamondrapids",
                       "znver4", "znver5"})
VALUES = ("auto", "256", "512")

# Whether this Numba has the two hooks used below; otherwise kernels compile as they always did.
SUPPORTED = (hasattr(numba_compiler.Compiler, "compile_extra")
             and hasattr(numba_codegen, "JITCodeLibrary")
             and hasattr(numba_codegen.JITCodeLibrary, "_optimize_final_module"))


class VectorWidthError(BackendError, ValueError):
    """``JITGRAPH_VECTOR_WIDTH`` holds a value jitgraph does not know."""


@cache
def _host() -> tuple[str, str]:
    """LLVM's name and feature string for this CPU (asked once: a kernel module reads the width per decorator)."""
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


@cache
def _resolve(setting: str, cpu_name: str, features: str, user_target: bool) -> int | None:
    """The width to ask LLVM for, or None for LLVM's own choice (memoised: the host does not change)."""
    has_avx512 = "+avx512f" in features.split(",")
    if setting == "256":
        return 256
    if setting == "512":
        return 512 if has_avx512 else None
    if user_target:
        return None
    return 512 if has_avx512 and cpu_name in WIDE_CPUS else None


def attribute_width() -> int | None:
    """The ``prefer-vector-width`` jitgraph's kernels get under ``JITGRAPH_VECTOR_WIDTH``, or None (LLVM's choice).
    Raises :class:`VectorWidthError` for a value that is not one of :data:`VALUES`."""
    setting = config.env("JITGRAPH_VECTOR_WIDTH").strip().lower() or "auto"
    if setting not in VALUES:
        raise VectorWidthError(f"JITGRAPH_VECTOR_WIDTH={setting!r} is not valid; expected one of "
                               f"{', '.join(VALUES)}{config.did_you_mean(setting, list(VALUES))}",
                               hint="unset it (auto) or set it to 256 or 512")
    user_name = config.env("NUMBA_CPU_NAME")
    user_features = config.env("NUMBA_CPU_FEATURES")
    user_target = user_name != "host" or bool(user_features)
    cpu_name = _host()[0] if user_name == "host" else user_name
    features = user_features or _host()[1]
    return _resolve(setting, cpu_name, features, user_target)


# A function definition the rewrite understands: ``define ... (args) [local_]unnamed_addr #N... {``. Anything else
# after the argument list (a section, a personality, debug metadata) leaves that function as it is.
_DEFINE = re.compile(r"^(define [^\n]*\)(?: local_unnamed_addr| unnamed_addr)?(?: #\d+)*) \{$", re.MULTILINE)
_GROUP = re.compile(r"^attributes #(\d+) ", re.MULTILINE)


def widen_ir(text: str, width: int) -> tuple[str, int]:
    """LLVM IR ``text`` with every function definition it understands also referring to a new attribute group
    ``{ "prefer-vector-width"="<width>" }`` (LLVM merges several groups on one function); returns the text and how
    many definitions changed."""
    group = max((int(n) for n in _GROUP.findall(text)), default=-1) + 1
    text, count = _DEFINE.subn(lambda m: f"{m.group(1)} #{group} {{", text)
    if count:
        text += f'\nattributes #{group} = {{ "prefer-vector-width"="{width}" }}\n'
    return text, count


_BaseLibrary: type = getattr(numba_codegen, "JITCodeLibrary", object)


class _WideLibrary(_BaseLibrary):
    """Numba's JIT code library, with the vector width attribute put on its functions before optimisation."""

    width = 512

    def _optimize_final_module(self) -> None:
        old = self._final_module
        try:
            text, count = widen_ir(str(old), self.width)
            if count:
                new = llvm.parse_assembly(text)
                new.name = old.name
                new.verify()
                self._final_module = new
        except Exception as exc:  # noqa: BLE001 - an unparsable rewrite keeps the code as Numba made it
            _log.debug("jitgraph: kernel %s keeps LLVM's vector width (%s)", self.name, exc)
        super()._optimize_final_module()


class _WideLibrary256(_WideLibrary):
    width = 256


class _WideCompiler(numba_compiler.Compiler):
    """Numba's default compiler, giving each compilation a :class:`_WideLibrary` (in place of the plain library
    Numba's lowering would create)."""

    library_class: type[_WideLibrary] = _WideLibrary

    def compile_extra(self, func: Callable[..., Any]) -> Any:
        codegen = self.state.targetctx.codegen()
        if self.state.library is None and getattr(codegen, "_library_class", None) is _BaseLibrary:
            try:
                library = self.library_class(codegen, func.__qualname__)
                library.enable_object_caching()  # as Numba's lowering does for the library it creates
            except Exception as exc:  # noqa: BLE001 - another Numba's library: let its lowering create its own
                _log.debug("jitgraph: kernel %s keeps LLVM's vector width (%s)", func.__qualname__, exc)
            else:
                self.state.library = library
        return super().compile_extra(func)


class _WideCompiler256(_WideCompiler):
    library_class = _WideLibrary256


# Module-level classes (not made on the fly), so a dispatcher holding one still pickles.
_COMPILERS: dict[int, type[_WideCompiler]] = {512: _WideCompiler, 256: _WideCompiler256}


def njit(*args: Any, **kwargs: Any) -> Any:
    """``numba.njit`` for generated kernels: with the wide pipeline when :func:`attribute_width` asks for a width."""
    width = attribute_width()
    if width is not None and SUPPORTED and "pipeline_class" not in kwargs:
        kwargs["pipeline_class"] = _COMPILERS[width]
    return numba.njit(*args, **kwargs)
