"""Where the user called a compiled function, for recompile messages (``train.py:14``)."""

from __future__ import annotations

import os
import sys

PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def call_site() -> str:
    """``file:line`` of the innermost frame outside jitgraph: where the user called the compiled function."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(PACKAGE + os.sep):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    filename = frame.f_code.co_filename
    try:
        rel = os.path.relpath(filename)
        filename = rel if not rel.startswith("..") else filename
    except ValueError:  # another drive on Windows
        pass
    return f"{filename}:{frame.f_lineno}"
