"""Parity with rl-zoo3's own train.py (a script, not a test): the same zoo entry trained by
`rlcrate run` (`algo.defaults: zoo`) and by `python -m rl_zoo3.train`, same steps, paired seeds,
both evaluated with rlcrate's protocol on the same eval seed (the zoo's model and its
statistics loaded frozen, as the rlcrate unit's are; its vecnormalize.pkl converted to arrays).

    .venv/bin/python tests/benchmarks/bench_zoo_parity.py --zoo-python ZOO_VENV/bin/python \\
        --entry ppo:Acrobot-v1 --entry ppo:MountainCar-v0 --steps 16384 --seeds 0 1 \\
        [--episodes 10] [--out zoo-parity.json]

ZOO_VENV has rl_zoo3 and the same torch / Stable-Baselines3 / gymnasium versions as .venv.
Training steps/s on both sides is env steps / wall time of `model.learn` (rlcrate's
train_steps_per_s; the zoo's learn is timed by wrapping it), one torch thread each. Runs of a
seed pair alternate which side goes first.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ZOO_DRIVER = """
import runpy, sys, time
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.off_policy_algorithm import OffPolicyAlgorithm
for cls in (OnPolicyAlgorithm, OffPolicyAlgorithm):
    def wrap(orig):
        def learn(self, *a, **k):
            t0 = time.perf_counter()
            out = orig(self, *a, **k)
            print("ZOO_LEARN", self.num_timesteps, time.perf_counter() - t0, flush=True)
            return out
        return learn
    cls.learn = wrap(cls.learn)
sys.argv = ["train.py", *sys.argv[1:]]
runpy.run_module("rl_zoo3.train", run_name="__main__")
"""


def _nice() -> list[str]:
    return ["nice", "-n", "10"]


def run_rlcrate(algo: str, env_id: str, steps: int, seed: int, episodes: int, tmp: Path) -> dict:
    m = {
        "rlcrate": 1,
        "name": "parity",
        "env": {"backend": "gymnasium", "id": env_id},
        "algo": {"name": algo.upper(), "defaults": "zoo"},
        "train": {"timesteps": steps},
        "eval": {"episodes": episodes},
        "seeds": [seed],
    }
    path = tmp / f"rl-{seed}.yaml"
    path.write_text(yaml.safe_dump(m))
    exe = Path(sys.executable).with_name("rlcrate")
    out = tmp / f"rl-{seed}"
    proc = subprocess.run(
        [*_nice(), str(exe), "run", str(path), "--out", str(out)], text=True, capture_output=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = next((out / "parity").iterdir())
    unit = run / f"units/default/seed-{seed}"
    status = json.loads((unit / "status.json").read_text())
    ev = json.loads((unit / "eval.json").read_text())
    return {
        "run": str(run),
        "unit": str(unit),
        "steps": status["timesteps_done"],
        "steps_per_s": status["train_steps_per_s"],
        "eval_mean": ev["mean"],
        "eval_returns": [e["return"] for e in ev["episodes"]],
    }


def run_zoo(zoo_python: str, algo: str, env_id: str, steps: int, seed: int, tmp: Path) -> dict:
    logs = tmp / f"zoo-{seed}"
    argv = [
        *_nice(),
        zoo_python,
        "-c",
        ZOO_DRIVER,
        "--algo",
        algo,
        "--env",
        env_id,
        "-n",
        str(steps),
        "--seed",
        str(seed),
        "--num-threads",
        "1",
        "--eval-freq",
        "-1",
        "-f",
        str(logs),
        "--vec-env",
        "dummy",
        "--verbose",
        "0",
    ]
    proc = subprocess.run(argv, text=True, capture_output=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("ZOO_LEARN")][-1]
    _, done, seconds = line.split()
    (folder,) = list((logs / algo).iterdir())
    return {"folder": str(folder), "steps": int(done), "steps_per_s": int(done) / float(seconds)}


def evaluate_zoo_model(rl: dict, zoo: dict, env_id: str, seed: int) -> dict:
    """The zoo's model under rlcrate's evaluation: the same config and eval seed as rlcrate's."""
    from runner.record.seeding import derive
    from runner.run.unit import unit_config
    from runner.trainers.sb3.evaluation import evaluate

    cfg = unit_config(Path(rl["run"]), "default", 0)
    unit = Path(tempfile.mkdtemp(prefix="zoo-eval-"))
    folder = Path(zoo["folder"])
    shutil.copy(folder / f"{env_id}.zip", unit / "model.zip")
    # The zoo's statistics are a pickle that this script's own zoo run wrote: trusted here (and
    # only here), unpickled, and written as the arrays rlcrate reads.
    import pickle

    from runner.trainers.sb3.files import STATS_FILE, write_stats

    theirs = folder / env_id / "vecnormalize.pkl"
    if theirs.is_file():
        with theirs.open("rb") as f:
            write_stats(pickle.load(f), unit / STATS_FILE)  # noqa: S301  (our own zoo run's)
    evaluate(cfg, unit, derive(seed))
    ev = json.loads((unit / "eval.json").read_text())
    return {"eval_mean": ev["mean"], "eval_returns": [e["return"] for e in ev["episodes"]]}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--zoo-python", required=True)
    p.add_argument(
        "--entry", action="append", required=True, help="algo:env_id, e.g. ppo:Acrobot-v1"
    )
    p.add_argument("--steps", type=int, default=16384)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--episodes", type=int, default=10)
    p.add_argument("--out", type=Path, default=Path("zoo-parity.json"))
    a = p.parse_args()
    rows = []
    for entry in a.entry:
        algo, env_id = entry.split(":")
        for i, seed in enumerate(a.seeds):
            tmp = Path(tempfile.mkdtemp(prefix="zoo-parity-"))
            load = os.getloadavg()[0]
            if i % 2 == 0:
                rl = run_rlcrate(algo, env_id, a.steps, seed, a.episodes, tmp)
                zoo = run_zoo(a.zoo_python, algo, env_id, a.steps, seed, tmp)
            else:
                zoo = run_zoo(a.zoo_python, algo, env_id, a.steps, seed, tmp)
                rl = run_rlcrate(algo, env_id, a.steps, seed, a.episodes, tmp)
            zoo.update(evaluate_zoo_model(rl, zoo, env_id, seed))
            row = {
                "entry": entry,
                "seed": seed,
                "rlcrate": rl,
                "zoo": zoo,
                "load_before": load,
                "steps_per_s_ratio": rl["steps_per_s"] / zoo["steps_per_s"],
            }
            rows.append(row)
            print(
                f"{entry} seed {seed}: eval rlcrate {rl['eval_mean']:.1f} zoo "
                f"{zoo['eval_mean']:.1f}; steps/s rlcrate {rl['steps_per_s']:.0f} zoo "
                f"{zoo['steps_per_s']:.0f} ratio {row['steps_per_s_ratio']:.3f}",
                flush=True,
            )
    a.out.write_text(json.dumps({"args": vars(a) | {"out": str(a.out)}, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
