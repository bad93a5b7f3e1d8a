"""`env.kwargs` on backend playground: overrides of the environment's own configuration (what
Playground's `registry.load(id, config_overrides=...)` takes), nested as the configuration is
(`reward_config: {scales: {upright: 2.0}}`) or dotted (`reward_config.scales.upright: 2.0`).

Each is checked against the env's default configuration (`catalog.registry`) before any unit
starts, at its own line: a key the configuration lacks (with the closest one it has), a group of
settings given one value, or a value of another type than the default's, by the rules
ml_collections applies when Playground sets it (an int where a float is, a list where a tuple
is; nothing else converts; a boolean is not a number here). A type these rules do not know is
left to Playground itself, in the dry construction.
"""

from __future__ import annotations

import difflib
from typing import Any

from runner.errors import FieldProblem

# Keys rlcrate sets from an option of its own: the override is refused, naming the option
OWNED = {"impl": "env.impl"}
KINDS = {
    "bool": "a boolean",
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "tuple": "a list",
    "list": "a list",
    "dict": "a mapping",
}


def flatten(kwargs: dict[str, Any]) -> list[tuple[str, tuple[str, ...], Any]]:
    """(dotted key, key path under env.kwargs, value) for every value given, nested mappings
    followed down (an empty mapping is a value)."""
    out: list[tuple[str, tuple[str, ...], Any]] = []

    def walk(node: dict[str, Any], at: tuple[str, ...]) -> None:
        for key, value in node.items():
            path = (*at, str(key))
            if isinstance(value, dict) and value:
                walk(value, path)
            else:
                out.append((".".join(path), path, value))

    walk(kwargs, ())
    return out


def fits(value: Any, kind: str) -> bool:
    """Whether Playground's configuration takes `value` where its default is of type `kind`."""
    if kind in ("int", "float") and isinstance(value, bool):
        return False
    checks: dict[str, Any] = {
        "bool": bool, "int": int, "float": int | float, "str": str,
        "tuple": list | tuple, "list": list | tuple, "dict": dict,
    }  # fmt: skip
    expected = checks.get(kind)
    return expected is None or isinstance(value, expected)  # NoneType, others: Playground's call


def problems(
    env_id: str, kwargs: dict[str, Any], config: dict[str, list[Any]]
) -> list[FieldProblem]:
    """Every override of `kwargs` the default configuration `config` (dotted key -> [default,
    type name], `registry`'s) does not take, each at its field."""
    out = []
    for dotted, path, value in flatten(kwargs):
        where = ("env", "kwargs", *path)
        if dotted in OWNED:
            msg = f"rlcrate sets Playground's `{dotted}` from {OWNED[dotted]}: set that instead"
            out.append(FieldProblem(where, msg))
        elif dotted in config:
            default, kind = config[dotted]
            if not fits(value, kind):
                msg = (
                    f"expected {KINDS.get(kind, kind)} ({env_id}'s default: {default!r}), "
                    f"got {value!r}"
                )
                out.append(FieldProblem(where, msg))
        else:
            out.append(FieldProblem(where, _unknown(env_id, dotted, config)))
    return out


def _unknown(env_id: str, dotted: str, config: dict[str, list[Any]]) -> str:
    below = sorted(k for k in config if k.startswith(dotted + "."))
    if below:
        return (
            f"`{dotted}` is a group of {env_id}'s settings ({', '.join(below[:4])}"
            f"{', ...' if len(below) > 4 else ''}): set one of them"
        )
    close = difflib.get_close_matches(dotted, list(config), n=1, cutoff=0.6)
    if not close:  # a leaf named right under another group: match on the last part
        tails = {k.rsplit(".", 1)[-1]: k for k in config}
        near = difflib.get_close_matches(dotted.rsplit(".", 1)[-1], list(tails), n=1)
        close = [tails[near[0]]] if near else []
    hint = f"; did you mean `{close[0]}`?" if close else ""
    return f"{env_id}'s configuration has no setting `{dotted}`{hint}"


def config_overrides(
    kwargs: dict[str, Any], impl: str, config: dict[str, list[Any]]
) -> dict[str, Any]:
    """The flattened overrides Playground's `load` takes: `kwargs`, and rlcrate's `impl` where
    the env's configuration has one."""
    flat = {dotted: value for dotted, _, value in flatten(kwargs)}
    if "impl" in config:
        flat["impl"] = impl
    return flat
