"""Print Isaac Lab's task registry as one JSON line: `python -m runner.backends.isaaclab.tasks`.

Run by the isaaclab backend with Isaac Lab's own Python 3.12 (the runner's Python has no Isaac
Lab); the backend caches the answer, since importing isaaclab_tasks takes tens of seconds.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import io
import json
import platform
import sys

MARKER = "rlcrate-isaaclab-registry:"
PACKAGES = (
    "isaaclab",
    "isaacsim",
    "torch",
    "newton",
    "warp-lang",
    "mujoco-warp",
    "stable-baselines3",
    "rsl-rl-lib",
    "gymnasium",
)


def registry() -> dict[str, object]:
    with contextlib.redirect_stdout(io.StringIO()):  # Isaac Lab prints while registering
        import gymnasium as gym
        import isaaclab_tasks  # noqa: F401  (registers the Isaac-* ids)
        from isaaclab.utils.assets import NUCLEUS_ASSET_ROOT_DIR
    return {
        "isaaclab": importlib.metadata.version("isaaclab"),
        "python": platform.python_version(),
        "tasks": sorted(k for k in gym.registry if k.startswith("Isaac-")),
        "asset_root": NUCLEUS_ASSET_ROOT_DIR,
        "isaacsim": importlib.util.find_spec("isaacsim") is not None,
        "packages": {p: _version(p) for p in PACKAGES},
    }


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    print(MARKER + json.dumps(registry()))
    sys.exit(0)
