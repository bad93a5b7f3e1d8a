"""Ray and authentication tokens, on real clusters: the tests ignore a `~/.ray/auth_token` left in
HOME by another Ray user, and rlcrate says in one line what to do when a cluster refuses its
token, before any run directory is made and without Ray's own logging."""

from __future__ import annotations

import time

import pytest
import yaml

from tests import ray_nodes
from tests.helpers import rlcrate, toy_manifest

pytestmark = [pytest.mark.ray, pytest.mark.slow]  # each test starts Ray clusters

TOKEN = "a" * 32


@pytest.fixture(scope="module")
def token_cluster(tmp_path_factory):
    """A one-node cluster that demands TOKEN."""
    if ray_nodes.ray_exe() is None:
        pytest.skip("ray is not installed (pip install 'rlcrate[ray]')")
    env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": TOKEN}
    address, head = ray_nodes.start_head(tmp_path_factory.mktemp("ray-token"), cpus=1, env=env)
    yield address
    head.kill()


def _manifest(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(toy_manifest()))  # the trainer is not what is tested
    return path


@pytest.mark.parametrize("client", ["wrong-token", "no-token"])
def test_refused_token_is_one_line_before_any_run_directory(token_cluster, tmp_path, client):
    env = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": "b" * 32} if client == "wrong-token" else {}
    t0 = time.monotonic()
    out = rlcrate(
        "run",
        str(_manifest(tmp_path)),
        "-x",
        "ray",
        "--ray-address",
        token_cluster,
        "--out",
        str(tmp_path / "runs"),
        env_extra={"HOME": str(tmp_path), **env},
    )
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), out.stderr  # no Ray log lines
    assert "refused this client's authentication token" in lines[0] and "RAY_AUTH_TOKEN" in lines[0]
    assert time.monotonic() - t0 < 30  # ray.init alone retried for 20 s, then said nothing useful
    assert not (tmp_path / "runs").exists()


def test_right_token_runs_without_ray_notices(token_cluster, tmp_path):
    out = rlcrate(
        "run",
        str(_manifest(tmp_path)),
        "-x",
        "ray",
        "--ray-address",
        token_cluster,
        "--out",
        str(tmp_path / "runs"),
        env_extra={"HOME": str(tmp_path), "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": TOKEN},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Token authentication" not in out.stdout + out.stderr
    assert "worker.py" not in out.stderr, out.stderr  # Ray's INFO "Connecting to existing ..."


def test_a_foreign_auth_token_in_home_does_not_reach_the_tests_clusters(ray_cluster, tmp_path):
    """What made four Ray tests fail: another user's ~/.ray/auth_token. The tests' Ray settings
    (tests/ray_nodes.py, applied by conftest) keep it out."""
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text("c" * 32)
    out = rlcrate(
        "run",
        str(_manifest(tmp_path)),
        "-x",
        "ray",
        "--ray-address",
        ray_cluster,
        "--out",
        str(tmp_path / "runs"),
        env_extra={"HOME": str(home)},
    )
    assert out.returncode == 0, out.stdout + out.stderr
