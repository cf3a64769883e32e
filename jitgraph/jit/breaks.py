"""Why a call runs eagerly (:class:`BreakReason`), and the :class:`~jitgraph.errors.GraphBreakError` that says so
where eager is not allowed (``fullgraph=True``, ``Traced.lower()``, device arrays)."""

from __future__ import annotations

import linecache
from dataclasses import dataclass

from jitgraph.errors import GraphBreakError


@dataclass
class BreakReason:
    """Why a call runs eagerly, and where in the user's code."""

    reason: str
    filename: str | None
    lineno: int | None

    def __str__(self) -> str:
        where = f"{self.filename}:{self.lineno}" if self.filename else "<unknown>"
        return f"{where}: {self.reason}"

    @property
    def source_line(self) -> str:
        """The user's line of code, for messages (empty when the file cannot be read)."""
        if not self.filename or not self.lineno:
            return ""
        return linecache.getline(self.filename, self.lineno).strip()

    def error(self, message: str, hint: str) -> GraphBreakError:
        """A GraphBreakError saying ``message``, the user's line below it, located at the break."""
        line = self.source_line
        return GraphBreakError(message + (f"\n    {line}" if line else ""), filename=self.filename,
                               lineno=self.lineno, hint=hint)
