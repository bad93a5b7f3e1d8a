"""Dotted-path overrides and matrix expansion into variants.

A variant is the base manifest with some dotted paths overridden. Every variant runs every seed,
so any two variants can be compared seed by seed (paired).
"""

from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from runner.manifest.schema import Manifest, with_backend_defaults

# Paths a variant may not change: they describe the run as a whole.
FIXED_TOP = ("rlcrate", "name", "seeds", "matrix", "expect", "image", "track", "tune")


@dataclass(frozen=True)
class Variant:
    name: str
    overrides: dict[str, Any] = field(default_factory=dict)
    config: Manifest | None = None


def path_problem(path: str) -> str | None:
    """Why `path` is not a dotted path into the manifest a variant may set, or None if it is."""
    parts = path.split(".")
    if not path or any(not p for p in parts):
        return f"'{path}' is not a dotted path such as parallel.envs"
    if parts[0] in FIXED_TOP:
        return f"'{parts[0]}' belongs to the run as a whole and cannot vary"
    from runner.manifest.overrides import path_problem as field_problem

    return field_problem(tuple(parts))


def conflict_problem(paths: list[str]) -> str | None:
    """Why overriding all of `paths` together is ambiguous (a path and its parent), or None."""
    for a in paths:
        for b in paths:
            if b.startswith(a + "."):
                return f"'{a}' and '{b}' both set {b}; set one or the other"
    return None


def set_path(data: dict[str, Any], path: str, value: Any) -> str:
    """Set `path` to `value`; return how: "replace", or "merge" when both the old and the new
    value are mappings (the new keys are set one by one, nested mappings merged the same way,
    every other key of the old mapping kept)."""
    node = data
    *head, last = path.split(".")
    for part in head:
        node = node.setdefault(part, {})
    old = node.get(last)
    if isinstance(old, dict) and isinstance(value, dict):
        _merge(old, value)
        return "merge"
    node[last] = value
    return "replace"


def _merge(old: dict[Any, Any], new: dict[Any, Any]) -> None:
    for key, value in new.items():
        if isinstance(old.get(key), dict) and isinstance(value, dict):
            _merge(old[key], value)
        else:
            old[key] = value


def override_modes(manifest: Manifest, overrides: dict[str, Any]) -> dict[str, str]:
    """For resolved.yaml: how each override of a variant was applied (merge or replace)."""
    data = manifest.model_dump()
    return {path: set_path(data, path, copy.deepcopy(v)) for path, v in overrides.items()}


def apply_overrides(manifest: Manifest, overrides: dict[str, Any]) -> Manifest:
    """The manifest with `overrides` applied and validated again (ValueError, ValidationError)."""
    for path in overrides:
        problem = path_problem(path)
        if problem:
            raise ValueError(problem)
    conflict = conflict_problem(list(overrides))
    if conflict:
        raise ValueError(conflict)
    data = manifest.model_dump()
    # the env and algo as given: a variant that changes env.backend (or the trainer, through
    # algo.name or algo.trainer) takes none of the old backend's (or trainer's) defaults
    data["env"] = manifest.env.model_dump(exclude_unset=True) | {"backend": manifest.env.backend}
    data["algo"] = manifest.algo.model_dump(exclude_unset=True)
    for path, value in overrides.items():
        set_path(data, path, copy.deepcopy(value))
    return with_backend_defaults(Manifest.model_validate(data))


# In a list matrix, an entry's own name for its variant (`variant: brax-ppo`), not a path.
LABEL = "variant"
LABEL_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def override_sets(manifest: Manifest) -> list[dict[str, Any]]:
    """The matrix as a list of override mappings ([{}] when there is no matrix); a list entry's
    LABEL is not an override (see `given_names`)."""
    matrix = manifest.matrix
    if isinstance(matrix, list):
        return [{k: v for k, v in m.items() if k != LABEL} for m in matrix] or [{}]
    return cross(matrix) if matrix else [{}]


def given_names(manifest: Manifest) -> list[Any]:
    """Each override set's LABEL as written (None where an entry has none)."""
    matrix = manifest.matrix
    if isinstance(matrix, list) and matrix:
        return [m.get(LABEL) for m in matrix]
    return [None] * len(override_sets(manifest))


def label_problem(label: Any, labels: list[Any]) -> str | None:
    """Why a list entry's LABEL cannot name a variant (a folder), or None if it can."""
    if not isinstance(label, str) or not LABEL_PATTERN.fullmatch(label) or len(label) > MAX_NAME:
        return (
            f"expected a folder-safe name (letters, digits, '.', '_', '-'; at most {MAX_NAME} "
            f"characters), got {label!r}"
        )
    if labels.count(label) > 1:
        return f"'{label}' names more than one variant"
    return None


def _key(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True, default=str)


def duplicate_problems(manifest: Manifest) -> list[tuple[tuple[Any, ...], str]]:
    """(where, why) for each matrix entry or value that repeats an earlier one: a repeated
    variant would run the same units twice and count them as two. An entry with a `variant:`
    name of its own may repeat another's values: its name says the repeat is meant."""
    matrix = manifest.matrix
    out: list[tuple[tuple[Any, ...], str]] = []
    if isinstance(matrix, dict):
        for path, values in matrix.items():
            keys = [_key(v) for v in values]
            for i, k in enumerate(keys):
                if k in keys[:i]:
                    why = f"value {values[i]!r} is listed twice; each value makes one variant"
                    out.append((("matrix", path), why))
                    break
        return out
    sets = [_key(s) for s in override_sets(manifest)]
    names = given_names(manifest)
    for i, k in enumerate(sets):
        # two entries the user named apart are meant to repeat (e.g. a same-seed check)
        if k in sets[:i] and names[i] is None:
            why = f"entry {i} sets the same values as entry {sets.index(k)}; remove one"
            out.append((("matrix", i), why))
    return out


def cross(values: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination of the values, one mapping each, in key order (the cross product)."""
    keys = list(values)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values.values())]


def _slug(value: Any) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "x"


# Leaves that only say "which one": their value alone names the variant (`PPO`, not `name-PPO`).
NAMING_LEAVES = ("name", "id")
MAX_NAME = 100  # a folder name; file systems allow 255 bytes


def _value_slug(value: Any) -> str:
    if isinstance(value, dict):  # a merged mapping: name the keys it sets, `gamma-0.9-n_steps-8`
        return "-".join(f"{_slug(k)}-{_value_slug(v)}" for k, v in value.items()) or "x"
    return _slug(value)


def variant_name(overrides: dict[str, Any], all_paths: list[str]) -> str:
    """A short folder-safe name: `workers-4`, `envs-8_workers-8`, `PPO` for `algo.name: PPO`;
    full paths if leaves collide.

    A name longer than MAX_NAME keeps its start and ends in a hash of the whole, so it stays
    within file-name limits and distinct; resolved.yaml has the overrides in full.
    """
    if not overrides:
        return "default"
    leaves = [p.split(".")[-1] for p in all_paths]
    use_full = len(set(leaves)) != len(leaves)
    parts = []
    for path, value in overrides.items():
        if path.split(".")[-1] in NAMING_LEAVES and not isinstance(value, (dict, list)):
            parts.append(_slug(value))
            continue
        key = path.replace(".", "-") if use_full else path.split(".")[-1]
        parts.append(f"{key}-{_value_slug(value)}")
    return _bounded("_".join(parts))


def _bounded(name: str) -> str:
    if len(name) <= MAX_NAME:
        return name
    import hashlib

    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    return f"{name[: MAX_NAME - 11]}-{digest}"


SHORT_NAME = 40  # past this, names keep only what tells the variants apart


def _flat(overrides: dict[str, Any]) -> dict[str, Any]:
    """Each override down to its leaves: a merged mapping's keys are paths of their own."""
    out: dict[str, Any] = {}
    for path, value in overrides.items():
        if isinstance(value, dict) and value:
            out.update({f"{path}.{k}": v for k, v in _flat(value).items()})
        else:
            out[path] = value
    return out


def _apart(sets: list[dict[str, Any]]) -> list[str] | None:
    """Names from only what differs between the variants, or None when they would not be
    distinct: the `.name`/`.id` values alone when they tell them apart (`PPO`, `SAC`), else each
    leaf whose value differs (`n_steps-128`), so a matrix whose entries move several values
    together is named by what changes, not by every value it sets."""
    flats = [_flat(s) for s in sets]
    paths = list(dict.fromkeys(p for f in flats for p in f))
    differ = [p for p in paths if len({_key(f.get(p, _UNSET)) for f in flats}) > 1]
    naming = [p for p in differ if p.split(".")[-1] in NAMING_LEAVES]
    for chosen in (naming, differ):
        if not chosen:
            continue
        names = [variant_name({p: f[p] for p in chosen if p in f}, chosen) for f in flats]
        if len(set(names)) == len(names) and "default" not in names:
            return names
    return None


_UNSET = object()


def variant_names(sets: list[dict[str, Any]]) -> list[str]:
    """Each override set's name (`variant_name`); where one would pass SHORT_NAME, all are
    named by what tells them apart (`_apart`), so folders, tables and report.md show short
    names, the same everywhere."""
    all_paths = sorted({p for s in sets for p in s})
    names = [variant_name(s, all_paths) for s in sets]
    if len(sets) > 1 and any(len(n) > SHORT_NAME for n in names):
        names = _apart(sets) or names
    return names


def expand(manifest: Manifest) -> list[Variant]:
    """Expand the matrix into validated variants (raises ValueError/ValidationError)."""
    sets = override_sets(manifest)
    labels = given_names(manifest)
    for label in labels:
        problem = None if label is None else label_problem(label, labels)
        if problem:
            raise ValueError(f"{LABEL}: {problem}")
    unnamed = [s for s, label in zip(sets, labels, strict=True) if label is None]
    automatic = iter(variant_names(unnamed))
    variants = []
    seen: dict[str, int] = {label: 0 for label in labels if label is not None}
    for overrides, label in zip(sets, labels, strict=True):
        if label is not None:
            variants.append(Variant(label, overrides, apply_overrides(manifest, overrides)))
            continue
        name = next(automatic)
        if name in seen:  # two override sets that slug the same: keep both, numbered
            seen[name] += 1
            name = f"{name}_{seen[name]}"
        else:
            seen[name] = 0
        variants.append(Variant(name, overrides, apply_overrides(manifest, overrides)))
    return variants
