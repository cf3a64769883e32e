"""``python -m jitgraph``: explain a function in a file, manage the kernel disk cache, list log topics.

    python -m jitgraph explain path/to/train.py:train_step --example make_args [--backend cpu] [--html out.html]
    python -m jitgraph cache info
    python -m jitgraph cache clear
    python -m jitgraph logs

``explain`` imports the file as a module (its directory first on ``sys.path``, so its sibling imports work),
builds the arguments with the factory named by ``--example`` (a function in the same file, called with no
arguments, returning a tuple of positional arguments, a dict of keyword arguments, or ``(args, kwargs)``), calls
the function once under ``jitgraph.explain`` and prints the view. Without ``--example`` it looks for
``example_<function>`` and then ``example`` in the file, and otherwise calls the function with no arguments.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from jitgraph.backends.cpu.cache import cache_dir
from jitgraph.backends.cpu.cache_safety import CacheRefused
from jitgraph.backends.cpu.cache_safety import clear as clear_cache
from jitgraph.explain import explain
from jitgraph.inspect.render import render
from jitgraph.logs import TOPICS


class CliError(Exception):
    """A usage problem: printed as one line, exit status 2."""


def load_target(spec: str) -> tuple[Any, Any, str]:
    """``path/to/file.py:qualname`` -> (module, the object, qualname)."""
    path_text, sep, qualname = spec.rpartition(":")
    if not sep or not path_text or not qualname:
        raise CliError(f"expected path/to/file.py:function, got {spec!r}")
    path = Path(path_text)
    if not path.is_file():
        raise CliError(f"no such file: {path}")
    directory = str(path.resolve().parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    name = path.stem if path.stem.isidentifier() else "jitgraph_cli_target"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise CliError(f"cannot import {path}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    module_spec.loader.exec_module(module)
    obj: Any = module
    for part in qualname.split("."):
        if not hasattr(obj, part):
            raise CliError(f"{path} has no {qualname!r} (no attribute {part!r})")
        obj = getattr(obj, part)
    if not callable(obj):
        raise CliError(f"{qualname} in {path} is not callable")
    return module, obj, qualname


def example_arguments(module: Any, qualname: str, factory: str | None) -> tuple[tuple, dict[str, Any]]:
    """Call the factory and normalise what it returns to (args, kwargs)."""
    if factory is None:
        short = qualname.split(".")[-1]
        factory = next((n for n in (f"example_{short}", "example") if callable(getattr(module, n, None))), None)
        if factory is None:
            _check_no_arguments_needed(module, qualname)
            return (), {}
    fn = getattr(module, factory, None)
    if not callable(fn):
        raise CliError(f"--example {factory!r}: no such function in {getattr(module, '__file__', module)}")
    value = fn()
    if isinstance(value, dict):
        return (), value
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], tuple | list) and \
            isinstance(value[1], dict):
        return tuple(value[0]), dict(value[1])
    if isinstance(value, tuple | list):
        return tuple(value), {}
    return (value,), {}


def _check_no_arguments_needed(module: Any, qualname: str) -> None:
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return
    needed = [p.name for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                                          p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if needed:
        short = qualname.split(".")[-1]
        raise CliError(f"{qualname} needs arguments ({', '.join(needed)}): add a function example_{short}() to "
                       f"{getattr(module, '__file__', 'the file')} returning them (a tuple, a dict of keyword "
                       f"arguments, or (args, kwargs)), or name one with --example")


def cmd_explain(ns: argparse.Namespace) -> int:
    module, fn, qualname = load_target(ns.target)
    args, kwargs = example_arguments(module, qualname, ns.example)
    options: dict[str, Any] = {}
    if ns.backend:
        options["backend"] = ns.backend
    result = explain(fn, **options)(*args, **kwargs)
    if ns.plain:
        print(result)
    else:
        Console(width=ns.width).print(render(result, show_kernels=not ns.no_kernels))
    if ns.html:
        result.save_html(ns.html)
        print(f"wrote {ns.html}")
    return 0


def _cache_files(root: Path) -> list[Path]:
    kernels = root / "kernels"
    return [p for p in kernels.rglob("*") if p.is_file()] if kernels.is_dir() else []


def cmd_cache(ns: argparse.Namespace) -> int:

    root = cache_dir()
    files = _cache_files(root)
    size = sum(p.stat().st_size for p in files)
    modules = [p for p in files if p.suffix == ".py" and p.parent.name == "kernels"]
    if ns.action == "info":
        print(f"cache directory: {root}" + ("" if root.exists() else " (does not exist yet)"))
        print(f"kernel modules:  {len(modules)}")
        print(f"files:           {len(files)} ({size / 1e6:.2f} MB, Numba's compiled code included)")
        print("set JITGRAPH_CACHE_DIR to move it; `python -m jitgraph cache clear` empties it")
        return 0
    try:  # refuses (a clear message, nothing deleted) a kernels/ that is a symlink or someone else's
        n_modules, n_files, n_bytes = clear_cache(root)
    except CacheRefused as exc:
        raise CliError(str(exc)) from None
    print(f"removed {n_modules} kernel modules ({n_files} files, {n_bytes / 1e6:.2f} MB) from {root / 'kernels'}")
    return 0


def cmd_logs(ns: argparse.Namespace) -> int:
    print("JITGRAPH_LOGS=topic,topic,... (or all) turns on logging topics:")
    for name, what in TOPICS.items():
        print(f"  {name:<11} {what}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m jitgraph", description="jitgraph command line tools")
    sub = p.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("explain", help="trace a function once and show graphs, breaks, guards, kernels, timings")
    ex.add_argument("target", help="path/to/file.py:function (or file.py:Class.method)")
    ex.add_argument("--example", help="factory in the same file returning the call's arguments")
    ex.add_argument("--backend", help="jitgraph backend (default: cpu)")
    ex.add_argument("--html", help="also write the view to this HTML file")
    ex.add_argument("--plain", action="store_true", help="print the plain-text explain output instead")
    ex.add_argument("--no-kernels", action="store_true", help="leave the generated kernel source out")
    ex.add_argument("--width", type=int, default=None, help="console width (default: the terminal's)")
    ex.set_defaults(run=cmd_explain)
    cache = sub.add_parser("cache", help="the on-disk kernel cache ($JITGRAPH_CACHE_DIR)")
    cache.add_argument("action", nargs="?", choices=("info", "clear"), default="info")
    cache.set_defaults(run=cmd_cache)
    logs = sub.add_parser("logs", help="list the JITGRAPH_LOGS topics")
    logs.set_defaults(run=cmd_logs)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    ns = parser().parse_args(argv)
    try:
        return int(ns.run(ns))
    except CliError as exc:
        print(f"python -m jitgraph: error: {exc}", file=sys.stderr)
        return 2
