"""What the manifest's models share: `Strict`, and the validation of a section whose fields belong
to a plugin (`env` to its backend's `Options`, `algo` to its trainer's), which reports every
problem at once and names the plugin that has a field this one lacks."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError


class Strict(BaseModel):
    """Unknown keys refused; a value has one type (no "64" for 64, no true for 1, no 1 for
    true); NaN and infinity refused wherever a number is expected."""

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, strict=True, allow_inf_nan=False
    )


M = TypeVar("M", bound=BaseModel)


def custom(kind: str, message: str) -> Any:
    """A pydantic error of rlcrate's own (`rlcrate_*`): its message is shown as it is."""
    return PydanticCustomError(kind, message)


def refuse(title: str, loc: tuple[str, ...], message: str, value: Any) -> ValidationError:
    """One problem at `loc` of the section `title` (a model's name), as pydantic raises it."""
    return refuse_all(title, [(loc, message, value)])


def refuse_all(title: str, problems: list[tuple[tuple[str, ...], str, Any]]) -> ValidationError:
    """Problems (loc, message, value) of the section `title`, as pydantic raises them."""
    lines = [
        InitErrorDetails(type=custom("rlcrate_plugin", message), loc=loc, input=value)
        for loc, message, value in problems
    ]
    return ValidationError.from_exception_data(title, lines)


def key_problem(
    key: str,
    owner: str,
    kind: str,
    model: type[BaseModel],
    others: Mapping[str, type[BaseModel]],
    instead: str | None = None,
) -> str:
    """Why `key` is not an option of the plugin `owner` (a `kind`: backend, trainer) whose
    options are `model`: another plugin's (naming which), or no plugin's; with what to write
    instead: `instead` (the plugin's own sentence on it), else the closest option of `model`."""
    allowed = list(model.model_fields)
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f"; {instead}" if instead else f"; did you mean '{close[0]}'?" if close else ""
    owners = sorted(n for n, m in others.items() if n != owner and key in m.model_fields)
    if owners:
        has = "has" if len(owners) == 1 else "have"
        return f"the {owner} {kind} has no such option; {', '.join(owners)} {has}{hint}"
    return f"unknown key{hint} (the {owner} {kind}'s options: {', '.join(allowed)})"


def validate_options(
    model: type[M], value: dict[str, Any], problem: Callable[[str], str], title: str
) -> M:
    """`value` as `model`: every problem at once (ValidationError named `title`), a key the
    model lacks with `problem(key)`, the rest as the model finds them."""
    extra = [k for k in value if k not in model.model_fields]
    if not extra:
        return model.model_validate(value)
    errors: list[Any] = [
        InitErrorDetails(
            type=custom("rlcrate_option", problem(str(k))), loc=(str(k),), input=value[k]
        )
        for k in extra
    ]
    try:
        model.model_validate({k: v for k, v in value.items() if k not in extra})
    except ValidationError as exc:
        errors += [
            InitErrorDetails(type=e["type"], loc=e["loc"], input=e["input"], ctx=e.get("ctx", {}))
            if e["type"] not in ("value_error", "assertion_error")
            else InitErrorDetails(type=custom("rlcrate_value", e["msg"]), loc=e["loc"], input="")
            for e in exc.errors()
        ]
    raise ValidationError.from_exception_data(title, errors)
