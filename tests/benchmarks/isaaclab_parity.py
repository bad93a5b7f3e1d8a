"""Parity with Isaac Lab's own installed training workflows (a script, not a test): interleaved
pairs of Isaac Lab's `isaaclab_rl.entrypoints` train (`--rl_library rsl_rl` or `sb3`) and an
`rlcrate run` of the same task with `algo.defaults: task`, same num_envs, iterations and seed,
in the same Python (the GPU environment). Run from the checkout:

    .cache/gpu-env/bin/python tests/benchmarks/isaaclab_parity.py --library rsl_rl \\
        [--envs 8] [--iterations 4] [--pairs 3] [--seed 0] [--torch-threads 1] [--out parity.json]

On a CPU machine without network, Isaac Lab's workflow starts (it needs no Kit: its launcher
picks Newton's MuJoCo-Warp on the CPU) but cannot fetch the cartpole's USD and ground plane
from NVIDIA's asset server (isaaclab/utils/assets.py `_download_file`: FileNotFoundError). The
smallest change that lets it run is three Hydra overrides on its command line, the same
stand-in rlcrate uses: `env.scene.ground=null env.scene.cartpole.spawn.usd_path=<the local
cartpole.usda>` and, for RSL-RL, `agent.device=cpu` (its runner config defaults to cuda:0).

Figures, like for like (the same library's own measure on both sides, so neither side's
set-up enters it): RSL-RL: env steps / the sum of its per-iteration collection and learning
times (its own TensorBoard, `Perf/collection_time` + `Perf/learning_time`), and its
`Train/mean_reward` at the last iteration; SB3: its own `time/fps` and `rollout/ep_rew_mean` at
the last step (Isaac Lab's SB3 script logs them once, at `--log_interval` = the total steps).
End to end, each whole process's wall time (`ratio_wall_s`: ours / theirs; ours also
evaluates the model and writes the report). Beside them, each side's whole-training figure as it
reports it: theirs env steps / "Training
time" (which also counts wrapping the env, building the agent and saving it), ours the unit's
`train_steps_per_s` (learn only). Torch threads differ unless asked: an rlcrate unit uses
`algo.torch_threads` (1 by default; `--torch-threads N` sets it), Isaac Lab's script torch's
default (one per core).
The machine may be shared: the load average before and after each run is recorded beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

TASK = "Isaac-Cartpole-Direct"
STEPS_PER_ENV = {"rsl_rl": 16, "sb3": 16}  # num_steps_per_env / n_steps of the task's configs
CARTPOLE_USD = Path.home() / ".cache" / "rlcrate" / "cartpole.usda"  # rlcrate's stand-in
# The same library's own figures on both sides: RSL-RL's TensorBoard (per iteration), SB3's.
TAGS = {
    "rsl_rl": ("Train/mean_reward", ("Perf/collection_time", "Perf/learning_time")),
    "sb3": ("rollout/ep_rew_mean", ("time/fps",)),
}


def theirs(library: str, a: argparse.Namespace, cwd: Path) -> dict:
    """Isaac Lab's installed `run_train_cli` with the three overrides that let it run here."""
    steps = a.iterations * STEPS_PER_ENV[library] * a.envs
    overrides = ["env.scene.ground=null", f"env.scene.cartpole.spawn.usd_path={CARTPOLE_USD}"]
    overrides += ["agent.device=cpu"]  # RSL-RL: its runner config says cuda:0; SB3: its yaml
    code = (
        "import sys; from isaaclab_rl.entrypoints import run_train_cli; sys.exit(run_train_cli())"
    )
    cmd = [sys.executable, "-c", code, "--rl_library", library, "--task", TASK,
           "--num_envs", str(a.envs), "--max_iterations", str(a.iterations),
           "--seed", str(a.seed), "--device", "cpu", *overrides]  # fmt: skip
    if library == "sb3":  # one log line, at the end: SB3's fps and reward (default 100000)
        cmd[-len(overrides) : -len(overrides)] = ["--log_interval", str(steps)]
    cwd.mkdir(parents=True)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=3600, check=False)
    wall = time.perf_counter() - t0
    text = out.stdout + out.stderr
    train_s = re.findall(r"Training time: ([\d.]+) seconds", text)
    return {
        "rc": out.returncode,
        "steps": steps,
        **_own_figures(library, cwd / "logs", steps),
        "whole_steps_per_s": steps / float(train_s[-1]) if train_s else None,
        "wall_s": wall,
        "load_before": load,
        "load_after": os.getloadavg()[0],
        "command": " ".join(cmd[:2] + [repr(code)] + cmd[3:]),
        "tail": text.strip().splitlines()[-3:] if out.returncode else [],
    }


def ours(library: str, a: argparse.Namespace, out_dir: Path) -> dict:
    """`rlcrate run` of the same task with `algo.defaults: task`."""
    algo = "rsl_rl_ppo" if library == "rsl_rl" else "PPO"
    steps = a.iterations * STEPS_PER_ENV[library] * a.envs
    m = {"rlcrate": 1, "name": f"parity-{library}", "env": {"backend": "isaaclab", "id": TASK},
         "parallel": {"envs": a.envs},
         "algo": {"name": algo, "defaults": "task", "torch_threads": a.torch_threads},
         "train": {"timesteps": steps}, "eval": {"episodes": 1}, "seeds": [a.seed]}  # fmt: skip
    out_dir.mkdir(parents=True)
    path = out_dir / f"{library}.yaml"
    path.write_text(yaml.safe_dump(m))
    cmd = [str(Path(sys.executable).with_name("rlcrate")), "run", str(path), "--out", str(out_dir)]
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=3600, check=False)
    wall = time.perf_counter() - t0
    status_files = sorted(out_dir.glob("*/*/units/*/seed-*/status.json"))
    status = json.loads(status_files[-1].read_text()) if status_files else {}
    unit = status_files[-1].parent if status_files else out_dir
    # RSL-RL's own TensorBoard is in unit/rsl_rl; SB3's is the unit's tb/
    own = _own_figures(library, unit / ("rsl_rl" if library == "rsl_rl" else "tb"), steps)
    return {
        "rc": out.returncode,
        "steps": status.get("timesteps_done"),
        **own,
        "whole_steps_per_s": status.get("train_steps_per_s"),
        "wall_s": wall,
        "load_before": load,
        "load_after": os.getloadavg()[0],
        "manifest": m,
        "tail": out.stderr.strip().splitlines()[-3:] if out.returncode else [],
    }


def _own_figures(library: str, root: Path, steps: int) -> dict:
    """steps_per_s and reward from the library's own TensorBoard files under root."""
    reward_tag, time_tags = TAGS[library]
    reward = _scalars(root, reward_tag)
    split: dict[str, float] = {}  # RSL-RL: where the loop's time went
    if library == "rsl_rl":
        split = {tag.split("/")[1]: sum(v for _, v in _scalars(root, tag)) for tag in time_tags}
        loop_s = sum(split.values())
        rate = steps / loop_s if loop_s else None
    else:
        fps = _scalars(root, "time/fps")
        rate = fps[-1][1] if fps else None
    return {"steps_per_s": rate, "reward": reward[-1][1] if reward else None,
            "reward_step": reward[-1][0] if reward else None, **split}  # fmt: skip


def _scalars(root: Path, tag: str) -> list[tuple[int, float]]:
    """(step, value) of one tag over every event file under root, by step."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    found: dict[int, float] = {}
    for events in root.rglob("events.out.tfevents.*"):
        acc = EventAccumulator(str(events), size_guidance={"scalars": 0})
        acc.Reload()
        if tag in acc.Tags()["scalars"]:
            found.update({e.step: e.value for e in acc.Scalars(tag)})
    return sorted(found.items())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--library", choices=("rsl_rl", "sb3"), default="rsl_rl")
    ap.add_argument("--envs", type=int, default=8)
    ap.add_argument("--iterations", type=int, default=4)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--torch-threads", type=int, default=1, help="rlcrate's algo.torch_threads")
    ap.add_argument("--out", default="isaaclab-parity.json")
    a = ap.parse_args()
    pairs = []
    info = {"args": vars(a), "cpus": os.cpu_count(), "argv": sys.argv}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.pairs):  # interleaved, alternating which goes first
            runs = [("theirs", theirs), ("ours", ours)][:: 1 if i % 2 == 0 else -1]
            pair: dict[str, Any] = {
                name: fn(a.library, a, Path(tmp) / f"{name}-{i}") for name, fn in runs
            }
            pair["first"] = runs[0][0]
            for key in ("steps_per_s", "whole_steps_per_s", "wall_s"):
                t, o = pair["theirs"][key], pair["ours"][key]
                pair[f"ratio_{key}"] = o / t if t and o else None
            pairs.append(pair)
            Path(a.out).write_text(json.dumps({**info, "pairs": pairs}, indent=2))
    ratios = ("first", "ratio_steps_per_s", "ratio_whole_steps_per_s", "ratio_wall_s")
    print(json.dumps([{k: p[k] for k in ratios}
                      | {s: (p[s]["steps_per_s"], p[s]["reward"]) for s in ("theirs", "ours")}
                      for p in pairs], indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
