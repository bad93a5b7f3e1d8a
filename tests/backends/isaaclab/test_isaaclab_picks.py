"""What the isaaclab backend picks for a task on a machine (pure; no Isaac Lab needed)."""

from __future__ import annotations

import pytest

from runner.backends.isaaclab.env import (
    asset_files,
    picks,
    reachable,
    set_dotted,
    unreachable,
)
from runner.errors import BackendUnavailable, FieldError
from runner.manifest.schema import EnvSpec
from tests.helpers import env_spec

NOWHERE = "https://rlcrate-no-such-asset-host/Assets"  # a single-label name: never resolves


def spec(task: str = "Isaac-Cartpole-Direct", **kwargs) -> EnvSpec:
    return env_spec(backend="isaaclab", id=task, kwargs=kwargs)


def test_cpu_machine_without_assets_gets_cpu_newton_and_the_local_cartpole():
    p = picks(spec(), gpu=False, default_root=NOWHERE)
    assert p == {"device": "cpu", "physics": "newton_mjwarp", "cuda_graph": False,
                 "asset_root": None, "local_assets": "cartpole"}  # fmt: skip


def test_gpu_machine_keeps_the_task_defaults(tmp_path):
    p = picks(spec(), gpu=True, default_root=str(tmp_path))
    assert p["device"] == "cuda:0" and p["physics"] is None and p["cuda_graph"] is True
    assert p["asset_root"] == str(tmp_path) and p["local_assets"] is None


def test_kwargs_win_and_a_mirror_folder_counts_as_reachable(tmp_path):
    p = picks(spec(device="cpu", physics="newton_kamino", asset_root=str(tmp_path)),
              gpu=True, default_root=NOWHERE)  # fmt: skip
    assert (p["device"], p["physics"], p["cuda_graph"]) == ("cpu", "newton_kamino", False)
    assert p["asset_root"] == str(tmp_path) and p["local_assets"] is None


def test_unreachable_assets_without_a_stand_in_name_asset_root(tmp_path):
    assert not reachable(str(tmp_path / "missing")) and not reachable(NOWHERE, timeout=2)
    with pytest.raises(BackendUnavailable, match="env.kwargs.asset_root"):
        picks(spec("Isaac-Ant-Direct"), gpu=False, default_root=NOWHERE)


def test_dotted_kwargs_reach_only_existing_config_fields():
    class Scene:
        env_spacing = 4.0

    class Cfg:
        episode_length_s = 5.0
        scene = Scene()

    cfg = Cfg()
    set_dotted(cfg, "scene.env_spacing", 2.0)
    set_dotted(cfg, "episode_length_s", 3.0)
    assert (cfg.scene.env_spacing, cfg.episode_length_s) == (2.0, 3.0)
    with pytest.raises(FieldError, match="no 'scene.spacing'"):
        set_dotted(cfg, "scene.spacing", 1.0)


def test_asset_files_lists_what_the_config_names_under_the_root():
    from dataclasses import dataclass, field

    root = "https://assets.example/Assets"

    @dataclass
    class Spawn:
        usd_path: str = f"{root}/Isaac/Robots/Ant/ant.usd"

    @dataclass
    class Scene:
        robot: Spawn = field(default_factory=Spawn)
        ground: dict = field(default_factory=lambda: {"usd": f"{root}/Isaac/Grid/plane.usda"})
        local: str = "/tmp/elsewhere.usd"

    assert asset_files(Scene(), root + "/") == ["Isaac/Grid/plane.usda", "Isaac/Robots/Ant/ant.usd"]
    err = str(unreachable(spec("Isaac-Ant-Direct"), root, asset_files(Scene(), root)))
    assert "Isaac/Robots/Ant/ant.usd" in err and "set env.kwargs.asset_root" in err
