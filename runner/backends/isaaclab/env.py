"""Isaac Lab envs inside a unit (Isaac Lab's Python 3.12): the task config, what this machine
can run, Isaac Lab's own launcher and its Stable-Baselines3 wrapper.

What runs where is decided by `picks` from env.kwargs and the machine: the device (cuda:0 when
an NVIDIA GPU is visible, else cpu), the physics preset (the task's default on a GPU; Newton
with MuJoCo-Warp on the CPU, the one Isaac Lab physics that runs without a GPU or Isaac Sim),
CUDA graphs (off on the CPU), and the assets: Isaac Lab's asset root (env.kwargs.asset_root, a
local folder or mirror with the same layout, else Isaac Lab's own when it answers); when none
answers, tasks with a local stand-in use it (cartpole: the cartpole USD that ships with
Newton, with its defaultPrim corrected, and no ground plane). The picks are written next to the
unit's logs (isaaclab.json) and the runner records the machine-level ones in provenance.json.
"""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path
from typing import Any

from runner.errors import BackendUnavailable, FieldError
from runner.manifest.schema import EnvSpec
from runner.record.rundir import write_json_atomic, write_text_atomic

RUNNER_KWARGS = ("device", "physics", "asset_root", "cuda_graph")
CPU_PHYSICS = "newton_mjwarp"
LOCAL_STANDINS = {"Isaac-Cartpole-Direct": "cartpole", "Isaac-Cartpole": "cartpole"}
PROBE_ASSET = "Isaac/IsaacLab/Robots/Classic/Cartpole/cartpole.usd"


def reachable(root: str, timeout: float = 5.0) -> bool:
    """Whether an asset root answers (a folder that exists, or a URL that serves a known USD)."""
    if "://" not in root:
        return Path(root).is_dir()
    try:
        req = urllib.request.Request(f"{root.rstrip('/')}/{PROBE_ASSET}", method="HEAD")
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 (https only)
            return int(resp.status) < 400
    except (OSError, ValueError):
        return False


def picks(env: EnvSpec, *, gpu: bool, default_root: str) -> dict[str, Any]:
    """Device, physics preset, CUDA graphs and assets for `env` on this machine."""
    kw = env.kwargs
    device = str(kw.get("device") or ("cuda:0" if gpu else "cpu"))
    cpu = device == "cpu"
    root = kw.get("asset_root") or default_root
    root_ok = reachable(root)
    standin = None if root_ok else LOCAL_STANDINS.get(env.id)
    if not root_ok and standin is None:
        raise BackendUnavailable(
            f"{env.id}: Isaac Lab's assets at {root} cannot be reached from this machine and "
            "rlcrate has no local stand-in for this task; set env.kwargs.asset_root to a local "
            "folder or mirror of the Isaac asset root"
        )
    return {
        "device": device,
        "physics": kw.get("physics") or (CPU_PHYSICS if cpu else None),
        "cuda_graph": bool(kw.get("cuda_graph", not cpu)),
        "asset_root": root if root_ok else None,
        "local_assets": standin,
    }


def asset_files(cfg: Any, root: str) -> list[str]:
    """The files under Isaac's asset root that a task's configuration names (robots, objects,
    ground planes), relative to the root, sorted."""
    root = root.rstrip("/") + "/"
    found: set[str] = set()
    seen: set[int] = set()

    def walk(node: Any, depth: int) -> None:
        if isinstance(node, str):
            if node.startswith(root):
                found.add(node[len(root) :])
            return
        if depth > 12 or id(node) in seen or isinstance(node, (int, float, bool, type(None))):
            return
        seen.add(id(node))
        if isinstance(node, dict):
            items = list(node.values())
        elif isinstance(node, (list, tuple)):
            items = list(node)
        elif hasattr(node, "__dataclass_fields__"):
            items = [getattr(node, f, None) for f in node.__dataclass_fields__]
        else:
            return
        for item in items:
            walk(item, depth + 1)

    walk(cfg, 0)
    return sorted(found)


def unreachable(env: EnvSpec, root: str, files: list[str]) -> BackendUnavailable:
    """What to do when a task's assets cannot be reached: env.kwargs.asset_root, and the files
    (the first three; the message stays one short line)."""
    shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
    return BackendUnavailable(
        f"{env.id}: assets at {root} unreachable, no local stand-in; set env.kwargs.asset_root "
        f"to a folder with {shown or 'its USDs'} (same layout, with the files they reference)"
    )


def local_cartpole(cache: Path) -> Path:
    """Newton's single-pendulum cartpole USD (joints slider_to_cart and cart_to_pole, as Isaac
    Lab's) with its defaultPrim's case fixed to match the prim it names."""
    import newton

    src = Path(newton.__file__).parent / "examples" / "assets" / "cartpole_single_pendulum.usda"
    out = cache / "cartpole.usda"
    text = src.read_text(encoding="utf-8").replace(
        'defaultPrim = "cartPole"', 'defaultPrim = "cartpole"'
    )
    if not out.is_file() or out.read_text(encoding="utf-8") != text:
        write_text_atomic(out, text, durable=False)
    return out


def set_dotted(cfg: Any, path: str, value: Any) -> None:
    *head, last = path.split(".")
    node = cfg
    for part in head:
        node = getattr(node, part, None)
    if node is None or not hasattr(node, last):
        raise FieldError(("env", "kwargs", path), f"the task's configuration has no '{path}'")
    setattr(node, last, value)


def task_cfg(env: EnvSpec, p: dict[str, Any], n_envs: int, seed: int, cache: Path) -> Any:
    from isaaclab_tasks.utils import parse_env_cfg

    overrides = [f"physics={p['physics']}"] if p["physics"] else []
    try:
        cfg = parse_env_cfg(env.id, device=p["device"], num_envs=n_envs, overrides=overrides)
    except (KeyError, ValueError) as exc:
        msg = f"{env.id} cannot use physics {p['physics']!r}: {exc}"
        raise FieldError(("env", "kwargs", "physics"), msg) from None
    if hasattr(cfg.sim.physics, "use_cuda_graph"):
        cfg.sim.physics.use_cuda_graph = p["cuda_graph"]
    if p["local_assets"] == "cartpole":
        cfg.scene.ground = None  # its USD lives on the asset server
        # the direct task names its articulation `cartpole`, the manager-based one `robot`
        robot = getattr(cfg.scene, "cartpole", None) or cfg.scene.robot
        robot.spawn.usd_path = str(local_cartpole(cache))
    for key, value in env.kwargs.items():
        if key not in RUNNER_KWARGS:
            set_dotted(cfg, key, value)
    cfg.seed = seed
    return cfg


def launch(env: EnvSpec, n_envs: int, seed: int, log_dir: Path | None) -> tuple[Any, Any]:
    """The task's gymnasium env, launched as Isaac Lab's own workflows launch it, and the
    callable that ends the simulation launch (call it after closing the env)."""
    from runner.backends.isaaclab import cache_dir, gpu_present

    if env.kwargs.get("asset_root"):  # Isaac Lab reads it once, when isaaclab.utils is imported
        os.environ["ISAACSIM_ASSET_ROOT"] = str(env.kwargs["asset_root"]).rstrip("/")
    import gymnasium as gym
    import isaaclab_tasks  # noqa: F401  (registers the tasks)
    from isaaclab.app import launch_simulation
    from isaaclab.utils.assets import NUCLEUS_ASSET_ROOT_DIR

    try:
        p = picks(env, gpu=gpu_present(), default_root=NUCLEUS_ASSET_ROOT_DIR)
    except BackendUnavailable:
        from isaaclab_tasks.utils import parse_env_cfg

        root = str(env.kwargs.get("asset_root") or NUCLEUS_ASSET_ROOT_DIR)
        files = asset_files(parse_env_cfg(env.id, device="cpu", num_envs=1), root)
        raise unreachable(env, root, files) from None
    if log_dir is not None:
        write_json_atomic(Path(log_dir) / "isaaclab.json", p)
    cfg = task_cfg(env, p, n_envs, seed, cache_dir())
    launched = launch_simulation(cfg, {"device": p["device"], "headless": True})
    launched.__enter__()

    def end() -> None:
        launched.__exit__(None, None, None)

    try:
        return gym.make(env.id, cfg=cfg), end
    except BaseException:
        end()
        raise


def make(env: EnvSpec, n_envs: int, seed: int, log_dir: Path | None) -> Any:
    """The task behind Isaac Lab's own Stable-Baselines3 wrapper."""
    from isaaclab_rl.sb3 import Sb3VecEnvWrapper

    base, end = launch(env, n_envs, seed, log_dir)

    class Wrapper(Sb3VecEnvWrapper):  # type: ignore[misc, valid-type]
        """Isaac Lab's own SB3 wrapper; closing it also ends the simulation launch."""

        def close(self) -> None:
            try:
                super().close()
            finally:
                end()

    try:
        return Wrapper(base)
    except BaseException:
        base.close()
        end()
        raise
