"""Bad inputs a hostile or careless user gives the CLI: each must get one line and exit 2.

Shared by tests/reliability/test_bad_inputs.py (one test each) and tests/benchmarks/reliability.py
(counts). `deep` cases are refused only by building the variant (the dry construction before any
unit).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.helpers import tiny_manifest


@dataclass(frozen=True)
class Case:
    name: str
    argv: list[str]
    deep: bool = False  # needs torch and the env: seconds, not milliseconds


def _alias_bomb() -> str:
    lines = ["rlcrate: 1", "name: bomb", "a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        refs = ", ".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    return "\n".join(lines) + "\n"


def _study(dim: dict[str, Any]) -> dict[str, Any]:
    return tiny_manifest(tune={"space": {"algo.params.n_epochs": dim}, "sampler": "grid"})


# name -> manifest text (a dict is dumped as YAML)
MANIFESTS: dict[str, Any] = {
    "alias_bomb": _alias_bomb(),
    "deep_list": "rlcrate: 1\nname: deep\nenv: " + "[" * 10_000 + "]" * 10_000 + "\n",
    "deep_policy_kwargs": yaml.safe_dump(tiny_manifest()).replace(
        "n_epochs: 2", "n_epochs: 2\n    policy_kwargs: " + "{a: " * 300 + "1" + "}" * 300
    ),
    "huge_file": "rlcrate: 1\nname: huge\n" + "# padding\n" * 300_000,
    "list_for_mapping": "rlcrate: 1\nname: x\nenv: [gymnasium, CartPole-v1]\n",
    "list_as_key": "rlcrate: 1\nname: x\n? [a, b]\n: 1\n",
    "duplicate_train": yaml.safe_dump(tiny_manifest()) + "train: {timesteps: 100000}\n",
    "bool_seed": tiny_manifest(seeds=[True]),
    "string_seed": tiny_manifest(seeds=["0"]),
    "string_number": tiny_manifest(parallel__envs="4"),
    "negative_seed": tiny_manifest(seeds=[-1]),
    "nan_expect": yaml.safe_dump(tiny_manifest()) + "expect: {eval.mean_reward: {'>=': .nan}}\n",
    "inf_levels": yaml.safe_dump(tiny_manifest()).replace(
        "eval:\n", "eval:\n  reward_levels: [100, .inf]\n"
    ),
    "nan_learning_rate": yaml.safe_dump(tiny_manifest()).replace(
        "n_epochs: 2", "n_epochs: 2\n    learning_rate: .nan"
    ),
    "matrix_path_and_parent": tiny_manifest(
        matrix=[{"parallel": {"envs": 4, "workers": 1}, "parallel.envs": 8}]
    ),
    "matrix_unknown_path": tiny_manifest(matrix={"algo.paramz.gamma": [0.9]}),
    "empty_file": "",
    "not_utf8": b"\xff\xfe\x00garbage".decode("latin-1"),
    "python_tag": "rlcrate: 1\nname: !!python/object/apply:os.system ['true']\n",
    "top_level_list": "- rlcrate: 1\n",
    "unknown_key": tiny_manifest(trian={"timesteps": 1}),
    "zero_envs": tiny_manifest(parallel__envs=0),
    "workers_over_envs": tiny_manifest(parallel__workers=4),
    "unknown_env": tiny_manifest(env__id="CartPol-v1"),
    "unknown_algo": tiny_manifest(algo__name="PPOO"),
    "unknown_metric": tiny_manifest(expect={"eval.mean_rewrd": {">=": 1}}),
    "name_escape": tiny_manifest(name="../../etc"),
    # absurd values: refused with the bound, before any unit
    "timesteps_1e26": tiny_manifest(train__timesteps=10**26),
    "envs_100000": tiny_manifest(parallel__envs=100_000),
    "duplicate_matrix_entries": tiny_manifest(matrix=[{"parallel.envs": 2}, {"parallel.envs": 2}]),
    "duplicate_matrix_values": tiny_manifest(matrix={"algo.params.n_epochs": [1, 2, 1]}),
    # caught from SB3's source (signature, policy registry) without building anything
    "learning_rate_word": tiny_manifest(algo__params={"n_steps": 64, "learning_rate": "fast"}),
    "net_arch_string": tiny_manifest(
        algo__params={"n_steps": 64, "policy_kwargs": {"net_arch": "64,64"}}
    ),
    "policy_kwargs_string": tiny_manifest(algo__params={"n_steps": 64, "policy_kwargs": "big"}),
    "misspelled_policy": tiny_manifest(algo__policy="MlpPolicyy"),
    "device_potato": tiny_manifest(algo__device="potato"),
    "unknown_activation": tiny_manifest(
        algo__params={"n_steps": 64, "policy_kwargs": {"activation_fn": "Relu"}}
    ),
    "unknown_policy_kwarg": tiny_manifest(
        algo__params={"n_steps": 64, "policy_kwargs": {"net_archs": [64]}}
    ),
    "malformed_schedule": tiny_manifest(algo__params={"n_steps": 64, "learning_rate": "lin_3e-"}),
    "schedule_mapping_typo": tiny_manifest(
        algo__params={"n_steps": 64, "clip_range": {"schedule": "linear", "strat": 0.2}}
    ),
    "normalize_unknown_key": tiny_manifest(algo__normalize={"obs": True, "rewards": False}),
    "zoo_unknown_id": tiny_manifest(algo__defaults="zoo", env__id="CartPol-v1"),
    "zoo_unknown_algo": tiny_manifest(algo__defaults="zoo", algo__name="MaskablePPO"),
    "zoo_unsupported_wrapper": tiny_manifest(
        algo__defaults="zoo", env__id="MiniGrid-DoorKey-5x5-v0"
    ),
    "zoo_replay_buffer_class": tiny_manifest(
        algo__defaults="zoo", algo__name="SAC", env__id="FetchReach-v1", algo__params={}
    ),
    "zoo_on_godot": tiny_manifest(algo__defaults="zoo", env__backend="godot", env__id="ballchase"),
    # an env constructor raising what it raises: one line at env.kwargs
    "env_constructor_keyerror": tiny_manifest(
        env__id="FrozenLake-v1", env__kwargs={"map_name": "9x9"}
    ),
    "env_constructor_valueerror": tiny_manifest(
        env__id="FrozenLake-v1", env__kwargs={"max_episode_steps": -5}
    ),
    # int ranges are counted, never listed: a grid of them too large to list
    "tune_grid_of_a_billion_ints": _study({"int": [1, 10**9]}),
    "tune_grid_of_a_huge_int": _study({"int": [1, 10**40]}),
    "action_noise_shape": tiny_manifest(
        algo__name="TD3", env__id="Pendulum-v1", algo__params={"action_noise": {"type": "pink"}}
    ),
}

# refused by building each variant's env and model (validate --deep, and run before any unit)
DEEP: dict[str, dict[str, Any]] = {
    "negative_n_steps": tiny_manifest(algo__params={"n_steps": -5}),
    "cnn_on_vectors": tiny_manifest(algo__policy="CnnPolicy"),
    "device_cuda_7": tiny_manifest(algo__device="cuda:7"),
    "torch_threads_100000": tiny_manifest(algo__torch_threads=100_000),
}


def _write(folder: Path, name: str, content: Any) -> Path:
    path = folder / f"{name}.yaml"
    text = content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False)
    path.write_text(text, encoding="latin-1" if name == "not_utf8" else "utf-8")
    return path


def _archive(folder: Path, manifest_text: str) -> Path:
    """An archive shaped like `rlcrate archive`'s, whose manifest is `manifest_text`."""
    import tarfile

    run = folder / "archived" / "20260101-000000-abcd"
    run.mkdir(parents=True, exist_ok=True)
    for name in ("manifest.yaml", "resolved.yaml"):
        (run / name).write_text(manifest_text)
    (run / "summary.json").write_text('{"variants": {}}')
    path = folder / "bomb.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.add(run, arcname=run.name)
    return path


def _run_without_units(folder: Path) -> Path:
    """A run directory whose units/ was deleted: resolved.yaml and nothing else."""
    from runner.manifest import Manifest, resolved

    run = folder / "units-deleted" / "tiny" / "20260101-000000-abcd"
    run.mkdir(parents=True, exist_ok=True)
    res = resolved(Manifest.model_validate(tiny_manifest()))
    (run / "resolved.yaml").write_text(yaml.safe_dump(res.dump(), sort_keys=False))
    return run


def cases(folder: Path, out: Path) -> list[Case]:
    """Every bad input, its files written under `folder`; runs would go to `out`."""
    folder.mkdir(parents=True, exist_ok=True)
    ok = _write(folder, "ok", tiny_manifest())
    not_a_run = folder / "plain-dir"
    not_a_run.mkdir(exist_ok=True)
    not_tar = folder / "not.tar.gz"
    not_tar.write_text("not an archive")
    o = ["--out", str(out)]
    bomb_archive = _archive(folder, MANIFESTS["alias_bomb"])
    usage = [
        Case("bare_rlcrate", []),
        Case("run_no_manifest", ["run"]),
        Case("run_missing_file", ["run", str(folder / "nope.yaml"), *o]),
        Case("run_directory", ["run", str(folder), *o]),
        Case("unknown_option", ["run", str(ok), "--bogus", *o]),
        Case("unknown_command", ["frob"]),
        Case("resume_without_path", ["run", str(ok), *o, "--resume"]),
        Case("resume_missing_dir", ["run", str(ok), *o, "--resume", str(folder / "nope")]),
        Case("resume_not_a_run", ["run", str(ok), *o, "--resume", str(not_a_run)]),
        Case("bad_jobs", ["run", str(ok), "--jobs", "trian", *o]),
        Case("bad_executor", ["run", str(ok), "--executor", "nonsense", *o]),
        Case("validate_nothing", ["validate"]),
        Case("validate_dev_zero", ["validate", "/dev/zero"]),
        Case("report_missing", ["report", str(folder / "nope")]),
        Case("report_not_a_run", ["report", str(not_a_run)]),
        Case("archive_not_a_run", ["archive", str(not_a_run), "-o", str(folder / "a.tgz")]),
        Case("reproduce_not_tar", ["reproduce", str(not_tar), *o]),
        Case("reproduce_alias_bomb", ["reproduce", str(bomb_archive), *o]),
        Case("eval_without_resume", ["eval", str(ok)]),
        Case("image_no_subcommand", ["image"]),
        Case("determinism_steps_2_70", ["check-determinism", str(ok), "--steps", str(2**70)]),
        Case("reproduce_seeds_twice", ["reproduce", str(bomb_archive), "--seeds", "0,0", *o]),
        Case("status_units_deleted", ["status", str(_run_without_units(folder))]),
        Case(
            "ray_address_no_port", ["run", str(ok), "--executor", "ray", "--ray-address", "h", *o]
        ),
        Case(
            "ray_address_unreachable",
            ["run", str(ok), "--executor", "ray", "--ray-address", "127.0.0.1:1", *o],
        ),
    ]
    files = [
        Case(f"manifest_{name}", ["validate", str(_write(folder, name, content))])
        for name, content in MANIFESTS.items()
    ]
    files.append(Case("run_alias_bomb", ["run", str(folder / "alias_bomb.yaml"), *o]))
    raising = str(folder / "env_constructor_keyerror.yaml")
    files.append(Case("run_env_constructor_raises", ["run", raising, *o]))
    deep = [
        Case(f"deep_{name}", ["run", str(_write(folder, name, content)), *o], deep=True)
        for name, content in DEEP.items()
    ]
    return usage + files + deep
