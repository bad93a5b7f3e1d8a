"""The trainer seam changed no result: a run today matches one recorded before the refactor.

`golden/sb3_reference.json` was recorded with the code before the trainer seam (commit cb825ae) by
`python -m tests.trainers.sb3.test_trainer_identity`: the same tiny PPO manifest, two seeds,
stochastic evaluation. Re-recorded for numpy 2.4.6 by running this module from a worktree of cb825ae
(this file copied in, its contract-field check emptied, PYTHONPATH set to the worktree so the runner
and its units are the old code). Same seed must give the same eval returns, exactly: they are the
same on any x86 CPU. The final parameters are compared by each tensor's L2 norm, within a relative
1e-4 (1e-6 absolute for the tiny biases), not by a hash of their bytes: the bytes differ in the last
bits between CPUs whose math libraries take other SIMD paths (AVX-512 or not) with the same
packages. The norms were added by running this module with today's code on a CPU whose bytes still
hashed as the pre-seam recording did (so they are that model's norms). Float results depend on the
numeric libraries, so the test skips (saying why) where their versions differ from the recording's.

The eval returns were re-recorded once since, on purpose: evaluation used to load the model with
its env, and SB3's load reseeds that env with the training seed, so the eval episodes were not
the eval seed's. Now the model is loaded without the env. Training is untouched by that change:
the final parameters still match the pre-seam recording (checked when the returns were
re-recorded, and by this test).
"""

from __future__ import annotations

import importlib.metadata
import io
import json
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest
import yaml

from runner.trainers.base import EVAL_FIELDS, TRAIN_FIELDS
from tests.helpers import TESTS, rlcrate, run_dir_of, tiny_manifest

REFERENCE = TESTS / "golden" / "sb3_reference.json"
PACKAGES = ("torch", "stable-baselines3", "gymnasium", "numpy")
CONTRACT_FIELDS = TRAIN_FIELDS + EVAL_FIELDS  # the trainer contract's status.json fields


def _params_l2(model_zip: Path) -> dict[str, float]:
    import torch

    with zipfile.ZipFile(model_zip) as z:
        state = torch.load(io.BytesIO(z.read("policy.pth")), map_location="cpu")
    return {name: float(state[name].double().norm()) for name in sorted(state)}


def record(out: Path) -> dict:
    """Run the reference manifest with the installed rlcrate; what the comparison needs."""
    path = out / "ref.yaml"
    path.write_text(yaml.safe_dump(tiny_manifest(seeds=[0, 1], eval__deterministic=False)))
    res = rlcrate("run", str(path), "--out", str(out / "runs"))
    assert res.returncode == 0, res.stderr
    units = run_dir_of(out / "runs", "tiny") / "units" / "default"
    seeds = {}
    for unit in sorted(units.iterdir()):
        status = json.loads((unit / "status.json").read_text())
        missing = [f for f in CONTRACT_FIELDS if f not in status]
        assert not missing, f"status.json lacks {missing}"
        ev = json.loads((unit / "eval.json").read_text())
        seeds[unit.name] = {
            "returns": [e["return"] for e in ev["episodes"]],
            "params_l2": _params_l2(unit / "model.zip"),
        }
    versions = {p: importlib.metadata.version(p) for p in PACKAGES}
    return {"versions": versions, "seeds": seeds}


@pytest.mark.slow
@pytest.mark.gymnasium
def test_same_results_as_before_the_trainer_seam(tmp_path):
    ref = json.loads(REFERENCE.read_text())
    here = {p: importlib.metadata.version(p) for p in PACKAGES}
    if here != ref["versions"]:
        pytest.skip(f"recorded with {ref['versions']}, installed {here}")
    here_seeds = record(tmp_path)["seeds"]
    assert sorted(here_seeds) == sorted(ref["seeds"])
    for seed, want in ref["seeds"].items():
        got = here_seeds[seed]
        assert got["returns"] == want["returns"], seed  # eval returns: exactly
        assert sorted(got["params_l2"]) == sorted(want["params_l2"]), seed
        for name, norm in want["params_l2"].items():
            assert got["params_l2"][name] == pytest.approx(norm, rel=1e-4, abs=1e-6), (seed, name)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        data = record(Path(tmp))
    REFERENCE.write_text(json.dumps(data, indent=1) + "\n")
    print(json.dumps(data, indent=1), file=sys.stderr)
