"""The tests' own layout: every test module lives in a folder below tests/ (none at its top), under
a name no other test module has (pytest imports each by its file name), and starts with a
docstring saying what it checks; every tests/ path the repository names exists."""

from __future__ import annotations

import ast
import re
import subprocess
from collections import Counter

from tests.helpers import ROOT, TESTS

MODULES = sorted(TESTS.rglob("test_*.py"))
# A path under tests/ as docs, comments, the Makefile and the scripts name one.
NAMED = re.compile(r"tests/[A-Za-z0-9_/.-]+\.py")


def test_every_test_module_is_in_a_folder_under_a_name_of_its_own():
    assert MODULES
    top = [p.name for p in MODULES if p.parent == TESTS]
    assert not top, f"test modules at the top of tests/, not in a package's folder: {top}"
    twice = [name for name, n in Counter(p.name for p in MODULES).items() if n > 1]
    assert not twice, f"test module names used in more than one folder: {twice}"


def test_every_test_module_says_what_it_checks():
    silent = [
        str(p.relative_to(ROOT))
        for p in MODULES
        if len((ast.get_docstring(ast.parse(p.read_text())) or "").split()) < 5
    ]
    assert not silent, f"test modules without a docstring saying what they check: {silent}"


def test_every_tests_path_the_repository_names_exists():
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    missing = set()
    for name in filter(None, files):
        path = ROOT / name
        if path.suffix in {".json", ".lock", ".whl"} or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        missing |= {f"{name}: {p}" for p in NAMED.findall(text) if not (ROOT / p).exists()}
    assert not missing, f"tests/ paths named that do not exist: {sorted(missing)}"
