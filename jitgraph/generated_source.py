"""Running Python source jitgraph generates (call functions, result builders, drivers, launches, kernels).

Why one place: every generated function is a deliverable the user may read -- in a traceback, through
``inspect.getsource`` or ``explain`` -- so its source is registered in ``linecache`` under its own file name before
it runs. Six modules did those two steps by hand; this is the one spelling. Bottom layer (beside ``config``):
the tracer, the driver and the backends all use it.
"""

from __future__ import annotations

import linecache
from typing import Any


def run_source(source: str, filename: str, ns: dict[str, Any]) -> dict[str, Any]:
    """Execute ``source`` in ``ns`` (its definitions land there) after registering it in ``linecache`` as
    ``filename``; return ``ns``."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), ns)  # noqa: S102 - our own generated source
    return ns
