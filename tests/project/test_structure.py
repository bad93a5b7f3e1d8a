"""The package's shape: packages in layers that import only downward (lazy imports included), the
validate path imports no job or plot, and no import cycle exists."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

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


# The layers, lowest first: a module may import its own package and those below it, never one
# above (a lazy import or one under TYPE_CHECKING included). `errors` stands for the top of
# runner/ (`__init__`: the version; `errors`; `plugins`); `__main__` is `python -m runner`.
LAYERS = (
    "errors",
    "record",
    "manifest",
    "backends",
    "video",
    "trainers",
    "provenance",
    "track",
    "report",
    "checks",
    "executors",
    "images",
    "run",
    "tune",
    "archive",
    "export",
    "cli",
    "__main__",
)
TOP_MODULES = {"__init__.py", "__main__.py", "errors.py", "plugins.py"}  # a handful at most


def _layer(module: str) -> str:
    """runner.checks.load -> checks; runner, runner.errors, runner.__version__ -> errors."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else "errors"


def _all_imports(path: Path) -> list[tuple[int, str]]:
    """(line, runner module) for every import in the file, wherever it is written."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("runner"):
            if node.module == "runner":  # `from runner import x`: x's own layer
                found += [(node.lineno, f"runner.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("runner")]
    return found


def test_every_package_is_a_declared_layer():
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert packages <= set(LAYERS), f"undeclared packages: {sorted(packages - set(LAYERS))}"
    top = {p.name for p in PACKAGE.glob("*.py")}
    assert top <= TOP_MODULES, f"modules at the top of runner/: {sorted(top - TOP_MODULES)}"


def test_packages_import_only_downward():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = _layer(_module(path))
        for line, imported in _all_imports(path):
            if LAYERS.index(_layer(imported)) > LAYERS.index(own):
                where = path.relative_to(ROOT)
                upward.append(f"{where}:{line}: {own} imports {imported} ({_layer(imported)})")
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(upward)


def test_validate_path_imports_no_job_or_plot():
    code = (
        "import runner.manifest, runner.checks.load, runner.checks.sweep, sys; "
        "print([m for m in sys.modules if m.startswith(('runner.run', 'runner.report.plots', "
        "'matplotlib', 'torch', 'jax'))])"
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


def test_no_submodule_shadows_a_name_of_its_package():
    """Importing `pkg.x` sets attribute `x` on `pkg`: a function `x` in pkg/__init__.py (a trainer's
    `bench`, say) would be replaced by the submodule the first time anything imports it."""
    clashes = []
    for init in PACKAGE.rglob("__init__.py"):
        subs = {p.stem for p in init.parent.glob("*.py")} | {
            d.name for d in init.parent.iterdir() if (d / "__init__.py").is_file()
        }
        tree = ast.parse(init.read_text())
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)} | {
            t.id
            for n in tree.body
            if isinstance(n, ast.Assign)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        clashes += [f"{init.relative_to(ROOT)}: {name}" for name in sorted(defined & subs)]
    assert not clashes, clashes


# Each kind of plugin's home: the one package that may compare one of its names.
HOMES = {
    "backend": "runner/backends/",
    "trainer": "runner/trainers/",
    "executor": "runner/executors/",
}


def _named_in(node: ast.AST, names: set[str]) -> set[str]:
    """Registered names among the string constants of a compared operand (also in a tuple)."""
    elts = node.elts if isinstance(node, ast.Tuple | ast.List | ast.Set) else [node]
    return {e.value for e in elts if isinstance(e, ast.Constant) and e.value in names}


@pytest.mark.parametrize("kind", list(HOMES))
def test_no_module_outside_a_plugins_home_compares_its_name(kind):
    """`backend == "godot"`, `trainer in ("sb3", ...)` or `name == "slurm"` outside that kind's
    own package is knowledge in the wrong home: ask the plugin (its TRAITS or a hook) instead.
    ("local" is also an image's name, compared as `image`/`where`: not the executor.)"""
    from runner.plugins import OWN

    names, found = set(OWN[kind]), []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        if where.startswith(HOMES[kind]) or where == "runner/plugins.py":  # the registry's table
            continue
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Compare):
                for operand in [node.left, *node.comparators]:
                    for n in _named_in(operand, names):
                        segment = ast.get_source_segment(text, node) or ""
                        if n == "local" and "executor" not in segment:
                            continue
                        found.append(f"{where}:{node.lineno}: {n!r}")
    assert not found, f"{kind} names compared outside {HOMES[kind]}:\n" + "\n".join(found)


# Where a module of one plugin's package is imported from outside it, and why that belongs there.
# Everything else asks the plugin through its registry (a trainer makes its env with the backend's
# `make_env`; export asks the trainer's `ExportsPolicy`; resume reads steps through the trainer).
PLUGIN_IMPORTS_ALLOWED = {
    # the `task` defaults source serves the two trainers a task registers configs for
    ("runner/trainers/task_defaults.py", "runner.trainers.rsl_rl_ppo"),
    ("runner/trainers/task_defaults.py", "runner.trainers.sb3.algos"),
}


def test_no_module_reaches_into_another_plugins_package():
    """`brax_ppo` importing the Brax backend's internals (its observation size, its painter), or
    `trainers/resume.py` and `export/` importing SB3's trainer code, would tie a plugin to
    another's insides: a MuJoCo Playground backend could then not serve brax_ppo."""
    from runner.plugins import OWN

    homes = [f"runner.backends.{n}" for n in OWN["backend"]]
    homes += [f"runner.trainers.{n}" for n in OWN["trainer"]]
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where, module = path.relative_to(ROOT).as_posix(), _module(path)
        for line, imported in _all_imports(path):
            for home in homes:
                inside = imported == home or imported.startswith(home + ".")
                own = module == home or module.startswith(home + ".")
                allowed = any(
                    where == w and imported.startswith(m) for w, m in PLUGIN_IMPORTS_ALLOWED
                )
                if inside and not own and not allowed:
                    found.append(f"{where}:{line}: {imported}")
    assert not found, "a plugin's package imported from outside it:\n" + "\n".join(found)


# The run directory's records and the one module that writes each (atomically), through its
# model (runner/record/versioned.py: every one carries `format`)
RECORD_WRITERS = {
    "status.json": "runner/record/status.py",
    "progress.json": "runner/record/progress.py",
    "train.json": "runner/record/train.py",
    "step-N.json": "runner/record/checkpoint.py",  # beside checkpoints/step-N.zip
    "eval.json": "runner/record/eval.py",
    "evals.json": "runner/record/evals.py",
    "prune.json": "runner/record/evals.py",
    "video.json": "runner/record/video.py",
    "summary.json": "runner/record/summary.py",
    "provenance.json": "runner/record/provenance.py",
    "tune.json": "runner/record/tune.py",
    "bench.json": "runner/record/bench.py",
    "reproduce.json": "runner/record/reproduce.py",
    "track.json": "runner/record/track.py",
    "jobs.json": "runner/record/jobs.py",  # an executor's (slurm/jobs.json)
    "resolved.yaml": "runner/manifest/resolved.py",
}
# how each is named where it is written, when not by its file name or constant
RECORD_PATTERNS = {"step-N.json": r"step-[^\"']*\.json|with_suffix\(\"\.json\"\)"}
# Copies of a record's bytes, not a second writer of it
RECORD_COPIES = {"runner/executors/ray_task.py": "resolved.yaml, shipped to the unit's node"}
# Modules that write JSON files which are no run record, and why
OTHER_JSON_WRITERS = {
    "runner/run/bench/point.py": "a bench point's measurements, to the bench job (temporary)",
    "runner/run/bench/cold.py": "a bench point's cold start, to the bench job (temporary)",
    "runner/run/bench/measure.py": "a bench point's config, to its process (temporary)",
    "runner/run/check_determinism.py": "an attempt's config and result (temporary)",
    "runner/run/check_resume.py": "an attempt's config and result (temporary)",
    "runner/checks/construct.py": "the dry construction's answer, to the runner (temporary)",
    "runner/checks/installed.py": "the machine's cache of installed-package probes",
    "runner/provenance/installed.py": "the machine's cache of installed packages",
    "runner/backends/envpool/__init__.py": "the machine's cache of EnvPool's env ids",
    "runner/backends/isaaclab/__init__.py": "the machine's cache of Isaac Lab's tasks",
    "runner/provenance/determinism.py": "the machine's cache of check-determinism results",
    "runner/export/onnx.py": "export.json, beside the file `rlcrate export -o` names",
    "runner/track/upload.py": "the upload process's answer, to the runner (temporary)",
    "runner/trainers/kill.py": "where a kill for check-determinism --resume came (temporary)",
    "runner/trainers/sb3/state.py": "step-N.state.json: SB3's exact-resume state (own format)",
    "runner/backends/isaaclab/env.py": "isaaclab.json: what Isaac Lab picked for the unit",
    "runner/images/sif.py": "the machine's cache of .sif files' digests",
    "runner/backends/playground/catalog.py": "the machine's cache of Playground's env catalog",
}


def _writes(path: Path) -> list[tuple[int, str, str]]:
    """(line, called name, whole call's source) of every call that writes a file."""
    text = path.read_text()
    out = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "open" or name.startswith("write_"):
                out.append((node.lineno, name, ast.get_source_segment(text, node) or ""))
    return out


def test_run_records_are_written_by_their_record_module_alone():
    """A run record's name (or its constant) in a write outside its module is a second writer
    of it; JSON written anywhere else than `record/` is a file that is no run record (listed
    with why), so a record cannot be written bypassing its model."""
    import re

    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        for line, name, call in _writes(path):
            for record, home in RECORD_WRITERS.items():
                constant = record.upper().replace(".JSON", "_FILE").replace(".YAML", "")
                named = RECORD_PATTERNS.get(record, rf"{re.escape(record)}|\b{constant}\b")
                if where not in (home, *RECORD_COPIES) and re.search(named, call):
                    found.append(f"{where}:{line}: {record}: {call.splitlines()[0]}")
            json_writer = name in ("write_json_atomic", "dump") or "json.dumps" in call
            known = where.startswith("runner/record/") or where in OTHER_JSON_WRITERS
            if json_writer and name.startswith("write_") and not known:
                found.append(f"{where}:{line}: writes JSON: {call.splitlines()[0]}")
    assert not found, "run records written outside their module:\n" + "\n".join(found)
