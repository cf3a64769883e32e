"""Types of IR values: a shape, a dtype, a layout class and the NEP 50 'weak scalar' flag.

Python ``int``/``float``/``complex`` values (literals, runtime learning rates) are *weak*: under NEP 50 they adopt
the dtype of the array they meet (``f32_array * 0.5`` stays float32). Keeping that bit in the type is what lets
the IR reproduce NumPy 2's promotion exactly instead of approximating it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jitgraph.ir.symbols import SymbolicSizeError, is_size_symbol

SUPPORTED_DTYPES: tuple[np.dtype, ...] = tuple(
    np.dtype(d) for d in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                          "float16", "float32", "float64", "complex64", "complex128")
)

_SHORT = {
    "bool": "b1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "u8", "uint16": "u16",
    "uint32": "u32", "uint64": "u64", "float16": "f16", "float32": "f32", "float64": "f64", "complex64": "c64",
    "complex128": "c128",
}
_WEAK_NAME = {"b": "pybool", "i": "pyint", "u": "pyint", "f": "pyfloat", "c": "pycomplex"}

# Layout classes. C and F are the contiguous orders; S is "strided, no better promise".
LAYOUTS = ("C", "F", "S")


@dataclass(frozen=True)
class TensorType:
    """The static type of an array (or scalar) value.

    ``weak`` marks a Python scalar (shape ``()``); ``layout`` is what the value is known to be in memory. Only
    graph inputs and views carry a layout other than ``"C"``; freshly computed arrays are C-ordered, as in NumPy.
    """

    shape: tuple[int, ...]  # a dimension may be a symbolic size (``Sym``, ir/symbols.py) in a traced graph
    dtype: np.dtype
    weak: bool = False
    layout: str = "C"

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", np.dtype(self.dtype))
        object.__setattr__(self, "shape", tuple(d if is_size_symbol(d) else int(d) for d in self.shape))
        if self.weak and self.shape != ():
            raise ValueError("weak (Python scalar) types must have shape ()")
        if self.layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, not {self.layout!r}")

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            if is_size_symbol(d):
                raise SymbolicSizeError(f"the size of {self} depends on {d}")
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def with_(self, **changes: object) -> TensorType:
        fields = {"shape": self.shape, "dtype": self.dtype, "weak": self.weak, "layout": self.layout}
        fields.update(changes)
        return TensorType(**fields)  # type: ignore[arg-type]

    def proto(self) -> object:
        """A tiny stand-in value of this type, used to ask NumPy itself for result dtypes.

        Weak types become the Python scalar type's instance, so NumPy applies NEP 50 exactly as it would at
        run time; arrays become a size-1 array of ones (ones avoid division-by-zero and negative-power errors).
        """
        if self.weak:
            return python_type(self.dtype)(1)
        return np.ones((1,) * self.ndim, dtype=self.dtype)

    def __str__(self) -> str:
        if self.weak:
            return f"{_WEAK_NAME[self.dtype.kind]}[]"
        dims = ",".join(str(d) for d in self.shape)
        suffix = "" if self.layout == "C" else f"{{{self.layout}}}"
        return f"{short_dtype(self.dtype)}[{dims}]{suffix}"


def short_dtype(dtype: np.dtype) -> str:
    return _SHORT.get(np.dtype(dtype).name, np.dtype(dtype).name)


def python_type(dtype: np.dtype) -> type:
    """The Python scalar type that a weak value of ``dtype`` stands for."""
    return {"b": bool, "i": int, "u": int, "f": float, "c": complex}[np.dtype(dtype).kind]


def weak_type_of(value: bool | int | float | complex) -> TensorType:  # noqa: PYI041 - each type matters here
    """The type of a Python scalar: bool is *not* weak under NEP 50, int/float/complex are."""
    if isinstance(value, bool):
        return TensorType((), np.dtype(bool))
    if isinstance(value, int):
        return TensorType((), np.dtype(np.int64), weak=True)
    if isinstance(value, float):
        return TensorType((), np.dtype(np.float64), weak=True)
    if isinstance(value, complex):
        return TensorType((), np.dtype(np.complex128), weak=True)
    raise TypeError(f"not a Python scalar: {value!r}")


def layout_of(array: np.ndarray) -> str:
    """Classify an array's memory layout; 0-d and 1-element arrays count as C."""
    if array.flags.c_contiguous:
        return "C"
    if array.flags.f_contiguous:
        return "F"
    return "S"


def type_of(value: object) -> TensorType:
    """The IR type of a runtime value (array, NumPy scalar or Python scalar)."""
    if isinstance(value, np.ndarray):
        return TensorType(value.shape, value.dtype, layout=layout_of(value))
    if isinstance(value, np.generic):
        return TensorType((), value.dtype)
    return weak_type_of(value)  # type: ignore[arg-type]
