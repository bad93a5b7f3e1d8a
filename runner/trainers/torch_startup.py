"""Torch's optimizers without importing TorchDynamo in processes that compile nothing.

torch marks a few `Optimizer` methods (`add_param_group`, `zero_grad`, `state_dict`,
`load_state_dict`) with `torch._disable_dynamo`, which imports `torch._dynamo` on their first
call so that a `torch.compile`d caller skips them. Building the first optimizer therefore costs
the import of TorchDynamo: 1.4-1.9 s on this project's 2-core machine, about as much as
`import torch` itself, in every unit and every dry construction, although no unit compiles.

`defer_dynamo()` gives each of those methods the disabled form torch would build, built on the
first call made after TorchDynamo is imported; until then the method runs as it is. A frame can be
compiled only once TorchDynamo is imported, so where something does compile, the methods are
skipped by it exactly as torch intends, and where nothing does, the import never happens.

An optimizer's `step` is wrapped by torch's `_use_grad`, which imports TorchDynamo on every call to
mark two graph breaks around the update (`torch._dynamo.graph_break()`, which does nothing outside
a compiled frame). `defer_dynamo()` gives each optimizer class whose `step` is that wrapper a step
that sets and restores the grad mode exactly as `_use_grad` does, without the import, while
TorchDynamo is not imported; once it is, the call goes to torch's own wrapper. So a unit that
trains (and its first `step`) no longer pays the import either.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

METHODS = ("add_param_group", "zero_grad", "state_dict", "load_state_dict")
SLOT = "__dynamo_disable"  # where torch._disable_dynamo caches the disabled function


@cache
def defer_dynamo() -> None:
    """Install the deferral on torch's `Optimizer` (once per process; torch must be importable)."""
    from torch.optim import Optimizer

    for name in METHODS:
        fn = getattr(getattr(Optimizer, name, None), "__wrapped__", None)
        if callable(fn) and getattr(fn, SLOT, None) is None:
            setattr(fn, SLOT, DisabledOnceDynamoLoads(fn))
    use_grad = _use_grad_code()
    for cls in _subclasses(Optimizer):
        step = cls.__dict__.get("step")
        hooked = getattr(step, "hooked", False)  # wrapped by Optimizer.profile_hook_step already
        torch_step = getattr(step, "__wrapped__", None) if hooked else step
        if torch_step is None or use_grad is None:
            continue
        if getattr(torch_step, "__code__", None) is not use_grad:
            continue
        deferred = _step_without_dynamo(torch_step)
        if hooked:
            deferred = Optimizer.profile_hook_step(deferred)
            deferred.hooked = True  # type: ignore[attr-defined]
        setattr(cls, "step", deferred)  # noqa: B010


def _use_grad_code() -> Any:
    """The code of torch's `_use_grad` step wrapper (None where torch has no such wrapper)."""
    try:
        from torch.optim.optimizer import _use_grad_for_differentiable
    except ImportError:
        return None
    return getattr(_use_grad_for_differentiable(lambda self: None), "__code__", None)


def _subclasses(cls: type) -> Iterator[type]:
    sub: type
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _step_without_dynamo(torch_step: Callable[..., Any]) -> Callable[..., Any]:
    """`torch_step` (torch's `_use_grad` around the optimizer's own `step`) without its import of
    TorchDynamo while nothing can be compiling: the grad mode set to the optimizer's
    `differentiable` for the update and restored after it, as `_use_grad` does."""
    import torch

    raw = torch_step.__wrapped__  # type: ignore[attr-defined]

    def step(*args: Any, **kwargs: Any) -> Any:
        if "torch._dynamo" in sys.modules:
            return torch_step(*args, **kwargs)
        prev = torch.is_grad_enabled()
        try:
            torch.set_grad_enabled(args[0].defaults["differentiable"])
            return raw(*args, **kwargs)
        finally:
            torch.set_grad_enabled(prev)

    return functools.update_wrapper(step, raw)


class DisabledOnceDynamoLoads:
    """`fn` as it is while TorchDynamo is not imported; torch's disabled `fn` from then on."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.disabled: Callable[..., Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.disabled is None:
            if "torch._dynamo" not in sys.modules:  # nothing can be compiling
                return self.fn(*args, **kwargs)
            import torch._dynamo

            self.disabled = torch._dynamo.disable(self.fn, recursive=True)
        return self.disabled(*args, **kwargs)


def device_problem(device: str) -> str | None:
    """Why `device` is not usable on this machine (SB3 would quietly fall back to the CPU)."""
    import torch

    if device == "auto":
        return None
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        return f"{device!r} is not a torch device; expected cpu, cuda, cuda:N or auto"
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            return f"{device!r} asked for, but this machine has no usable CUDA GPU"
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            return f"{device!r} asked for, but this machine has {torch.cuda.device_count()} GPU(s)"
    elif dev.type != "cpu":
        return f"{device!r}: only cpu, cuda, cuda:N or auto are supported"
    return None
