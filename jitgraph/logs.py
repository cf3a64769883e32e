"""Logging topics, switched on the way ``TORCH_LOGS`` does: ``JITGRAPH_LOGS=graph,guards,recompiles``.

Everything logs through the standard :mod:`logging` module under the ``jitgraph`` logger, one child logger per
topic (``jitgraph.recompiles``, ...), so applications can also route it with ordinary logging configuration
(``logging.getLogger("jitgraph.recompiles").setLevel(logging.DEBUG)`` works without this module).

Turning a topic on sets that child logger to DEBUG; nothing else changes level, so other libraries' and
jitgraph's untopical debug output stay quiet. The output goes to a handler on ``jitgraph`` -- through rich when
stderr is a terminal, plain ``[jitgraph.topic] message`` lines otherwise -- unless the application has configured
the root logger itself, in which case its handlers already receive the records and a second handler would only
print everything twice.
"""

from __future__ import annotations

import logging
import sys

from jitgraph.config import env

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
    """The child logger of ``topic``; an unknown topic is a bug in the caller, so it raises."""
    if topic not in TOPICS:
        raise ValueError(f"unknown jitgraph log topic {topic!r}; known: {', '.join(TOPICS)}")
    return logging.getLogger(f"jitgraph.{topic}")


def _make_handler() -> logging.Handler:
    if sys.stderr.isatty():
        try:
            from rich.logging import RichHandler  # rich loads only when a topic is on, so `import jitgraph` stays fast

            return RichHandler(show_path=False, markup=False, rich_tracebacks=False)
        except ImportError:  # rich is a dependency, but logging must never be what breaks a program
            pass
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
    return handler


def parse(topics: str | list[str]) -> tuple[list[str], list[str]]:
    """``"graph, perf"`` or a list -> (known topics, unknown names); ``all`` means every topic."""
    names = [t.strip() for t in (topics.split(",") if isinstance(topics, str) else topics) if t.strip()]
    if "all" in names:
        names = list(TOPICS) + [n for n in names if n != "all" and n not in TOPICS]
    return [n for n in names if n in TOPICS], [n for n in names if n not in TOPICS]


def enable(topics: str | list[str]) -> list[str]:
    """Turn on the given topics (a comma-separated string or a list); ``all`` turns on every topic."""
    global _handler
    known, unknown = parse(topics)
    if unknown:
        ROOT.warning("JITGRAPH_LOGS: unknown topic(s) %s; known: %s", ", ".join(unknown), ", ".join(TOPICS))
    if known and _handler is None and not logging.getLogger().handlers:
        _handler = _make_handler()
        ROOT.addHandler(_handler)
    for name in known:
        topic_logger(name).setLevel(logging.DEBUG)
    return known


def disable(topics: str | list[str] | None = None) -> None:
    """Turn topics off again (all of them by default) and drop jitgraph's handler once none is on."""
    global _handler
    known = list(TOPICS) if topics is None else parse(topics)[0]
    for name in known:
        topic_logger(name).setLevel(logging.NOTSET)
    if _handler is not None and all(topic_logger(t).level == logging.NOTSET for t in TOPICS):
        ROOT.removeHandler(_handler)
        _handler = None


def enabled_topics() -> list[str]:
    """The topics whose logger lets DEBUG records through (turned on here or by the application's own config)."""
    return [t for t in TOPICS if topic_logger(t).isEnabledFor(logging.DEBUG)]


def configure_from_env() -> None:
    """Turn on the topics named in ``JITGRAPH_LOGS`` (called once, when jitgraph is imported)."""
    value = env("JITGRAPH_LOGS")
    if value:
        enable(value)
