"""Which backend a compiled function uses, and the one rule about device arrays: they compile only with
``backend="cuda"``, since every other backend computes on the host with NumPy."""

from __future__ import annotations

from jitgraph.backends import base
from jitgraph.errors import BackendError


def resolve_backend(name: str | None) -> str:
    """The backend to use: the named one (get_backend names the known ones when it is not), else "cpu" where it
    is registered, else "eager"."""
    if name is not None:
        return name
    return "cpu" if "cpu" in base._BACKENDS else "eager"


def check_device_backend(fn_name: str, requested: str | None, device: list[int], names: list[str]) -> None:
    """Raise BackendError when device leaves (indices ``device``) meet a backend other than cuda."""
    backend = resolve_backend(requested)
    if not device or backend == "cuda":
        return
    which = ", ".join(names[i] if i < len(names) else f"leaf {i}" for i in device)
    default = " (the default)" if requested is None else ""
    raise BackendError(f"{fn_name} got GPU device arrays ({which}), but backend={backend!r}{default} computes "
                       "on the host with NumPy, which cannot read device memory",
                       hint="compile with @jitgraph.compile(backend='cuda') to keep the data on the GPU, or copy "
                            "the arrays to the host first (.copy_to_host())")
