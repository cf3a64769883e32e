"""Backends turn a Graph into something callable. ``eager`` is the reference; ``cpu`` and ``cuda`` compile."""
