"""MkDocs hook: the reference pages, generated from the code at build time (never in git).

- reference/cli.md: every command of the Typer app, its arguments and options with their help;
- reference/manifest-fields.md: every manifest field from the JSON Schema pydantic makes of
  `runner.manifest.schema` (what `rlcrate schema` prints), with its type, default and description;
- reference/exit-status.md: `runner.cli.exit.STATUSES` and the error types with their statuses.

`commands()` is also what tests/project/test_docs.py checks the commands shown in the docs against.
"""

from __future__ import annotations

import inspect
import json
import sys
from pathlib import Path
from typing import Any

CHECKOUT = str(Path(__file__).resolve().parents[2])


def _checkout_first() -> None:
    """Import rlcrate from the checkout this site documents, ahead of any installed copy (done
    when a page is made, not on import: MkDocs restores sys.path after loading a hook)."""
    if sys.path[:1] != [CHECKOUT]:
        sys.path.insert(0, CHECKOUT)


PAGES = ("reference/cli.md", "reference/manifest-fields.md", "reference/exit-status.md")


# ---- the command line ------------------------------------------------------------------------


def _click_root() -> Any:
    _checkout_first()
    import typer

    from runner.cli import app

    return typer.main.get_command(app)


def _walk(cmd: Any, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], Any]]:
    """Every command under `cmd`, each as the command line loads it (the root loads its
    commands on first use), sorted by name."""
    out = [(path, cmd)]
    if hasattr(cmd, "list_commands"):
        ctx = cmd.context_class(cmd)
        for name in sorted(cmd.list_commands(ctx)):
            sub = cmd.get_command(ctx, name)
            if not getattr(sub, "hidden", False):
                out += _walk(sub, (*path, name))
    return out


def commands() -> dict[str, set[str]]:
    """`"image build"` -> every option string it takes (`--engine`, `-o`, ...), `--help` too."""
    out: dict[str, set[str]] = {}
    for path, cmd in _walk(_click_root(), ()):
        opts = {"--help"}
        for p in cmd.params:
            opts.update(getattr(p, "opts", []) + getattr(p, "secondary_opts", []))
        out[" ".join(path)] = opts
    return out


def _text(text: str) -> str:
    """Help text as Markdown: `<name>` outside code spans is text, not an HTML tag."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def _cell(text: str | None) -> str:
    return _text(" ".join((text or "").split())).replace("|", "\\|")


def _param_row(p: Any) -> str:
    if p.param_type_name == "argument":
        name = f"`{(p.metavar or p.name).upper()}`"
        kind = "argument" + ("" if p.required else ", optional")
    else:
        names = p.opts + p.secondary_opts
        name = " / ".join(f"`{n}`" for n in names)
        kind = "flag" if p.is_flag else f"`{p.metavar or 'VALUE'}`"
        if p.multiple:
            kind += ", repeatable"
        if p.required:
            kind += ", required"
        elif not p.is_flag and p.default not in (None, (), []):
            kind += f", default `{p.default}`"
    return f"| {name} | {kind} | {_cell(getattr(p, 'help', None))} |"


def cli_page() -> str:
    lines = [
        "# Command line",
        "",
        "Generated from the Typer app (`runner/cli`) when the site is built: every command,",
        "argument and option `rlcrate` has, with its own help text.",
        "",
    ]
    for path, cmd in _walk(_click_root(), ()):
        if not path:
            continue
        lines += [f"## `rlcrate {' '.join(path)}`", "", _text(inspect.cleandoc(cmd.help or "")), ""]
        params = [p for p in cmd.params if getattr(p, "name", "") != "help"]
        if params:
            lines += ["| name | takes | what |", "|---|---|---|"]
            lines += [_param_row(p) for p in params] + [""]
    return "\n".join(lines) + "\n"


# ---- the manifest fields ---------------------------------------------------------------------


def _ref(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any] | None:
    """The definition a property points at (directly, or as the non-null branch of anyOf)."""
    for branch in [node, *node.get("anyOf", [])]:
        ref = branch.get("$ref")
        if ref:
            return schema["$defs"][ref.rsplit("/", 1)[1]]
    return None


def _type(node: dict[str, Any]) -> str:
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return " \\| ".join(f"`{v}`" for v in node["enum"])
    if "$ref" in node:
        return "section"
    if "anyOf" in node:
        return " or ".join(_type(b) for b in node["anyOf"])
    kind = node.get("type", "any")
    if kind == "array" and "items" in node:
        return f"list of {_type(node['items'])}"
    return str(kind)


def _branch_rows(schema: dict[str, Any], prop: dict[str, Any], path: str) -> list[str]:
    """A section that is one of several models (the env, by backend): the fields every branch
    has once (the choosing key with every value), then each branch's own, marked with it."""
    key = prop["discriminator"]["propertyName"]
    branches = {
        value: schema["$defs"][ref.rsplit("/", 1)[1]]
        for value, ref in prop["discriminator"]["mapping"].items()
    }
    shared = set.intersection(*(set(b.get("properties", {})) for b in branches.values()))
    first = next(iter(branches.values()))
    choices = " \\| ".join(f"`{v}`" for v in branches)
    rows = [f"| `{path}{key}` | {choices} | required | {_cell(prop.get('description'))} |"]
    common = {n: p for n, p in first.get("properties", {}).items() if n in shared and n != key}
    rows += _rows(schema, {"properties": common, "required": first.get("required", [])}, path)
    for value, branch in branches.items():
        own = {n: p for n, p in branch.get("properties", {}).items() if n not in shared}
        rows += _rows(schema, {"properties": own}, path, note=f"({key}: {value}) ")
    return rows


def _trainer_rows(schema: dict[str, Any], prop: dict[str, Any], path: str) -> list[str]:
    """The algo, one of each trainer's options models (a union without a discriminator: the
    trainer is named, or implied by the algorithm): the fields every trainer has once, then each
    trainer's own, marked with it."""
    refs = [schema["$defs"][b["$ref"].rsplit("/", 1)[1]] for b in prop["anyOf"] if "$ref" in b]
    branches = {
        b["properties"]["trainer"]["const"]: b
        for b in refs
        if "const" in b.get("properties", {}).get("trainer", {})
    }
    from runner.manifest.algo import AlgoSpec

    first = next(iter(branches.values()))
    # a field every trainer has alike (not `device`: torch's for some, JAX's for another)
    shared = {
        n for n, p in first.get("properties", {}).items()
        if all(b.get("properties", {}).get(n) == p for b in branches.values())
    } | {"trainer"}  # fmt: skip
    choices = " \\| ".join(f"`{v}`" for v in branches)
    trainer = AlgoSpec.model_fields["trainer"].description
    rows = [f"| `{path}trainer` | {choices} or null | `null` | {_cell(trainer)} |"]
    common = {n: p for n, p in first.get("properties", {}).items() if n in shared - {"trainer"}}
    rows += _rows(schema, {"properties": common}, path)
    for value, branch in branches.items():
        own = {n: p for n, p in branch.get("properties", {}).items() if n not in shared}
        rows += _rows(schema, {"properties": own}, path, note=f"(trainer: {value}) ")
    return rows


def _rows(schema: dict[str, Any], node: dict[str, Any], prefix: str, note: str = "") -> list[str]:
    rows = []
    required = set(node.get("required", []))
    for name, prop in node.get("properties", {}).items():
        path = f"{prefix}{name}"
        if "discriminator" in prop:
            rows += _branch_rows(schema, prop, f"{path}.")
            continue
        if len(prop.get("anyOf", [])) > 2 and all("$ref" in b for b in prop["anyOf"]):
            rows += _trainer_rows(schema, prop, f"{path}.")
            continue
        sub = _ref(schema, prop)
        desc = prop.get("description") or (sub or {}).get("description", "")
        default = json.dumps(prop["default"]) if "default" in prop else ""
        need = "required" if name in required else (f"`{default}`" if default else "")
        rows.append(f"| `{path}` | {_type(prop)} | {need} | {_cell(note + desc)} |")
        if sub is not None:
            rows += _rows(schema, sub, f"{path}.", note)
    return rows


def fields_page() -> str:
    from runner.manifest import json_schema
    from runner.plugins import OWN

    # rlcrate's own backends and trainers (a plugin documents its own)
    schema = json_schema(list(OWN["backend"]), list(OWN["trainer"]))
    lines = [
        "---",
        "hide: [toc]",  # the table needs the room (a dotted path is one word)
        "---",
        "# Manifest fields",
        "",
        "Generated from the manifest's pydantic schema (`runner/manifest/schema.py`) when the",
        "site is built; `rlcrate schema` prints the same schema as JSON Schema. The annotated",
        "walk-through of the manifest is [the manifest guide](../manifest.md).",
        "",
        "| field | type | default | what |",
        "|---|---|---|---|",
        *_rows(schema, schema, ""),
    ]
    return "\n".join(lines) + "\n"


# ---- exit statuses ---------------------------------------------------------------------------


def _error_types() -> list[type]:
    from runner import errors

    found = [
        obj
        for obj in vars(errors).values()
        if isinstance(obj, type) and issubclass(obj, errors.RunnerError)
    ]
    return sorted(found, key=lambda t: (t.exit_code, t.__name__))


def exit_page() -> str:
    from runner.cli.exit import STATUSES

    lines = [
        "# Exit statuses",
        "",
        "Generated from `runner/cli/exit.py` (the one place errors become exit statuses) and",
        "`runner/errors.py` when the site is built. Every error is one line on stderr starting",
        "`error:`, never a traceback.",
        "",
        "| status | meaning |",
        "|---|---|",
        *(f"| {code} | {_cell(text)} |" for code, text in sorted(STATUSES.items())),
        "",
        "## Error types",
        "",
        "| type | status | what |",
        "|---|---|---|",
        *(
            f"| `{t.__name__}` | {t.exit_code} | {_cell(inspect.getdoc(t))} |"
            for t in _error_types()
        ),
    ]
    return "\n".join(lines) + "\n"


# ---- the hook --------------------------------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    _checkout_first()

    for uri, make in zip(PAGES, (cli_page, fields_page, exit_page), strict=True):
        files.append(File.generated(config, uri, content=make()))
    return files
