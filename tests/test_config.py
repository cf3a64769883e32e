"""jitgraph.config: options are checked by name and value, environment variables are declared once, and the
README's tables are the ones config.py generates.

The name scan below is what keeps the declaration complete: a ``JITGRAPH_*`` name written anywhere in the package,
the tests, the benchmarks, the scripts, CI or the README must be in ``config.ENV``.
"""

from __future__ import annotations

import importlib.util
import re
import warnings
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

import jitgraph
from jitgraph import config

ROOT = Path(__file__).resolve().parent.parent


def _load_script(name: str) -> ModuleType:
    """A module of scripts/ (not a package: loaded from its file)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


update_readme_tables = _load_script("update_readme_tables")


def add(x):
    return x + 1.0


@pytest.mark.parametrize(("name", "suggestion"), [("resue_outputs", "reuse_outputs"), ("mathh", "math"),
                                                  ("fulgraph", "fullgraph"), ("cache_limt", "cache_limit")])
def test_unknown_option_to_compile_raises_typeerror_with_did_you_mean(name, suggestion):
    with pytest.raises(TypeError, match=rf"{name}.*did you mean '{suggestion}'") as info:
        jitgraph.compile(add, **{name: 1})(np.ones(3))
    assert "valid options: backend, fullgraph" in str(info.value)


def test_unknown_option_as_decorator_factory_raises_too():
    with pytest.raises(TypeError, match="did you mean 'reuse_outputs'"):
        @jitgraph.compile(resue_outputs=False)
        def f(x):
            return x * 2.0

        f(np.ones(2))


@pytest.mark.parametrize(("name", "value"), [("math", "libmm"), ("reuse_outputs", "no"), ("cache_limit", 0),
                                             ("parallel", "sometimes"), ("passes", 3)])
def test_bad_option_value_raises_valueerror(name, value):
    with pytest.raises(ValueError, match=rf"{name}={value!r} is not valid; expected"):
        jitgraph.compile(add, **{name: value})(np.ones(3))


def test_check_options_directly():
    assert config.check_options({"math": "libm", "reuse_outputs": False}) == {"math": "libm",
                                                                             "reuse_outputs": False}
    with pytest.raises(TypeError, match="'mathh'.*did you mean 'math'"):
        config.check_options({"mathh": "libm"})
    with pytest.raises(TypeError, match="unexpected option 'zzz'; valid options"):  # no near miss: no suggestion
        config.check_options({"zzz": 1})
    with pytest.raises(ValueError, match="expected \"fast\" or \"libm\""):
        config.check_options({"math": "exact"})
    with pytest.raises(ValueError, match="parallel_min_trips=True"):  # a bool is not an int here
        config.check_options({"parallel_min_trips": True})


def test_every_default_passes_its_own_check():
    config.check_options({name: opt.default for name, opt in config.OPTIONS.items()})


def test_option_reads_the_declared_default():
    assert config.option({}, "math") == "fast" and config.option({"math": "libm"}, "math") == "libm"
    assert config.option({}, "parallel_min_trips") == 512 and config.option({}, "cache_limit") == 8
    with pytest.raises(KeyError):
        config.option({}, "mathh")


def test_env_of_an_undeclared_name_raises_keyerror(monkeypatch):
    monkeypatch.setenv("JITGRAPH_LOG", "graph")
    with pytest.raises(KeyError, match="did you mean 'JITGRAPH_LOGS'"):
        config.env("JITGRAPH_LOG")
    with pytest.raises(KeyError):
        config.env_flag("JITGRAPH_NOPE")
    with pytest.raises(KeyError):
        config.env_set("JITGRAPH_NOPE")


def test_env_and_env_flag_read_the_environment(monkeypatch):
    monkeypatch.delenv("JITGRAPH_DUMP", raising=False)
    assert config.env("JITGRAPH_DUMP") == "" and not config.env_set("JITGRAPH_DUMP")
    monkeypatch.setenv("JITGRAPH_DUMP", "simplify")
    assert config.env("JITGRAPH_DUMP") == "simplify" and config.env_set("JITGRAPH_DUMP")
    for value, flag in (("1", True), ("yes", True), ("0", False), ("", False), ("off", False), ("False", False)):
        monkeypatch.setenv("JITGRAPH_STRICT", value)
        assert config.env_flag("JITGRAPH_STRICT") is flag, value


def test_warn_unknown_env_suggests_the_declared_name():
    with pytest.warns(RuntimeWarning, match="JITGRAPH_LOG .*did you mean 'JITGRAPH_LOGS'"):
        unknown = config.warn_unknown_env({"JITGRAPH_LOG": "graph", "JITGRAPH_LOGS": "perf", "HOME": "/"})
    assert unknown == ["JITGRAPH_LOG"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert config.warn_unknown_env({name: "" for name in config.ENV}) == []


def _mentioned_env_names() -> dict[str, str]:
    """Every JITGRAPH_* name written in the repository's code, tests, scripts, CI and README -> one file using it.

    A test of the misspelling warning writes a misspelt name on purpose: names in a test file that also expects a
    "did you mean" are left out (the declared names such a file uses are still checked elsewhere)."""
    found: dict[str, str] = {}
    paths = [ROOT / "README.md"]
    for folder in ("jitgraph", "tests", "benchmarks", "scripts", ".ci", "examples"):
        paths += [p for p in (ROOT / folder).rglob("*") if p.is_file() and p.suffix in ("", ".py", ".md", ".sh",
                                                                                          ".toml", ".cfg", ".txt")]
    for path in paths:
        if "__pycache__" in path.parts or path == Path(__file__).resolve():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.is_relative_to(ROOT / "tests") and "did you mean" in text:
            continue
        for name in re.findall(r"\bJITGRAPH_[A-Z_]*[A-Z]\b", text):
            found.setdefault(name, str(path.relative_to(ROOT)))
    return found


def test_every_jitgraph_variable_in_the_repository_is_declared():
    mentioned = _mentioned_env_names()
    assert "JITGRAPH_LOGS" in mentioned and "JITGRAPH_CACHE_DIR" in mentioned  # the scan sees the code
    missing = {name: where for name, where in mentioned.items() if name not in config.ENV}
    assert not missing, f"declare these in jitgraph/config.py ENV: {missing}"


def test_every_declared_option_and_variable_has_a_one_line_doc():
    for item in [*config.OPTIONS.values(), *config.ENV.values()]:
        assert item.doc and "\n" not in item.doc and "|" not in item.doc, item.name
    assert {e.scope for e in config.ENV.values()} <= {"runtime", "external", "tests"}


def test_readme_tables_are_generated_from_config():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert update_readme_tables.section(readme, "options-table") == config.options_table(), \
        "run python scripts/update_readme_tables.py"
    assert update_readme_tables.section(readme, "env-table") == config.env_table(), \
        "run python scripts/update_readme_tables.py"
    assert update_readme_tables.updated(readme) == readme


def test_every_option_and_variable_the_package_reads_is_declared():
    """A read on a path no test runs would raise KeyError only in a user's program: scan the source instead."""
    reads: dict[str, set[str]] = {"option": set(), "env": set()}
    for path in (ROOT / "jitgraph").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        reads["option"] |= set(re.findall(r"\boption\([^,()]+, \"(\w+)\"\)", text))
        reads["env"] |= set(re.findall(r"\benv(?:_flag|_set)?\(\"(\w+)\"\)", text))
    assert {"math", "reuse_outputs"} <= reads["option"] and "JITGRAPH_LOGS" in reads["env"]  # the scan works
    assert reads["option"] <= set(config.OPTIONS), reads["option"] - set(config.OPTIONS)
    assert reads["env"] <= set(config.ENV), reads["env"] - set(config.ENV)
