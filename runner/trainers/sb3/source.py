"""What Stable-Baselines3's own source says about an algorithm, read with `ast` (no torch import):
the constructor's annotations (so `learning_rate: "fast"` is caught in milliseconds), the
policy registry (`policy_aliases`: MlpPolicy, CnnPolicy, ...) and each policy's keyword names.
"""

from __future__ import annotations

import ast
import importlib.util
from functools import cache
from pathlib import Path
from typing import Any

from runner.manifest.schedules import SCHEDULE_FIELDS


def module_source(module: str) -> ast.Module | None:
    """The parsed source of an installed module, without importing it or its parents."""
    top, *rest = module.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations or not rest:
        return None
    base = Path(list(spec.submodule_search_locations)[0], *rest)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return ast.parse(path.read_text(encoding="utf-8"))
    return None


def _class(tree: ast.Module | None, name: str) -> ast.ClassDef | None:
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    return None


def _init(cls: ast.ClassDef | None) -> ast.FunctionDef | None:
    for item in getattr(cls, "body", []):
        if isinstance(item, ast.FunctionDef) and item.name == "__init__":
            return item
    return None


@cache
def init_annotations(module: str, cls: str) -> dict[str, ast.expr]:
    """Constructor argument -> its annotation (arguments without one are left out)."""
    init = _init(_class(module_source(module), cls))
    if init is None:
        return {}
    args = init.args.args[1:] + init.args.kwonlyargs
    return {a.arg: a.annotation for a in args if a.annotation is not None}


def _imported_from(tree: ast.Module, name: str, module: str) -> str | None:
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any(
            (a.asname or a.name) == name for a in node.names
        ):
            if node.level:  # relative import
                base = module.rsplit(".", node.level)[0]
                return f"{base}.{node.module}" if node.module else base
            return node.module
    return None


@cache
def policy_aliases(module: str, cls: str) -> dict[str, tuple[str, str]] | None:
    """Policy name -> (module, class) from the algorithm's `policy_aliases`; None: not found."""
    tree = module_source(module)
    node = _class(tree, cls)
    if tree is None or node is None:
        return None
    for item in node.body:
        target: ast.expr | None = item.target if isinstance(item, ast.AnnAssign) else None
        if isinstance(item, ast.Assign) and len(item.targets) == 1:
            target = item.targets[0]
        value = getattr(item, "value", None)
        if (
            isinstance(target, ast.Name)
            and target.id == "policy_aliases"
            and isinstance(value, ast.Dict)
        ):
            out = {}
            for k, v in zip(value.keys, value.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(v, ast.Name):
                    out[str(k.value)] = (_imported_from(tree, v.id, module) or module, v.id)
            return out
    for base in node.bases:  # DDPG(TD3): the registry is inherited
        source = _imported_from(tree, base.id, module) if isinstance(base, ast.Name) else None
        if source and isinstance(base, ast.Name):
            return policy_aliases(source, base.id)
    return None


@cache
def policy_args(module: str, cls: str) -> tuple[str, ...] | None:
    """Keyword names a policy class takes (beyond the spaces and lr_schedule); follows one
    `MlpPolicy = SACPolicy` alias. None: not found (then only `--deep` checks them)."""
    tree = module_source(module)
    if tree is None:
        return None
    for node in tree.body:  # MlpPolicy = SACPolicy
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == cls for t in node.targets)
            and isinstance(node.value, ast.Name)
        ):
            cls = node.value.id
    found = _class(tree, cls)
    if found is None:
        source = _imported_from(tree, cls, module)
        return policy_args(source, cls) if source and source != module else None
    init = _init(found)
    if init is None or init.args.kwarg is not None:
        return None  # **kwargs passed on: the names are not all here
    skip = {"self", "observation_space", "action_space", "lr_schedule"}
    return tuple(a.arg for a in init.args.args + init.args.kwonlyargs if a.arg not in skip)


# ---------------------------------------------------------------- values against annotations


def _kinds(ann: ast.expr) -> set[str] | None:
    """The kinds a YAML value may take for this annotation; None: anything (unknown type)."""
    if isinstance(ann, ast.Constant) and ann.value is None:
        return {"none"}
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):  # a string annotation
        try:
            return _kinds(ast.parse(ann.value, mode="eval").body)
        except SyntaxError:
            return None
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        left, right = _kinds(ann.left), _kinds(ann.right)
        return None if left is None or right is None else left | right
    if isinstance(ann, ast.Subscript):
        head = ann.value.id if isinstance(ann.value, ast.Name) else getattr(ann.value, "attr", "")
        inner = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        if head in ("Union", "Optional"):
            parts = [_kinds(e) for e in inner]
            if any(p is None for p in parts):
                return None
            out = set().union(*[p for p in parts if p is not None])
            return out | ({"none"} if head == "Optional" else set())
        if head in ("dict", "Dict"):
            return {"dict"}
        if head in ("list", "List", "tuple", "Tuple"):
            return {"list"}
        return None
    name = ann.id if isinstance(ann, ast.Name) else None
    return {
        "int": {"int"},
        "float": {"int", "float"},
        "bool": {"bool"},
        "str": {"str"},
        "Schedule": {"schedule"},
    }.get(name or "")


def _kind_of(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, dict):
        return "schedule" if set(value) == set(SCHEDULE_FIELDS) else "dict"
    if isinstance(value, list):
        return "list"
    return "other"


_WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "str": "a string",
    "none": "null",
    "schedule": "a schedule (lin_<number> or {schedule: linear, start, end})",
    "dict": "a mapping",
    "list": "a list",
}


def value_problem(ann: ast.expr, value: Any) -> str | None:
    """Why `value` does not fit the annotation, or None (also when the type is not checkable)."""
    kinds = _kinds(ann)
    if kinds is None or _kind_of(value) in kinds:
        return None
    order = [k for k in _WORDS if k in kinds and not (k == "int" and "float" in kinds)]
    return f"expected {' or '.join(_WORDS[k] for k in order)}, got {value!r}"
