"""Print a task's registered agent configuration as one JSON line:
`python -m runner.backends.isaaclab.agent TASK ENTRY_POINT` (e.g. sb3_cfg_entry_point).

Run by the isaaclab backend with Isaac Lab's own Python (`algo.defaults: task`). The answer is
`{"entry": <the registered entry>, "cfg": <the config as data>}`, or `{"entry": null}` when the
task registers none for that library. A YAML config is its data as read; a Python config class
is Isaac Lab's `to_dict` of it (a preset family: its default member), values JSON cannot hold
(callables, classes) left out.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from typing import Any

MARKER = "rlcrate-isaaclab-agent:"


def _plain(value: Any) -> Any:
    """JSON data only: dicts, lists, strings, numbers, booleans and None; the rest dropped."""
    if isinstance(value, dict):
        out = {str(k): _plain(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not _DROP}
    if isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value]
        return _DROP if any(v is _DROP for v in items) else items
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return _DROP


_DROP = object()


def agent_config(task: str, entry_point: str) -> dict[str, Any]:
    with contextlib.redirect_stdout(io.StringIO()):  # Isaac Lab prints while registering
        import gymnasium as gym
        import isaaclab_tasks  # noqa: F401  (registers the Isaac-* ids)
        from isaaclab.utils import to_dict
        from isaaclab_tasks.utils.parse_cfg import load_cfg_from_registry

        entry = gym.spec(task).kwargs.get(entry_point)
        if entry is None:
            return {"entry": None}
        cfg = load_cfg_from_registry(task, entry_point)
    if not isinstance(cfg, dict):
        cfg = to_dict(getattr(cfg, "default", cfg))
    return {"entry": str(entry), "cfg": _plain(cfg)}


if __name__ == "__main__":
    print(MARKER + json.dumps(agent_config(sys.argv[1], sys.argv[2])))
    sys.exit(0)
