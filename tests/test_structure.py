"""The package's shape: the manifest layer imports no job or plot, and no import cycle exists."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

PACKAGE = ROOT / "runner"


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str], lazy: bool) -> set[str]:
    """runner modules this module imports: at module level, and with `lazy` in functions too."""
    found = set()
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree) if lazy else tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("runner"):
            subs = {f"{node.module}.{a.name}" for a in node.names} & modules
            found |= subs or {node.module}  # `from pkg import submodule` needs the submodule
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("runner")}
    return found


def test_manifest_imports_no_job_or_plot():
    code = (
        "import runner.manifest, runner.manifest.checks, runner.manifest.sweep, sys; "
        "print([m for m in sys.modules if m.startswith(('runner.jobs', 'runner.plots'))])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _assert_acyclic(modules: dict[str, Path], lazy: bool) -> None:
    names = set(modules)
    graph = {m: _imports(p, names, lazy) & names - {m} for m, p in modules.items()}
    state: dict[str, int] = {}

    def visit(m: str, stack: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*stack, m, n]))
            if n not in state:
                visit(n, [*stack, m])
        state[m] = 2

    for m in sorted(modules):
        if m not in state:
            visit(m, [])


def test_no_import_cycle():
    _assert_acyclic({_module(p): p for p in PACKAGE.rglob("*.py")}, lazy=False)


def test_manifest_modules_import_each_other_in_one_direction():
    """Lazy imports included: parse -> validate -> check -> sweep, never back."""
    _assert_acyclic({_module(p): p for p in (PACKAGE / "manifest").rglob("*.py")}, lazy=True)
