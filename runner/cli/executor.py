"""`--executor NAME` and every executor's own options, made from each executor's `Settings`.

`run`, `train`, `eval` and `reproduce` take them through `executor_options`: the command is
written with one `executor: Chosen` parameter, and Typer sees `--executor` plus each registered
executor's options (`--ray-address`, `--partition`, `--profile`, ...) in its place. So a new
executor adds its options to every command that runs units by declaring them in its module.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from runner.errors import UserInputError
from runner.executors import DEFAULT, Chosen, get_executor, registered
from runner.executors.base import ExecutorSettings


@dataclass
class _Opt:
    flag: str
    param: str  # the Python name Typer passes it under
    annotation: Any
    default: Any
    owners: dict[str, str] = field(default_factory=dict)  # executor name -> its field ("" profile)
    mapping: bool = False  # KEY=VALUE, repeatable


def _typer_type(flag: str, help: str, kind: Any) -> tuple[Any, Any, bool]:
    """(annotation, default, is a mapping) of the option for a settings field of type `kind`."""
    if kind is bool:
        return Annotated[bool, typer.Option(flag, help=help)], False, False
    if typing.get_origin(kind) is dict:
        return Annotated[list[str] | None, typer.Option(flag, help=help)], None, True
    return Annotated[str | None, typer.Option(flag, help=help)], None, False


def _usable() -> dict[str, type[ExecutorSettings]]:
    """name -> settings of each executor that can be imported. The options are made when the
    command line is built; one that cannot (a broken plugin) is left out, and choosing it is
    then a one-line error (from `get_executor`)."""
    out = {}
    for name in registered():
        with contextlib.suppress(UserInputError):
            out[name] = get_executor(name).Settings
    return out


@functools.cache
def _options() -> tuple[_Opt, ...]:
    opts: dict[str, _Opt] = {}
    for name, settings in _usable().items():
        wanted = [(f, flag) for f, flag in settings.flags().items()]
        if settings.profile_option:
            wanted.append(("", settings.profile_option))
        for fname, flag in wanted:
            if flag not in opts:
                if fname:
                    f = settings.model_fields[fname]
                    ann, default, mapping = _typer_type(flag, f.description or "", f.annotation)
                else:
                    keys = ", ".join(settings.profile_keys())
                    help = f"{name} settings file ({keys})."
                    ann = Annotated[
                        Path | None, typer.Option(flag, help=help, exists=True, dir_okay=False)
                    ]
                    default, mapping = None, False
                param = "x_" + flag.lstrip("-").replace("-", "_")
                opts[flag] = _Opt(flag, param, ann, default, mapping=mapping)
            opts[flag].owners[name] = fname
    return tuple(opts.values())


def _key_values(flag: str, items: list[str]) -> dict[str, str | bool]:
    out: dict[str, str | bool] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not key or key.startswith("-"):
            raise UserInputError(f"{flag} {item!r}: expected KEY=VALUE without leading dashes")
        out[key] = value if sep else True
    return out


def chosen(name: str, given: dict[str, Any]) -> Chosen:
    """The executor `name` with its settings from the options given ({flag: value})."""
    executor = get_executor(name)
    values: dict[str, Any] = {}
    profile: Path | None = None
    for opt in _options():
        value = given.get(opt.flag)
        if value in (None, False, []):
            continue
        if name not in opt.owners:
            raise UserInputError(f"{opt.flag} applies only to --executor {' or '.join(opt.owners)}")
        fname = opt.owners[name]
        if not fname:
            profile = value
        else:
            values[fname] = _key_values(opt.flag, value) if opt.mapping else value
    return Chosen(name, executor.Settings.build(profile, values))


def executor_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command`, taking `executor: Chosen`, as a Typer command taking `--executor NAME` and
    every registered executor's options instead."""
    hints = typing.get_type_hints(command, include_extras=True, localns={"Chosen": Chosen})
    params = [
        p.replace(annotation=hints.get(p.name, p.annotation))
        for p in inspect.signature(command).parameters.values()
        if p.name != "executor"
    ]
    names = ", ".join(_usable())
    params.append(
        inspect.Parameter(
            "executor",
            inspect.Parameter.KEYWORD_ONLY,
            default=DEFAULT,
            annotation=Annotated[
                str, typer.Option("--executor", "-x", help=names.replace(", ", " | "))
            ],
        )
    )
    opts = _options()
    params += [
        inspect.Parameter(
            o.param, inspect.Parameter.KEYWORD_ONLY, default=o.default, annotation=o.annotation
        )
        for o in opts
    ]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        given = {o.flag: kwargs.pop(o.param, None) for o in opts}
        kwargs["executor"] = chosen(kwargs.pop("executor", DEFAULT), given)
        return command(*args, **kwargs)

    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper
