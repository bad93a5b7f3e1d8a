"""Shared fixtures."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tests import ray_nodes
from tests.helpers import PLUGINS, ROOT, checkout_env, rlcrate, run_dir_of, tiny_manifest

# Every subprocess a test starts (the console script, units, Ray and Slurm workers) imports this
# checkout, not whichever one the venv's editable install points to.
os.environ["PYTHONPATH"] = checkout_env()["PYTHONPATH"]
if str(ROOT) not in sys.path[:1]:
    sys.path.insert(0, str(ROOT))
if str(PLUGINS) not in sys.path:
    sys.path.insert(1, str(PLUGINS))
# Ray in every test (clusters, drivers, units) ignores the user's ~/.ray (see ray_nodes)
for _var in ray_nodes.TOKEN_VARS:
    os.environ.pop(_var, None)
os.environ.update(ray_nodes.ISOLATION)
# Compiled programs outlive the test run (in the checkout's ignored .cache/, shared by `make test`
# and `make test-gpu-env`): most of a tiny Brax or Isaac Lab run is XLA compilation and Warp's
# kernel builds. JAX caches only programs that took a second or more to compile by default; the
# tiny test networks compile faster than that, so every program is cached.
CACHE = ROOT / ".cache"
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", str(CACHE / "jax"))
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "-1")
os.environ.setdefault("WARP_CACHE_PATH", str(CACHE / "warp"))
# The property tests (Hypothesis) draw new examples on every developer's run, where a new find
# is welcome; under CI (CI set, as .ci/run and most CI services do) they draw the same ones each
# time, so a gate never fails on chance. What they found is kept as explicit @example cases.
try:
    from hypothesis import settings
except ImportError:  # the GPU environment's test tools are pytest and xdist: no property tests
    pass
else:
    settings.register_profile("ci", derandomize=True, database=None)
    settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture
def write_manifest(tmp_path):
    def write(data: dict | str, name: str = "m.yaml") -> Path:
        path = tmp_path / name
        text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
        path.write_text(textwrap.dedent(text))
        return path

    return write


@pytest.fixture
def small_disk(tmp_path):
    """A 600 KiB tmpfs (the tests run as root): room for a run directory, not for its training."""
    import subprocess

    mnt = tmp_path / "disk"
    mnt.mkdir()
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {res.stderr.strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


# The one finished run most run-directory tests read: two seeds (a unit of another seed to damage
# or drop), checkpoints every 256 of its 1024 steps (a newest checkpoint, and one before it, to
# resume from), 10 eval episodes and a claim that holds (reproduce's sample and its expect check).
TINY_RUN = tiny_manifest(
    seeds=[0, 1],
    train__timesteps=1024,
    train__checkpoint_every=256,
    eval__episodes=10,
    expect={"eval.mean_reward": {">=": 0}},
)


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    """A finished CartPole run (real SB3 training), trained once per test run and shared by every
    test that reads one; a test that changes it changes a copy. pytest-xdist's workers share it
    too: the first to ask trains it in their common base folder, under a file lock."""

    def train(home: Path) -> None:
        path = home / "tiny.yaml"
        path.write_text(yaml.safe_dump(TINY_RUN, sort_keys=False))
        res = rlcrate("run", str(path), "--out", str(home / "runs"), report=True)
        assert res.returncode == 0, res.stdout + res.stderr

    return run_dir_of(_shared_once(tmp_path_factory, "tiny-run", train) / "runs", "tiny")


def _shared_base(tmp_path_factory) -> Path:
    """The test run's base temporary folder, which pytest-xdist's workers share."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the workers' folders are popen-gwN under one base
    return base


@pytest.fixture(scope="session", autouse=True)
def session_cache(tmp_path_factory) -> Path:
    """The test run's own rlcrate cache (RLCRATE_CACHE_DIR, for every process a test starts):
    what one test's run remembers (dry constructions that passed, determinism verdicts, engine
    probes) the others of this run may use, across xdist workers, but never a cache an earlier
    run, another checkout or the user left, so no result depends on one. A test that needs a
    cache of its own still sets one."""
    cache = _shared_base(tmp_path_factory) / "rlcrate-cache"
    cache.mkdir(exist_ok=True)
    os.environ["RLCRATE_CACHE_DIR"] = str(cache)
    return cache


def _shared_once(tmp_path_factory, name: str, make) -> Path:
    """`make(home)` run once per test run in a folder `name` of the base temporary folder, which
    pytest-xdist's workers share (the first to ask makes it, under a file lock)."""
    import fcntl

    base = _shared_base(tmp_path_factory)
    home = base / name
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (home / "done").exists():
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir()
            make(home)
            (home / "done").touch()
    return home


@pytest.fixture(scope="session")
def exported_ballchase(tmp_path_factory) -> Path:
    """BallChase as godot-rl's course exports a game: three arenas in its scene, exported by
    `rlcrate godot export` with the installed Godot 4 template (a real export, run as built)."""
    from runner.backends.godot import engine_problem

    problem = engine_problem(4)
    if problem:
        pytest.skip(problem)

    def export(home: Path) -> None:
        out = rlcrate("godot", "export", "ballchase", "--instances", "3", "-o",
                      str(home / "chase3.x86_64"))  # fmt: skip
        assert out.returncode == 0, out.stdout + out.stderr

    return _shared_once(tmp_path_factory, "exported-ballchase", export) / "chase3.x86_64"


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A one-node Ray cluster on ports of its own, stopped by killing exactly its processes
    (never `ray stop`, which would stop every Ray on the machine)."""
    from tests import ray_nodes

    if ray_nodes.ray_exe() is None:
        pytest.skip("ray is not installed (pip install 'rlcrate[ray]')")
    address, head = ray_nodes.start_head(tmp_path_factory.mktemp("ray"), cpus=2)
    try:
        yield address
    finally:
        head.kill()


@pytest.fixture(scope="session")
def mlflow_uri(tmp_path_factory):
    """The test run's one real MLflow server (a worker's: test_track and test_track_bounds are one
    xdist group); each test uses an experiment of its own."""
    pytest.importorskip("mlflow", reason="pip install 'rlcrate[track]'")
    from tests.mlflow_server import mlflow_server

    with mlflow_server(tmp_path_factory.mktemp("mlflow")) as uri:
        yield uri


def pytest_configure(config):
    # A suite started from a background job (`nohup ... &`, some CI runners) inherits SIGINT as
    # ignored, and every process it starts would too: the tests that press Ctrl-C on a run would
    # then test nothing. Children get the default back on exec once this process handles it.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_addoption(parser):
    parser.addoption(
        "--run-isaaclab",
        action="store_true",
        help="run the Isaac Lab tests (make test-gpu-env runs them in the GPU environment)",
    )


# `make test` runs the suite on two pytest-xdist workers (`-n 2 --dist loadscope
# --no-loadscope-reorder`) a group of tests at a time: a module, so that its module-scoped fixtures
# are made once, or modules that share something machine-wide and so run in turn on one worker
# (the Ray clusters, never two at once on two cores; buildah's image store). The longest groups
# go first (the option keeps this order), so that no long one starts last while the other worker
# idles.
SHARED = {
    "test_ray": "ray", "test_ray_node_loss": "ray", "test_interpreter": "ray",
    "test_ray_token": "ray",
    "test_track": "mlflow", "test_track_bounds": "mlflow",
    "test_images": "image", "test_image_resume": "image", "test_image_export": "image",
    "test_sif": "image",
}  # fmt: skip
LONGEST = (
    "test_slurm",
    "test_brax",
    "test_faults",
    "test_run",
    "ray",
    "test_course_godot",
    "test_godot",
    "test_video",
)


def _group(path: str) -> str:
    module = Path(path.split("::", 1)[0]).stem
    return SHARED.get(module, module)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _group(nodeid)

    return ByGroup(config, log)


def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="Isaac Lab runs in the GPU environment: make test-gpu-env")
    for item in items:
        if item.get_closest_marker("isaaclab") and not config.getoption("--run-isaaclab"):
            item.add_marker(skip)
    rank = {g: i for i, g in enumerate(LONGEST)}
    items.sort(key=lambda item: rank.get(_group(item.nodeid), len(LONGEST)))  # stable
