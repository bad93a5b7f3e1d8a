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
An optimizer's `step` still imports TorchDynamo (torch's `_use_grad` wrapper does, unconditionally),
so the saving is in the processes that build models without stepping them: the dry construction,
evaluation, the bench's inference points.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
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
