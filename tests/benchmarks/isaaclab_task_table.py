"""Which registered Isaac Lab tasks run on this machine, and what the others need (a script, not
a test). Run it with Isaac Lab's Python (the GPU environment):

    .cache/gpu-env/bin/python tests/benchmarks/isaaclab_task_table.py [--try] [--also TASK,...]
        [--all] [--timeout 300] [--out tasks.json]

For every registered `Isaac-*` task, from its configuration alone: the files it names under
Isaac's asset root (robots, props, ground planes; `asset_files`), whether it has camera sensors
(they render: Isaac Sim's RTX or a GPU renderer), its physics presets (Newton's MuJoCo-Warp is the
one that runs on a CPU without Isaac Sim), whether rlcrate has a local stand-in for its assets,
and the agent configs it registers (sb3, rsl_rl): the verdict, inferred. `--try` also runs
`rlcrate run` with a tiny budget (8 envs, 64 steps, 1 eval episode) on each task that verdict says
runs here and on the tasks `--also` names (every task with `--all`: to check the other verdicts),
each within `--timeout` seconds (its process group is ended past it), and records the outcome:
"ran", or the last line rlcrate printed. Prints a Markdown table; a tried task's cell says what
was measured.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def _physics_presets(cfg) -> list[str]:
    physics = getattr(getattr(cfg, "sim", None), "physics", None)
    names = [n for n in dir(physics) if not n.startswith("_")] if physics is not None else []
    return sorted(n for n in names if "newton" in n or "physx" in n)


def _cameras(cfg) -> bool:
    scene = getattr(cfg, "scene", None)
    fields = getattr(scene, "__dataclass_fields__", {}) if scene is not None else {}
    return any("Camera" in type(getattr(scene, f, None)).__name__ for f in fields)


def inspect(task: str, root: str) -> dict:
    import gymnasium as gym
    from isaaclab_tasks.utils import parse_env_cfg

    from runner.backends.isaaclab.env import LOCAL_STANDINS, asset_files

    kwargs = gym.spec(task).kwargs
    row = {"task": task, "sb3": "sb3_cfg_entry_point" in kwargs,
           "rsl_rl": "rsl_rl_cfg_entry_point" in kwargs}  # fmt: skip
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            cfg = parse_env_cfg(task, device="cpu", num_envs=1)
    except Exception as exc:  # a task whose config cannot even be built here
        return {**row, "verdict": f"config error: {type(exc).__name__}: {exc}"[:200]}
    files = asset_files(cfg, root)
    standin = task in LOCAL_STANDINS
    row.update(assets=files, cameras=_cameras(cfg), standin=standin)
    if row["cameras"]:
        row["verdict"] = "needs a renderer (camera sensors): a GPU with Isaac Sim's RTX"
    elif files and not standin:
        row["verdict"] = f"needs {len(files)} asset file(s) (env.kwargs.asset_root)"
    else:
        row["verdict"] = "runs on this CPU (Newton MuJoCo-Warp)"
    return row


def try_run(task: str, timeout: float) -> str:
    m = {"rlcrate": 1, "name": "task-try", "env": {"backend": "isaaclab", "id": task},
         "parallel": {"envs": 8}, "algo": {"name": "PPO", "params": {"n_steps": 8,
         "batch_size": 64, "n_epochs": 1}}, "train": {"timesteps": 64},
         "eval": {"episodes": 1}, "seeds": [0]}  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.yaml"
        path.write_text(yaml.safe_dump(m))
        exe = Path(sys.executable).with_name("rlcrate")
        # its own session: past the timeout the whole group goes (rlcrate and its unit)
        proc = subprocess.Popen([str(exe), "run", str(path), "--out", tmp], text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)  # fmt: skip
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)  # rlcrate ends its units on SIGTERM
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
            return f"did not finish within {timeout:.0f} s"
    return "ran" if proc.returncode == 0 else (err.strip().splitlines() or ["?"])[-1][:400]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--try", dest="attempt", action="store_true")
    ap.add_argument("--also", default="", help="with --try: more tasks to try, comma-separated")
    ap.add_argument("--all", action="store_true", help="with --try: try every task")
    ap.add_argument("--timeout", type=float, default=300, help="with --try: seconds per task")
    ap.add_argument("--out", default="isaaclab-tasks.json")
    args = ap.parse_args()
    with contextlib.redirect_stdout(io.StringIO()):
        import gymnasium as gym
        import isaaclab_tasks  # noqa: F401  (registers the tasks)
        from isaaclab.utils.assets import NUCLEUS_ASSET_ROOT_DIR
    rows = [inspect(t, NUCLEUS_ASSET_ROOT_DIR) for t in sorted(gym.registry)
            if t.startswith("Isaac-")]  # fmt: skip
    also = {t for t in args.also.split(",") if t}
    unknown = also - {r["task"] for r in rows}
    if unknown:
        sys.exit(f"--also: not registered Isaac Lab tasks: {', '.join(sorted(unknown))}")
    for row in rows:
        wanted = args.all or row["verdict"].startswith("runs") or row["task"] in also
        if args.attempt and wanted:
            t0 = time.perf_counter()
            row["tried"] = try_run(row["task"], args.timeout)
            row["tried_s"] = round(time.perf_counter() - t0, 1)
            print(f"{row['task']}: {row['tried']} ({row['tried_s']} s)", file=sys.stderr)
        Path(args.out).write_text(json.dumps(rows, indent=2))
    print("| task | verdict | asset files | sb3 | rsl_rl |\n|---|---|---|---|---|")
    for r in rows:
        tried = f" (tried: {r['tried']})" if "tried" in r else ""
        libs = " | ".join("yes" if r[k] else "no" for k in ("sb3", "rsl_rl"))
        print(f"| {r['task']} | {r['verdict']}{tried} | {len(r.get('assets', []))} | {libs} |")


if __name__ == "__main__":
    main()
