"""Every option of ``jitgraph.compile`` and every environment variable jitgraph reads, defined once.

Why one module: an option read in a backend with ``options.get("mathh", ...)`` silently takes its default when the
user misspells it, and a knob read in seven places has seven spellings of its default. Here each option and each
variable has its name, default and a one-line doc; :func:`check_options` rejects an unknown option with a
did-you-mean, :func:`env` refuses a variable that is not declared, and the README's tables are generated from
:func:`options_table` and :func:`env_table` (a test keeps them equal).

This module sits at the bottom of the package with ``errors``: every layer may import it, it imports no layer.
"""

from __future__ import annotations

import difflib
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Option:
    """One keyword of ``jitgraph.compile``. ``valid`` checks a value (None: anything goes); ``values`` says in
    words what is accepted, for the error message and the README."""

    name: str
    default: Any
    doc: str
    values: str = ""
    valid: Callable[[Any], bool] | None = None


@dataclass(frozen=True)
class EnvVar:
    """One environment variable. ``scope`` is "runtime" (jitgraph's own, read by the package), "external" (another
    tool's variable that the package also reads, e.g. Numba's) or "tests" (read by the test suite and benchmarks
    only)."""

    name: str
    default: str
    doc: str
    scope: str = "runtime"


def _bool(value: Any) -> bool:
    return isinstance(value, bool)


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _passes(value: Any) -> bool:
    return value is None or isinstance(value, str) or (
        isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value))


OPTIONS: dict[str, Option] = {o.name: o for o in (
    Option("backend", None, "where the graph runs; None picks cpu (eager where Numba is missing)",
           '"cpu", "eager", "cuda" or None', lambda v: v is None or isinstance(v, str)),
    Option("fullgraph", False, "raise GraphBreakError instead of falling back to eager NumPy", "bool", _bool),
    Option("cache_limit", 8, "compiled guard sets per function before it runs eagerly for good", "int >= 1",
           _positive_int),
    Option("dynamic", None, "None: sizes and int arguments that change become dynamic; True: dynamic from the first "
           "call; False: always specialise (see jitgraph.mark_dynamic)", "None, True or False",
           lambda v: v is None or isinstance(v, bool)),
    Option("math", "fast", "fast: jitgraph's vectorised math (<= 4 ulp); libm: libm-exact transcendental results",
           '"fast" or "libm"', lambda v: v in ("fast", "libm")),
    Option("reuse_outputs", True, "reuse a result buffer the caller can no longer reach instead of allocating",
           "bool", _bool),
    Option("cache", True, "keep generated kernels in the disk cache (JITGRAPH_CACHE_DIR)", "bool", _bool),
    Option("parallel", "auto", "run independent loop iterations on several threads (prange); auto: on 4+ cores",
           '"auto", True or False', lambda v: v == "auto" or isinstance(v, bool)),
    Option("parallel_min_trips", 512, "fewest iterations of a loop worth running in parallel", "int >= 1",
           _positive_int),
    Option("reassociate", False, "allow float reassociation (partial sums; `a*b + a*c` -> `a*(b + c)`)", "bool", _bool),
    Option("passes", None, "pass names replacing the default pipeline (a sequence or 'a,b,c')",
           "None, a str or a sequence of str", _passes),
    Option("verify", False, "run the IR verifier after every pass (also JITGRAPH_VERIFY=1)", "bool", _bool),
    Option("boundscheck", False, "loop drivers: Numba checks every array index (slow; for debugging)", "bool",
           _bool),
    Option("max_trips", None, "grad/value_and_grad/vjp/jvp: the most iterations a `while` loop or a loop with "
           "run-time bounds may make (the rows its backward saves; more raise ValueError); None: such loops "
           "cannot be differentiated", "None or int >= 1", lambda v: v is None or _positive_int(v)),
    Option("tier_down", None, "measure each new graph entry against the plain function over its first calls and "
           "run it eagerly when the graph is not faster (jit/tiering.py); once every call runs eagerly, the "
           "function skips its checks on 127 calls of 128 (eager mode, jit/eager_mode.py); None: JITGRAPH_TIER_DOWN "
           "decides",
           "None, True or False", lambda v: v is None or isinstance(v, bool)),
    Option("name", "graph", "loop drivers: the generated function is `loops_<name>` (tests and benchmarks set it)",
           "an identifier", lambda v: isinstance(v, str) and v.isidentifier()),
)}

ENV: dict[str, EnvVar] = {e.name: e for e in (
    EnvVar("JITGRAPH_LOGS", "", "log topics to turn on: graph,guards,recompiles,breaks,kernels,perf (or all)"),
    EnvVar("JITGRAPH_DUMP", "", "print the IR before and after these passes (comma-separated, or all) to stderr"),
    EnvVar("JITGRAPH_VERIFY", "0", "1: run the IR verifier after every pass"),
    EnvVar("JITGRAPH_STRICT", "0", "1: internal tracer and backend errors raise instead of falling back to eager"),
    EnvVar("JITGRAPH_PROGRESS", "", "1/0: show or hide the 'compiling ...' spinner (default: when stderr is a tty)"),
    EnvVar("JITGRAPH_NUM_THREADS", "", "threads a CPU kernel launch may use (default: the CPUs this process may use)"),
    EnvVar("JITGRAPH_CACHE_DIR", "", "kernel disk cache directory (default: $XDG_CACHE_HOME/jitgraph)"),
    EnvVar("JITGRAPH_SMALL_KERNELS", "0", "1: every fused group of several ops launches its kernel however small its "
           "arrays (the test suite sets it: its kernel tests use tiny arrays); 0: groups the cost model finds too "
           "small for a launch to pay off run as NumPy calls inside the graph"),
    EnvVar("JITGRAPH_VECTOR_WIDTH", "auto", "SIMD width jitgraph's CPU kernels ask LLVM for (per kernel; the user's "
           "own @njit code is untouched): auto (512 on Sapphire/Emerald/Granite Rapids and Zen 4/5 with AVX-512, "
           "else LLVM's choice; LLVM's choice too when NUMBA_CPU_NAME/NUMBA_CPU_FEATURES are set), 256 or 512"),
    EnvVar("JITGRAPH_TIER_DOWN", "1", "0: graph entries always run compiled; 1: each is timed against the plain "
           "function over its first calls and runs eagerly where that is faster (the test suite sets 0; the "
           "compile option tier_down= wins)"),
    EnvVar("XDG_CACHE_HOME", "", "the kernel disk cache defaults to $XDG_CACHE_HOME/jitgraph (else ~/.cache)",
           "external"),
    EnvVar("NUMBA_CPU_NAME", "host", "Numba's target CPU; other than host, the math library assumes no FMA",
           "external"),
    EnvVar("NUMBA_CPU_FEATURES", "", "Numba's target CPU features; the math library uses FMA only if +fma is listed",
           "external"),
    EnvVar("JITGRAPH_CUDA_CUBLAS", "1", "0: backend='cuda' keeps matmul groups on its tiled kernel instead of "
           "cuBLAS (nvmath-python)"),
    EnvVar("JITGRAPH_CUDA_GRAPHS", "1", "0: backend='cuda' launches every kernel per call instead of replaying a "
           "recorded CUDA graph"),
    EnvVar("JITGRAPH_CUDA_POOL", "1", "0: backend='cuda' allocates intermediates per call instead of reusing pooled "
           "device buffers"),
    EnvVar("NUMBA_ENABLE_CUDASIM", "", "Numba's CUDA simulator; backend='cuda' says when it was set too late",
           "external"),
    EnvVar("JITGRAPH_CUDA_TESTS", "", "set to device: tests/cuda run on a real GPU instead of Numba's simulator",
           "tests"),
    EnvVar("JITGRAPH_UPDATE_SNAPSHOTS", "", "1: rewrite the explain-view snapshot files instead of comparing",
           "tests"),
    EnvVar("JITGRAPH_BENCH_JSON", "", "benchmarks write their figures as JSON to this path", "tests"),
    EnvVar("HYPOTHESIS_PROFILE", "ci", "the test suite's hypothesis profile: ci (derandomised, 40 examples) or dev",
           "tests"),
)}


def did_you_mean(name: str, known: Mapping[str, Any] | list[str]) -> str:
    """`` (did you mean 'math'?)`` for a near miss, else an empty string."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_options(options: Mapping[str, Any], where: str = "jitgraph.compile") -> dict[str, Any]:
    """``options`` as a plain dict, after checking every name and value.

    An unknown name raises ``TypeError`` (as Python does for an unexpected keyword) naming the valid ones; a value
    of the wrong kind raises ``ValueError`` saying what is accepted.
    """
    for name, value in options.items():
        option = OPTIONS.get(name)
        if option is None:
            raise TypeError(f"{where}() got an unexpected option {name!r}{did_you_mean(name, OPTIONS)}; valid "
                            f"options: {', '.join(OPTIONS)}")
        if option.valid is not None and not option.valid(value):
            raise ValueError(f"{where}(): option {name}={value!r} is not valid; expected {option.values}")
    return dict(options)


def option(options: Mapping[str, Any], name: str) -> Any:
    """The value of option ``name`` in ``options``, or its declared default (a name not declared is a bug)."""
    return options.get(name, OPTIONS[name].default)


def _declared(name: str) -> EnvVar:
    try:
        return ENV[name]
    except KeyError:
        raise KeyError(f"environment variable {name!r} is not declared in jitgraph.config.ENV"
                       f"{did_you_mean(name, ENV)}") from None


def env(name: str) -> str:
    """The value of environment variable ``name`` (its declared default when unset). Reading an undeclared name
    raises KeyError, so a misspelt read in jitgraph's own code fails its tests instead of reading nothing."""
    return os.environ.get(name, _declared(name).default)


def env_set(name: str) -> bool:
    """Whether ``name`` is set in the environment at all (some variables mean something only when set)."""
    _declared(name)
    return name in os.environ


def env_flag(name: str) -> bool:
    """A yes/no variable: set to anything but "", "0", "false", "no" or "off"."""
    return env(name).strip().lower() not in ("", "0", "false", "no", "off")


def warn_unknown_env(environ: Mapping[str, str] | None = None) -> list[str]:
    """Warn once per ``JITGRAPH_*`` variable that jitgraph does not know (a misspelling does nothing otherwise);
    returns the unknown names."""
    environ = os.environ if environ is None else environ
    unknown = sorted(k for k in environ if k.startswith("JITGRAPH_") and k not in ENV)
    for name in unknown:
        warnings.warn(f"unknown environment variable {name}{did_you_mean(name, ENV)}; jitgraph reads "
                      f"{', '.join(e for e in ENV if e.startswith('JITGRAPH_'))}", RuntimeWarning, stacklevel=3)
    return unknown


def options_table() -> str:
    """The README's table of compile options (Markdown)."""
    rows = ["| option | default | accepts | what it does |", "|---|---|---|---|"]
    rows += [f"| `{o.name}` | `{o.default!r}` | {o.values} | {o.doc} |" for o in OPTIONS.values()]
    return "\n".join(rows)


_READ_BY = {"runtime": "jitgraph", "external": "jitgraph (another tool's variable)", "tests": "tests, benchmarks"}


def env_table() -> str:
    """The README's table of environment variables (Markdown)."""
    rows = ["| variable | default | read by | what it does |", "|---|---|---|---|"]
    rows += [f"| `{e.name}` | {f'`{e.default}`' if e.default else '(unset)'} | {_READ_BY[e.scope]} | {e.doc} |"
             for e in ENV.values()]
    return "\n".join(rows)
