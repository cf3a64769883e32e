"""Hot recompiles: a function whose guards fail on every call stops recompiling and runs eagerly, cheaply.

Why: some functions change, on every call, a value their own guards key on -- a method that appends to
``self.items`` (guarded by ``len(self.items)``), a function that bumps a counter it reads. Each call then misses
the entry the previous call compiled, and the function recompiles on every call until its recompile limit
(``cache_limit``, 8): eight traces and compiles, and before the limit every call also runs the guards of all the
entries that can no longer match. torch.compile marks such frames to be skipped; here the same: after
:data:`HOT_STREAK` recompiles in a row of one argument key, with no call matching any entry in between and the same
state-holding arguments (``self``, the non-array arguments, by identity), the next miss of that key publishes a
*catch-all* entry: keyed on the key alone (no guards, any aliasing), eager. The streak's entries, which no call
matched, are *retired* (``Entry.retired``: out of the dispatch table and the runners, kept for inspection), so a
call of that layout checks the layout once and runs the user's function; other layouts still compile.

Likewise a fallback entry is keyed only on what decided the fallback: an entry that runs eagerly because its graph
was measured slower than the function (tiering.py) takes every call of its key from then on (``take_every_call``:
no guards, any aliasing; its runner checks the layout alone), instead of a new graph entry to trace, compile and
measure again for each guard it would have failed. (Where the owner cannot rebuild its runner, a same-key miss
whose guards it passes gets its *twin* taking any aliasing, which replaces it.)

Exact by construction: an eager entry calls the user's function itself, so it needs no guards to be right --
guards only decide whether a graph could run instead. The cost of being wrong about "hot" is speed, never a wrong
answer.

Not for ``fullgraph=True`` (the user asked for graphs) nor device arrays (NumPy cannot run on them): those keep
recompiling up to the limit, as before.

The same-state condition keeps apart the usual benign streak -- one class, several objects with other attribute
shapes (the layers of a network) traced one after another on the first pass -- where each object gets its entry
and the second pass hits them all.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from jitgraph.jit.breaks import BreakReason
from jitgraph.jit.entries import Entry

HOT_STREAK = 3  # same-key recompiles in a row, no hit between, same holders: the next miss makes the catch-all


class AnyAlias:
    """The aliasing pattern of a catch-all entry: every pattern matches (``_find``, runner_checks.aliasing)."""

    def __repr__(self) -> str:
        return "ANY_ALIAS"


ANY_ALIAS = AnyAlias()


def holders(args: tuple, kwargs: dict[str, Any]) -> tuple[int, ...]:
    """The identities of the arguments that hold state (not arrays): the ``self`` whose list grows each call."""
    return tuple(id(v) for v in (*args, *kwargs.values()) if type(v) is not np.ndarray)


class Streak:
    """Per compiled function: how many same-key recompiles in a row no call matched (changed under the lock)."""

    def __init__(self) -> None:
        self.count = 0
        self.hits_at_publish = -1
        self.holders: tuple[tuple, tuple[int, ...]] | None = None

    def published(self, hits: int) -> None:
        """An entry was published; ``hits`` is the hit counter's value then."""
        self.hits_at_publish = hits

    def is_hot(self, same_key: bool, hits: int, now: tuple[tuple, tuple[int, ...]]) -> bool:
        """Record a miss that would recompile (``same_key``: entries with this key exist, their guards or aliasing
        failed; ``now``: the key and the :func:`holders`); True once the streak reaches :data:`HOT_STREAK`."""
        if same_key and hits == self.hits_at_publish and now == self.holders:
            self.count += 1
        else:
            self.count = 0
        self.holders = now
        return self.count >= HOT_STREAK


def eager_entry(same_key: tuple[Entry, ...], hot: bool, args: tuple, kwargs: dict[str, Any], reason: str
                ) -> Entry | None:
    """The eager entry a same-key miss gets instead of a trace, if any: the catch-all once the key is ``hot``;
    else, where an entry of this key runs eagerly because it was measured slower than the function (tiering.py)
    and its guards hold for this call (only the aliasing differs: ``x`` no longer is ``CACHE['last']``), its twin
    that takes any aliasing -- what decided that fallback was the graph's cost, not which arrays alias, and a new
    graph entry would be measured (and demoted) again."""
    if not same_key:
        return None
    if hot:
        entry = catch_all(same_key[-1], args, kwargs, reason)
        if entry is not None:  # the streak's entries, which no call matched, give way to it
            for dead in same_key[-HOT_STREAK:]:
                dead.retired = True
        return entry
    for entry in same_key:
        if entry.mode == "eager" and entry.measured is not None and not entry.device and (
                entry.check is None or entry.check(args, kwargs) is not None):
            twin = Entry(dataclasses.replace(entry.traced, args=args, kwargs=kwargs), break_reason=entry.break_reason)
            twin.alias = ANY_ALIAS
            entry.retired = True  # the twin takes every call it took
            return twin
    return None


def take_every_call(entry: Entry) -> None:
    """Make the eager ``entry`` -- measured slower than the function (tiering.py) -- take every call of its key: no
    guards, any aliasing. Its guards decided only whether its graph could run, and the measurement decided that it
    does not; kept, they cost a demoted call more than the graph saved (a training step over dicts of parameters:
    13 us of guards before a 49 us eager call). A later call of that key whose guards it would have failed runs the
    function too, where it would have traced and compiled a graph of its own, then been measured again."""
    entry.check = None
    entry.alias = ANY_ALIAS


def catch_all(last: Entry, args: tuple, kwargs: dict[str, Any], reason: str) -> Entry | None:
    """An eager entry for every call with ``last``'s key (None where eager cannot run: device arrays). Built from
    ``last``'s trace with this call's arguments (the same layout: the key is the same), no guards, any aliasing."""
    if last.device:
        return None
    traced = dataclasses.replace(last.traced, args=args, kwargs=kwargs, check=None, brk=None)
    entry = Entry(traced)
    entry.alias = ANY_ALIAS  # the dispatch's field only: the trace keeps its pattern, for explain
    entry.break_reason = BreakReason(f"its guards failed on every call ({reason}): calls with this argument layout "
                                     "that no earlier entry takes run eagerly", None, None)
    return entry
