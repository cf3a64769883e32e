"""The package's layers point down only, and the tracer imports no backend.

Why a test: a layering rule that lives only in a document erodes one convenient import at a time (the driver had
moved into the tracer, and 89 function-level imports hid the circles that followed). This test reads every
``import`` in ``jitgraph/`` -- module level and inside functions -- and fails on an edge that points up or
sideways, naming the file and line, so the rule holds without anyone remembering it.

The layers, lowest first (a module may import its own layer and any lower one):

    0  errors, config, logs, progress,         facts and knobs every layer may use; running generated source
       generated_source
    1  ir, device_arrays                         the graph, its types and op table; device-array facts
    2  tracer | passes | backends                siblings: none imports another
    3  inspect                                   explain data and views; asks backends through their protocol
    4  jit                                       the driver: CompiledFunction and its stages
    5  api, explain, cli, __init__, __main__     the public surface
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "jitgraph"

RANKS: dict[str, int] = {
    "errors": 0, "config": 0, "logs": 0, "progress": 0, "generated_source": 0,
    "ir": 1, "device_arrays": 1,
    "tracer": 2, "passes": 2, "backends": 2, "autodiff": 2,
    "inspect": 3,
    "jit": 4,
    "api": 5, "explain": 5, "cli": 5, "__init__": 5, "__main__": 5, "dask": 5,
}
SIBLINGS = {"tracer", "passes", "backends", "autodiff"}


def _group(module: str) -> str:
    """The layer group of a dotted module name inside jitgraph (``jitgraph.tracer.keys`` -> ``tracer``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _type_checking_blocks(tree: ast.AST) -> set[int]:
    """ids of import nodes under ``if TYPE_CHECKING:`` (no run-time edge)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for n in ast.walk(node))
    return skip


def package_imports() -> list[tuple[str, str, int, bool]]:
    """(importing module, imported jitgraph module, line, at function level) for every import in the package."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        tree = ast.parse(path.read_text(), filename=str(path))
        skip = _type_checking_blocks(tree)
        top = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                target = _resolve(module, path.name == "__init__.py", node)
                # ``from jitgraph import x`` may name a submodule: count it as that submodule.
                targets = [f"{target}.{a.name}" if target == "jitgraph" else target for a in node.names]
            else:
                continue
            for target in targets:
                if target == "jitgraph" or target.startswith("jitgraph."):
                    out.append((module, target, node.lineno, id(node) not in top))
    return out


def _bad_edge(source: str, target: str) -> str | None:
    src, dst = _group(source), _group(target)
    if src not in RANKS or dst not in RANKS:
        return f"module group {src if src not in RANKS else dst!r} has no layer: add it to RANKS"
    if src == dst:
        return None
    if src in SIBLINGS and dst in SIBLINGS:
        return f"sideways edge {src} -> {dst}"
    if RANKS[dst] > RANKS[src]:
        return f"upward edge {src} (layer {RANKS[src]}) -> {dst} (layer {RANKS[dst]})"
    return None


def test_every_group_has_a_layer() -> None:
    groups = {_group(_module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert groups <= set(RANKS), f"unlayered: {sorted(groups - set(RANKS))}"


def test_imports_point_down_only() -> None:
    bad = []
    for source, target, line, _ in package_imports():
        why = _bad_edge(source, target)
        if why:
            bad.append(f"{source}:{line} imports {target}: {why}")
    assert not bad, "\n".join(bad)


def test_no_function_level_imports_of_jitgraph_modules() -> None:
    """Inside the package a function-level import exists only to dodge a circle or to defer a cost; circles are
    fixed by structure and deferred loads go through a table of module names (importlib), so none is left."""
    lazy = [f"{source}:{line} imports {target}" for source, target, line, nested in package_imports() if nested]
    assert not lazy, "\n".join(lazy)


@pytest.mark.parametrize("module, forbidden", [
    ("jitgraph.tracer", ("jitgraph.backends", "jitgraph.passes", "jitgraph.jit", "jitgraph.inspect")),
    ("jitgraph.ir", ("jitgraph.tracer", "jitgraph.backends", "jitgraph.passes", "jitgraph.jit")),
    ("jitgraph.passes", ("jitgraph.tracer", "jitgraph.backends", "jitgraph.jit")),
])
def test_importing_a_layer_loads_nothing_above_it(module: str, forbidden: tuple[str, ...]) -> None:
    code = (f"import sys, {module}\n"
            f"print('\\n'.join(sorted(m for m in sys.modules if m.startswith({forbidden!r}))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == [], f"import {module} loaded {loaded}"


def test_the_checker_catches_bad_edges() -> None:
    """The rule itself: these edges must be refused, these allowed (a checker that accepts everything is no test)."""
    assert _bad_edge("jitgraph.tracer.keys", "jitgraph.backends.cuda")
    assert _bad_edge("jitgraph.backends.cpu.program", "jitgraph.passes.fuse")
    assert _bad_edge("jitgraph.ir.graph", "jitgraph.tracer.trace")
    assert _bad_edge("jitgraph.inspect.collect", "jitgraph.explain")
    assert _bad_edge("jitgraph.inspect.collect", "jitgraph.jit.function")
    assert _bad_edge("jitgraph.tracer.keys", "jitgraph.device_arrays") is None
    assert _bad_edge("jitgraph.jit.function", "jitgraph.backends.base") is None
    assert _bad_edge("jitgraph.api", "jitgraph.jit.function") is None
