"""Logging topics, switched on the way ``TORCH_LOGS`` does: ``JITGRAPH_LOGS=graph,guards,recompiles``.

Everything logs through the standard :mod:`logging` module under the ``jitgraph`` logger, one child logger per
topic (``jitgraph.recompiles``, ...), so applications can also route it with ordinary logging configuration. When
stderr is a terminal the output goes through rich; in CI and log files it stays plain text.
"""

from __future__ import annotations

import logging
import os
import sys

TOPICS: dict[str, str] = {
    "graph": "the captured IR of each graph",
    "guards": "the guards of each cache entry, in readable form",
    "recompiles": "which guard missed and how its value changed",
    "breaks": "graph breaks and eager fallbacks, with the user's file:line",
    "kernels": "the generated kernel source",
    "perf": "compile-time phases and pass timings",
    "passes": "IR before/after passes named in JITGRAPH_DUMP",
}

ROOT = logging.getLogger("jitgraph")
_handler: logging.Handler | None = None


def topic_logger(topic: str) -> logging.Logger:
    if topic not in TOPICS:
        raise ValueError(f"unknown jitgraph log topic {topic!r}; known: {', '.join(TOPICS)}")
    return logging.getLogger(f"jitgraph.{topic}")


def _make_handler() -> logging.Handler:
    if sys.stderr.isatty():
        try:
            from rich.logging import RichHandler

            return RichHandler(show_path=False, markup=False)
        except ImportError:  # rich is a dependency, but logging must never be what breaks a program
            pass
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
    return handler


def enable(topics: str | list[str]) -> list[str]:
    """Turn on the given topics (a comma-separated string or a list); ``all`` turns on every topic."""
    global _handler
    names = [t.strip() for t in (topics.split(",") if isinstance(topics, str) else topics) if t.strip()]
    if "all" in names:
        names = list(TOPICS)
    unknown = [n for n in names if n not in TOPICS]
    if unknown:
        logging.getLogger("jitgraph").warning("JITGRAPH_LOGS: unknown topic(s) %s; known: %s",
                                              ", ".join(unknown), ", ".join(TOPICS))
    if _handler is None:
        _handler = _make_handler()
        ROOT.addHandler(_handler)
    for name in names:
        if name in TOPICS:
            topic_logger(name).setLevel(logging.DEBUG)
    if ROOT.level == logging.NOTSET or ROOT.level > logging.DEBUG:
        ROOT.setLevel(logging.DEBUG)
    return [n for n in names if n in TOPICS]


def configure_from_env() -> None:
    value = os.environ.get("JITGRAPH_LOGS", "")
    if value:
        enable(value)
