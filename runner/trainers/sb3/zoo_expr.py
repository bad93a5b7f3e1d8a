"""rl-zoo3's Python-expression strings, read without `eval`.

The zoo writes `policy_kwargs: "dict(log_std_init=-2, ortho_init=False, activation_fn=nn.ReLU,
net_arch=dict(pi=[256], vf=[256]))"` and `normalize: "{'norm_obs': True, 'norm_reward': False}"`
and evals them. Here a walker over the expression's syntax tree takes only numbers, strings,
booleans, None, lists, tuples, dict literals, `dict(key=...)` calls, and class names this runner
knows (torch.nn activations, optimizers), which become their names.
"""

from __future__ import annotations

import ast
from typing import Any

from runner.trainers.sb3.hyper import ACTIVATIONS, OPTIMIZERS, SB3_OPTIMIZERS

CLASS_NAMES = ACTIVATIONS + OPTIMIZERS + tuple(SB3_OPTIMIZERS)
_MODULES = ("nn", "th.nn", "torch.nn", "optim", "th.optim", "torch.optim")


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _walk(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and isinstance(
        node.value, (int, float, str, bool, type(None))
    ):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _walk(node.operand)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_walk(e) for e in node.elts]
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        keys = [_walk(k) for k in node.keys if k is not None]
        if all(isinstance(k, str) for k in keys):
            return dict(zip(keys, [_walk(v) for v in node.values], strict=True))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        call: ast.Call = node
        if not call.args and all(k.arg for k in call.keywords):
            return {str(k.arg): _walk(k.value) for k in call.keywords}
    name = _dotted(node)
    if name is not None:
        module, _, leaf = name.rpartition(".")
        if leaf in CLASS_NAMES and (not module or module in _MODULES):
            return leaf
    raise ValueError(f"'{ast.unparse(node)}' is not a value rlcrate reads from rl-zoo3")


MAX_TEXT = 10_000  # characters: rl-zoo3's longest expression is a few hundred


def literal(text: str) -> Any:
    """The value a zoo expression string stands for; ValueError naming the part it cannot read.
    Bounded: a long text, or one nested past what Python's parser or this walker go (a chain of
    ten thousand unary minus signs is a MemoryError in `ast.parse`), is refused."""
    shown = text if len(text) <= 80 else text[:77] + "..."
    if len(text) > MAX_TEXT:
        raise ValueError(f"{shown!r} is {len(text):,} characters, more than an rl-zoo3 value has")
    try:
        tree = ast.parse(text.strip(), mode="eval")
        return _walk(tree.body)
    except SyntaxError:
        raise ValueError(f"{shown!r} is not a Python expression") from None
    except (MemoryError, RecursionError):
        raise ValueError(f"{shown!r} is nested too deeply for a value rlcrate reads") from None
