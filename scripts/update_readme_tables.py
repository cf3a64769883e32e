"""Regenerate README.md's options and environment tables from jitgraph/config.py.

    python scripts/update_readme_tables.py          # rewrite the tables in place
    python scripts/update_readme_tables.py --check  # exit 1 if README.md is out of date

The tables sit between marker comments (``<!-- options-table -->`` ... ``<!-- /options-table -->``); everything
outside the markers is left alone. tests/test_config.py checks the same equality, so a new option or variable in
config.py fails the tests until this script has run.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from jitgraph.config import env_table, options_table

README = Path(__file__).resolve().parent.parent / "README.md"
TABLES: dict[str, Callable[[], str]] = {"options-table": options_table, "env-table": env_table}


def section(text: str, marker: str) -> str:
    """The text between ``<!-- marker -->`` and ``<!-- /marker -->`` (stripped); ValueError when missing."""
    match = re.search(rf"<!-- {marker} -->\n(.*?)<!-- /{marker} -->", text, flags=re.DOTALL)
    if match is None:
        raise ValueError(f"README.md has no <!-- {marker} --> ... <!-- /{marker} --> section")
    return match.group(1).strip()


def updated(text: str) -> str:
    """``text`` with every marked table replaced by its generated form."""
    for marker, make in TABLES.items():
        section(text, marker)  # the markers must exist
        text = re.sub(rf"(<!-- {marker} -->\n).*?(<!-- /{marker} -->)",
                      lambda m, make=make: m.group(1) + make() + "\n" + m.group(2), text, flags=re.DOTALL)
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether README.md is up to date")
    args = parser.parse_args()
    text = README.read_text(encoding="utf-8")
    new = updated(text)
    if new == text:
        print("README.md tables are up to date")
        return 0
    if args.check:
        print("README.md tables differ from jitgraph/config.py; run python scripts/update_readme_tables.py")
        return 1
    README.write_text(new, encoding="utf-8")
    print("README.md tables rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
