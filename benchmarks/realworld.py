"""The real-world corpora: issue 18's stateful from-scratch ML code (tests/realworld/corpus.py) and issue 19's
from-scratch ML and scientific NumPy (tests/realworld/corpus_numeric.py), then issue 21's fresh corpus
(tests/realworld/corpus_fresh.py, tutorial-style functions at a small and a medium size, untuned): how each function
compiles and what it costs, eager NumPy vs jitgraph.

Run ``python benchmarks/realworld.py`` (``--backend eager`` for the graph interpreter, ``--repeat N``). For every
function: the graphs it compiled to, the eager calls it was split around, the calls that ran the whole function
eagerly, whether every call matched eager NumPy (results, arguments, objects' ``__dict__``, globals, identity;
three calls on deep copies), and the median warm call time of each (after the tier-down's probe and eager mode's
first look: steady state). Each corpus ends with the summary reported in the README: how many functions are one
graph, split, eager, wrong (``--no-timing`` skips the timings), how many one-graph functions run below 0.95x eager
with the median, geomean and worst ratios, and the functions that are not one graph, each with its first reason.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "realworld"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import corpus
import corpus_fresh
import corpus_numeric
import harness
import numpy as np

import jitgraph
from benchmarks.timing import geomean


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("-k", default="", help="only functions whose name contains this")
    parser.add_argument("--no-timing", action="store_true", help="only compile and compare, no timings")
    opts = parser.parse_args()
    logging.getLogger("jitgraph").setLevel(logging.ERROR)
    header = f"{'function':36s} {'result':10s} {'graphs':>6s} {'splits':>6s} {'eager':>5s} {'eager us':>9s} " \
             f"{'jit us':>9s} {'speedup':>7s}"
    print(header)
    print("-" * len(header))
    for title, cases in (("issues 18-19", corpus.CASES + corpus_numeric.CASES), ("fresh, issue 21", corpus_fresh.CASES)):
        _run(title, [c for c in cases if opts.k in c.name], opts)


def _run(title: str, cases: list[corpus.Case], opts: argparse.Namespace) -> None:
    """One corpus: a row per function, then the summary and the functions that are not one graph."""
    if not cases:
        return
    counts = {"one graph": 0, "split": 0, "eager": 0, "wrong": 0}
    others: list[str] = []
    ratios: list[tuple[float, str]] = []  # eager / compiled time of the one-graph functions
    for case in cases:
        out = harness.run_case(case, backend=opts.backend)
        counts[out.category] += 1
        t_eager, t_jit = (1.0, 1.0) if opts.no_timing else harness.time_case(case, opts.backend, opts.repeat)
        if out.category == "one graph" and not opts.no_timing:
            ratios.append((t_eager / t_jit, case.name))
        print(f"{case.name:36s} {out.category:10s} {out.graphs:6d} {out.splits:6d} {out.eager_calls:5d} "
              f"{t_eager * 1e6:9.1f} {t_jit * 1e6:9.1f} {t_eager / t_jit:6.2f}x")
        for line in out.wrong[:3]:
            print(f"    WRONG: {line}")
        if out.eager_calls and out.breaks:
            print(f"    eager because: {out.breaks[0]}")
        if out.category != "one graph":
            why = out.breaks[0] if out.breaks else (_split_reason(case, opts.backend) or out.wrong[:1])
            others.append(f"  {case.name} ({out.category}): {why}")
    total = sum(counts.values())
    print(f"summary ({title}, {opts.backend}): {total} functions: {counts['one graph']} one graph, "
          f"{counts['split']} split, {counts['eager']} eager, {counts['wrong']} wrong "
          f"({100 * counts['one graph'] / max(total, 1):.0f}% one graph)")
    if ratios:
        ratios.sort()
        values = [r for r, _ in ratios]
        worst = ", ".join(f"{n} {r:.2f}x" for r, n in ratios[:3])
        print(f"timing ({title}, one-graph functions): {sum(r < 0.95 for r in values)} of {len(values)} below 0.95x "
              f"eager, median {float(np.median(values)):.2f}x, geomean {geomean(values):.2f}x, "
              f"worst {worst}")
    if others:
        print("not one graph:")
        print("\n".join(others))
    print()


def _split_reason(case: corpus.Case, backend: str) -> str | None:
    """The first reason a split function was cut (the harness counts cuts, not reasons)."""
    compiled = jitgraph.compile(case.fn, backend=backend)
    harness._quiet(compiled, case.make())
    for entry in compiled.entries:
        reasons = getattr(entry.traced, "split_reasons", None) if entry.mode == "graph" else None
        if reasons:
            return str(reasons[0])
    return None


if __name__ == "__main__":
    main()
