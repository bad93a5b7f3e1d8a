"""The godot backend against real headless Godot 4 processes: the bundled BallChase project, a
real export of it (`rlcrate godot export`, three arenas in its scene, as godot-rl's course
exports a game) driven by rlcrate and by godot-rl's own client, and games that misbehave.

Every test that starts Godot checks the process table afterwards: no process of the groups it
started may be left, zombies included (the supervisor reaps what it starts).
"""

from __future__ import annotations

import contextlib
import io
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from runner.backends import get_backend, godot
from runner.backends.godot import GodotEnv
from runner.errors import BackendUnavailable, EnvTimeout, FieldError, RunnerError, UserInputError
from runner.manifest.schema import ParallelSpec
from tests.helpers import ROOT

BACKEND = get_backend("godot")

HAVE_GODOT = BACKEND.available() is None and godot.engine_problem(4) is None
_have_godot = pytest.mark.skipif(not HAVE_GODOT, reason="needs Godot 4 (make godot4) and godot-rl")


def needs_godot(test):
    """Starts real Godot processes: skipped without Godot, and slow (not in `make test-fast`)."""
    return pytest.mark.slow(_have_godot(test))


pytestmark = [pytest.mark.godot]
GAME = godot.GAMES_DIR / "ballchase"


def spec(**kw) -> GodotEnv:
    return GodotEnv(**{"backend": "godot", "id": "ballchase", "timeout": 20.0, **kw})


def make(
    env: GodotEnv | None = None,
    envs: int = 2,
    workers: int = 1,
    seed: int = 0,
    log_dir: Path | None = None,
):
    return BACKEND.make_vec_env(
        env or spec(), ParallelSpec(envs=envs, workers=workers), seed=seed, log_dir=log_dir
    )


def group_members(pids: list[int]) -> list[int]:
    """Processes (zombies too) whose id or process group is one of `pids`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        pid, pgid = int(entry.name), int(fields[2])
        if pid in pids or pgid in pids:
            found.append(pid)
    return found


def live_members(pids: list[int]) -> list[int]:
    """As group_members, but not zombies (for processes we are not the parent of)."""
    out = []
    for pid in group_members(pids):
        with contextlib.suppress(OSError):
            stat = Path(f"/proc/{pid}/stat").read_text()
            if stat[stat.rindex(")") + 2] != "Z":
                out.append(pid)
    return out


def wait_until(cond, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def random_steps(venv, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        actions = np.array([venv.action_space.sample() for _ in range(venv.num_envs)])
        if actions.dtype.kind == "i":
            actions = rng.integers(0, 9, size=venv.num_envs)
        out.append(venv.step(actions))
    return out


# -- input checks (no Godot started) ---------------------------------------------------------


def _refused(env: GodotEnv, words: str) -> None:
    problems = BACKEND.check_env(env)
    assert any(words in f"{'.'.join(map(str, p.path))}: {p.message}" for p in problems), problems


def test_bad_ids_and_kwargs(tmp_path):
    _refused(spec(id="ballchas"), "ballchase")
    _refused(spec(id=str(tmp_path / "missing.x86_64")), "does not exist")
    folder = tmp_path / "not a project"
    folder.mkdir()
    _refused(spec(id=str(folder)), "project.godot")
    binary = tmp_path / "game.x86_64"
    binary.write_text("")
    _refused(spec(id=str(binary)), "not executable")
    _refused(spec(kwargs={"action_space": "both"}), "action_space")
    _refused(spec(kwargs={"speed": 3}), "not an argument")
    both = BACKEND.check_env(spec(kwargs={"speed": 3, "episode_steps": 0}))
    assert [p.path[-1] for p in both] == ["speed", "episode_steps"]  # every problem at once
    with pytest.raises(UserInputError, match="multiple"):
        make(envs=5, workers=2)
    [wide] = BACKEND.check_parallel(ParallelSpec(envs=6, workers=4))
    assert "multiple" in wide.message and wide.path == ("parallel", "workers")
    assert BACKEND.check_parallel(ParallelSpec(envs=8, workers=4)) == []
    assert BACKEND.action_kind(spec()) == "Discrete"
    assert BACKEND.action_kind(spec(kwargs={"action_space": "continuous"})) == "Box"


def test_missing_godot_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("RLCRATE_GODOT", str(tmp_path / "nope"))
    with pytest.raises(BackendUnavailable) as err:
        godot.godot_binary()
    assert "make godot4" in str(err.value) and "\n" not in str(err.value)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("RLCRATE_GODOT")
    with pytest.raises(BackendUnavailable, match="No Godot 4 binary found on PATH.*make godot4"):
        godot.godot_binary(4)
    with pytest.raises(BackendUnavailable, match="apt-get install godot3-server"):
        godot.godot_binary(3)


def _elf(path: Path, machine: int = 62, interp: str | None = None) -> Path:
    """A 64-bit ELF executable's headers (nothing runnable): its machine and loader as asked."""
    import struct

    phoff, name = 64, (interp or "").encode() + b"\0"
    head = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    head += struct.pack("<HHIQQQIHHHHHH", 2, machine, 1, 0, phoff, 0, 0, 64, 56, 1, 64, 0, 0)
    phdr = struct.pack("<IIQQQQQQ", 3 if interp else 1, 4, 120, 0, 0, len(name), len(name), 1)
    path.write_bytes(head + phdr + name)
    path.chmod(0o755)
    return path


def test_exported_games_that_cannot_run_here_are_refused_before_launch(tmp_path):
    _refused(spec(id=str(_elf(tmp_path / "arm.x86_64", machine=183))), "a game for arm64")
    gone = _elf(tmp_path / "moved.x86_64", interp=str(tmp_path / "moved.x86_64.libs/ld.so"))
    _refused(spec(id=str(gone)), "needs the dynamic loader")
    _refused(spec(id=str(gone)), "export it again")
    text = tmp_path / "notes.x86_64"
    text.write_text("not a game")
    text.chmod(0o755)
    _refused(spec(id=str(text)), "neither an ELF executable nor a script")
    assert BACKEND.check_env(spec(id=str(_elf(tmp_path / "ok.x86_64")))) == []


def test_a_project_of_the_other_godot_version_is_one_line(tmp_path, monkeypatch):
    """A Godot 3 project where only Godot 4 is installed, and the reverse: refused at env.id."""
    old = Path(shutil.copytree(ROOT / "tests/games/ballchase3", tmp_path / "old"))
    only = tmp_path / "bin"
    only.mkdir()
    monkeypatch.setenv("PATH", str(only))
    monkeypatch.delenv("RLCRATE_GODOT", raising=False)
    [problem] = BACKEND.check_env(spec(id=str(old)))
    assert problem.path == ("env", "id") and "is a Godot 3 project" in problem.message
    assert "apt-get install godot3-server" in problem.message
    assert "converts it" in problem.message
    [problem] = BACKEND.check_env(spec())  # the bundled game
    assert "runs on Godot 4" in problem.message and "make godot4" in problem.message


def _free_port(n: int = 1) -> int:
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        try:
            with contextlib.ExitStack() as stack:
                for i in range(n):
                    s = stack.enter_context(socket.socket())
                    s.bind(("127.0.0.1", base + i))
            return base
        except OSError:
            continue
    raise RuntimeError("no free ports")


@needs_godot
def test_conformance_godot_rl_godotenv(exported_ballchase):
    """godot-rl's own client, unchanged, launches the exported game as it launches any."""
    from godot_rl.core.godot_env import GodotEnv

    with contextlib.redirect_stdout(io.StringIO()):
        env = GodotEnv(env_path=str(exported_ballchase), port=_free_port(), framerate=60)
    pid = env.proc.pid
    try:
        assert env.num_envs == 3
        assert env.observation_space["obs"].shape == (10,)
        assert env.action_space[0].n == 9  # a Tuple of one Discrete without conversion
        obs, infos = env.reset()
        assert len(obs) == 3 and len(infos) == 3
        assert all(len(o["obs"]) == 10 and max(map(abs, o["obs"])) <= 1.0 for o in obs)
        for _ in range(5):
            obs, reward, done, trunc, info = env.step([np.array([1, 3, 5])])
        assert len(obs) == len(reward) == len(done) == 3 and not any(done)
        balls = env.call("get_ball_position")
        assert len(balls) == 3 and all(len(b) == 2 for b in balls)
    finally:
        with contextlib.redirect_stdout(io.StringIO()):
            env.close()
    assert env.proc.wait(10) == 0  # the game quits by itself on "close"
    assert group_members([pid]) == []


@needs_godot
def test_conformance_stable_baselines_godot_env(exported_ballchase):
    """godot-rl's SB3 wrapper with n_parallel processes of the exported game: 2 x its 3 agents."""
    from godot_rl.wrappers.stable_baselines_wrapper import StableBaselinesGodotEnv

    with contextlib.redirect_stdout(io.StringIO()):
        venv = StableBaselinesGodotEnv(
            str(exported_ballchase), n_parallel=2, port=_free_port(2), framerate=60, speedup=1
        )
    pids = [e.proc.pid for e in venv.envs]
    try:
        assert venv.num_envs == 6
        obs = venv.reset()
        assert obs["obs"].shape == (6, 10)
        for _ in range(3):
            obs, rew, done, info = venv.step(np.array([[0], [2], [4], [8], [1], [3]]))
        assert obs["obs"].shape == (6, 10) and rew.shape == (6,) and done.shape == (6,)
    finally:
        with contextlib.redirect_stdout(io.StringIO()):
            venv.close()
    for e in venv.envs:
        assert e.proc.wait(10) == 0
    assert group_members(pids) == []


# -- our VecEnv ------------------------------------------------------------------------------


@needs_godot
@pytest.mark.parametrize("workers,envs,kind", [(1, 3, "discrete"), (2, 4, "continuous")])
def test_vector_size_and_logs(tmp_path, workers, envs, kind):
    from stable_baselines3.common.env_checker import check_env  # noqa: F401 (SB3 importable)

    venv = make(
        spec(kwargs={"action_space": kind, "episode_steps": 20}),
        envs=envs,
        workers=workers,
        log_dir=tmp_path,
    )
    pids = venv.pids
    try:
        assert venv.num_envs == envs and len(pids) == workers and len(set(venv.ports)) == workers
        assert venv.observation_space.shape == (10,)
        assert (venv.action_space.n == 9) if kind == "discrete" else venv.action_space.shape == (2,)
        obs = venv.reset()
        assert obs.shape == (envs, 10) and obs.dtype == np.float32
        steps = random_steps(venv, 25)
        obs, rew, done, infos = steps[19]  # episode_steps 20: every instance ends here
        assert done.all() and rew.dtype == np.float32 and len(infos) == envs
        assert all(
            i["TimeLimit.truncated"] and i["terminal_observation"].shape == (10,) for i in infos
        )
        assert not any(s[2].any() for s in steps[:19] + steps[20:])
    finally:
        venv.close()
    assert group_members(pids) == []
    assert [p.name for p in sorted(tmp_path.glob("godot-*.log"))] == [
        f"godot-{i}.log" for i in range(workers)
    ]


@needs_godot
def test_same_seed_same_ball_sequence():
    def run(seed: int):
        venv = make(spec(kwargs={"episode_steps": 30}), envs=4, workers=2, seed=seed)
        try:
            obs = [venv.reset()]
            balls = [venv.env_method("get_ball_position")]
            for o, *_ in random_steps(venv, 70, seed=1):
                obs.append(o)
                balls.append(venv.env_method("get_ball_position"))
            return np.array(obs), np.array(balls)
        finally:
            venv.close()

    obs_a, balls_a = run(7)
    obs_b, balls_b = run(7)
    obs_c, balls_c = run(8)
    np.testing.assert_array_equal(obs_a, obs_b)
    np.testing.assert_array_equal(balls_a, balls_b)
    assert not np.array_equal(balls_a, balls_c)
    assert len({tuple(b) for b in balls_a[0]}) == 4  # instances and processes differ


@needs_godot
def test_project_folder_and_log_dir_with_spaces(tmp_path):
    project = tmp_path / "my games" / "ball chase"
    shutil.copytree(GAME, project)
    logs = tmp_path / "run dir" / "units"
    venv = make(spec(id=str(project)), envs=1, workers=1, log_dir=logs)  # its scene's one arena
    try:
        venv.reset()
        random_steps(venv, 3)
    finally:
        venv.close()
    assert (logs / "godot-0.log").read_text().startswith("Godot Engine v4.")


def running(binary: Path) -> list[int]:
    """Processes (zombies too) running the program `binary`."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and os.readlink(entry / "exe") == str(binary):
                found.append(int(entry.name))
    return found


@needs_godot
def test_an_exported_game_runs_its_own_agents_per_process(exported_ballchase, tmp_path):
    """Two processes of a game with three arenas in its scene: six envs, stepped, and each process
    seeded apart; asking for two agents a process is one line at parallel.envs, nothing left."""
    env = spec(id=str(exported_ballchase))
    assert BACKEND.smallest_layout(env, ParallelSpec(envs=6, workers=2)).envs == 3
    venv = make(env, envs=6, workers=2, log_dir=tmp_path)
    try:
        obs = venv.reset()
        assert obs.shape == (6, 10) and len({tuple(o[:2]) for o in obs}) == 6
        random_steps(venv, 5)
    finally:
        venv.close()
    assert running(exported_ballchase) == []
    t = time.monotonic()
    with pytest.raises(FieldError) as err:
        make(env, envs=4, workers=2)
    assert err.value.path == ("parallel", "envs")
    assert "runs 3 agents in each Godot process" in err.value.message
    assert "set parallel.envs to parallel.workers x 3" in err.value.message
    assert time.monotonic() - t < 15
    assert running(exported_ballchase) == []


@needs_godot
def test_preoccupied_ports_still_work():
    # godot-rl's fixed ports, taken by someone else: ours come from the OS and never collide.
    held = []
    for port in range(11008, 11012):
        s = socket.socket()
        with contextlib.suppress(OSError):
            s.bind(("127.0.0.1", port))
            s.listen(1)
            held.append(s)
    try:
        venv = make(envs=2, workers=2)
        try:
            assert not set(venv.ports) & {s.getsockname()[1] for s in held}
            venv.reset()
            random_steps(venv, 3)
        finally:
            venv.close()
    finally:
        for s in held:
            s.close()


SCRIPT = textwrap.dedent("""
    import sys, time, numpy as np
    from runner.backends import get_backend
    from runner.backends.godot import GodotEnv
    from runner.manifest.schema import ParallelSpec
    venv = get_backend("godot").make_vec_env(GodotEnv(backend="godot", id="ballchase", timeout=20),
                              ParallelSpec(envs=4, workers=2), seed=int(sys.argv[1]),
                              log_dir=None)
    print(" ".join(map(str, venv.pids)), flush=True)
    venv.reset()
    n = int(sys.argv[2])
    i = 0
    while n < 0 or i < n:
        venv.step(np.random.randint(0, 9, size=4))
        if i == 0:
            print("stepping", flush=True)
        i += 1
    venv.close()
    print("ok", flush=True)
""")


def _next_line(proc: subprocess.Popen[str], timeout: float) -> str:
    """The next line `proc` prints, waited for up to `timeout` s (AssertionError after that).

    Read a byte at a time from the pipe itself: a buffered readline could take the line after
    this one too, and then wait on a pipe with nothing more to come (the runner steps silently).
    """
    assert proc.stdout is not None
    fd, line = proc.stdout.fileno(), b""
    deadline = time.monotonic() + timeout
    while not line.endswith(b"\n"):
        if not select.select([fd], [], [], max(deadline - time.monotonic(), 0.0))[0]:
            raise AssertionError(f"no line from the runner within {timeout:.0f} s: {line!r}")
        byte = os.read(fd, 1)
        if not byte:  # it exited
            break
        line += byte
    return line.decode().strip()


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


@needs_godot
def test_four_runs_at_once():
    runs = [_spawn(str(i), "300") for i in range(4)]
    outs = [r.communicate(timeout=120) for r in runs]
    assert [r.returncode for r in runs] == [0] * 4, [o[1][-500:] for o in outs]
    pids = [int(p) for out, _ in outs for p in out.split("\n")[0].split()]
    assert len(set(pids)) == 8
    assert live_members(pids) == []


@needs_godot
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_runner_signals_leave_no_godot(sig):
    """Ctrl-C and SIGTERM: the runner ends its games; SIGKILL: the games quit by themselves."""
    run = _spawn("0", "-1")
    pids = [int(p) for p in _next_line(run, 120).split()]
    assert len(pids) == 2
    try:
        assert _next_line(run, 120) == "stepping"  # its games answered a step: mid-stepping
        run.send_signal(sig)
        run.communicate(timeout=20)
        assert run.returncode != 0
        assert wait_until(lambda: live_members(pids) == [], 10), live_members(pids)
    finally:  # a failed check leaves no runner or game behind either
        if run.poll() is None:
            run.kill()
            run.wait()
        for pid in live_members(pids):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# -- faults ----------------------------------------------------------------------------------


def _expect_fault(kind: str, error: type, timeout: float, match: str, budget: float):
    venv = (
        make(spec(kwargs={"fault": kind}, timeout=timeout), envs=2, workers=2)
        if kind != "noconnect"
        else None
    )
    t = time.monotonic()
    pids = venv.pids if venv else []
    with pytest.raises(error, match=match) as err:
        if venv is None:
            make(spec(kwargs={"fault": kind}, timeout=timeout), envs=2, workers=2)
        assert venv is not None  # (make raised, for noconnect)
        venv.reset()
        random_steps(venv, 100)
    elapsed = time.monotonic() - t
    message = str(err.value)
    assert "pid " in message and "port " in message and "log " in message
    if not pids:
        pids = [int(message.split("pid ")[1].split(",")[0])]
    assert group_members(pids) == []
    assert elapsed < budget, elapsed
    return message


@needs_godot
def test_crashing_game_is_a_clear_error():
    msg = _expect_fault("crash:20", RunnerError, 20.0, "exited with code -9 during a step", 10)
    assert "injected crash at step 20" in msg


@needs_godot
def test_hanging_game_times_out():
    msg = _expect_fault("hang:20", EnvTimeout, 2.0, "did not answer a step within 2 s", 10)
    assert "injected hang at step 20" in msg


@needs_godot
def test_game_that_never_connects_times_out():
    _expect_fault("noconnect", EnvTimeout, 2.0, "did not connect within 2 s", 10)


@needs_godot
def test_kill9_during_training_is_a_clear_error():
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback

    venv = make(envs=4, workers=2)
    pids = venv.pids

    class KillAt(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps == 200:
                os.kill(pids[1], signal.SIGKILL)
            return True

    model = PPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, device="cpu", seed=0)
    t = time.monotonic()
    exited = r"Godot process 1 \(pid \d+, port \d+\) exited with code -9"
    with pytest.raises(RunnerError, match=exited):
        model.learn(2000, callback=KillAt())
    assert time.monotonic() - t < 20
    assert group_members(pids) == []


# -- learning --------------------------------------------------------------------------------


@needs_godot
def test_short_training_beats_random():
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecMonitor

    torch.set_num_threads(1)
    venv = VecMonitor(make(envs=16, workers=2, seed=0))
    try:
        model = PPO(
            "MlpPolicy", venv, n_steps=64, batch_size=256, learning_rate=1e-3, seed=0, device="cpu"
        )
        model.learn(TRAIN_STEPS)
        trained, _ = evaluate_policy(model, venv, n_eval_episodes=16, deterministic=True)
        rng = np.random.default_rng(0)

        class Random:
            def predict(self, obs, state=None, episode_start=None, deterministic=False):
                return rng.integers(0, 9, size=len(obs)), None

        random, _ = evaluate_policy(Random(), venv, n_eval_episodes=16)
    finally:
        venv.close()
    assert isinstance(trained, float | np.floating) and isinstance(random, float | np.floating)
    assert trained > random + 3.0, (trained, random)


TRAIN_STEPS = 40_000  # ~9 vs ~0.3 for random at seed 0 (45 s on 2 cores)


# -- games that are not what godot-rl expects ------------------------------------------------


def _project(root: Path, script: str) -> Path:
    """A Godot 4 project whose main scene is one node running `script` (GDScript)."""
    root.mkdir(parents=True)
    (root / "project.godot").write_text(
        'config_version=5\n\n[application]\nrun/main_scene="res://main.tscn"\n'
    )
    (root / "main.gd").write_text(textwrap.dedent(script))
    (root / "main.tscn").write_text(
        '[gd_scene load_steps=2 format=3]\n\n[ext_resource type="Script" path="res://main.gd" '
        'id="1"]\n\n[node name="Main" type="Node"]\nscript = ExtResource("1")\n'
    )
    return root


def _one_line_failure(env: GodotEnv, error: type, *words: str) -> str:
    t = time.monotonic()
    with pytest.raises(error) as err:
        make(env, envs=1)
    message = str(err.value)
    assert "\n" not in message and all(w in message for w in words), message
    pid = int(message.split("pid ")[1].split(",")[0])
    assert group_members([pid]) == []
    assert time.monotonic() - t < 15
    return message


@needs_godot
def test_a_game_without_a_sync_node_times_out_in_one_line(tmp_path):
    project = _project(tmp_path / "no-sync", "extends Node\n")
    _one_line_failure(spec(id=str(project), timeout=2.0), EnvTimeout, "did not connect within 2 s")


@needs_godot
def test_a_game_that_is_not_godot_rls_is_one_line(tmp_path):
    """It connects, then answers env_info with something else."""
    script = """
        extends Node
        var s := StreamPeerTCP.new()
        func _ready():
            var port := 0
            for a in OS.get_cmdline_args():
                if a.begins_with("--port="):
                    port = int(a.substr(7))
            s.connect_to_host("127.0.0.1", port)
        func _process(_d):
            s.poll()
            if s.get_status() == StreamPeerTCP.STATUS_CONNECTED and s.get_available_bytes() > 0:
                var msg = JSON.parse_string(s.get_utf8_string())
                if msg["type"] == "env_info":
                    s.put_utf8_string(JSON.stringify({"type": "env_info", "agents": 2}))
    """
    project = _project(tmp_path / "foreign", script)
    _one_line_failure(spec(id=str(project)), RunnerError, "not godot-rl's format")


@needs_godot
def test_an_exported_game_that_exits_at_start_names_its_log(tmp_path):
    game = tmp_path / "quits.x86_64"
    shutil.copy("/bin/false", game)
    _one_line_failure(spec(id=str(game)), RunnerError, "exited with code 1 before connecting")


@pytest.mark.slow
@pytest.mark.skipif(godot.engine_problem(3) is not None, reason="needs Godot 3 (godot3-server)")
def test_a_godot_3_project_still_runs_on_godot_3(tmp_path):
    """The last Godot 3 BallChase (tests/games/ballchase3): a legacy project, on godot3-server."""
    project = Path(shutil.copytree(ROOT / "tests/games/ballchase3", tmp_path / "old"))
    venv = make(spec(id=str(project)), envs=1, log_dir=tmp_path / "logs")  # its scene's one
    try:
        assert venv.reset().shape == (1, 10)
        random_steps(venv, 3)
    finally:
        venv.close()
    assert "Godot Engine v3." in (tmp_path / "logs/godot-0.log").read_text()


def test_the_stall_watch_judges_replies_by_their_latency():
    from runner.backends.godot.stall import SAMPLES, StallWatch

    stalled, slow, fast = StallWatch(), StallWatch(), StallWatch()
    rng = np.random.default_rng(0)
    found = [stalled.record(0.040 + 0.004 * rng.random()) for _ in range(SAMPLES + 5)]
    assert [f for f in found if f is not None] == [pytest.approx(0.042, abs=0.002)]  # once
    assert all(slow.record(s) is None for s in rng.uniform(0.005, 0.2, SAMPLES))  # varies
    assert all(fast.record(1e-4) is None for _ in range(SAMPLES)) and fast.judged


@needs_godot
def test_a_game_whose_replies_wait_on_nagle_is_told_once(tmp_path, capfd):
    """BallChase without set_no_delay, writing its length and its text apart: every step waits
    out the trainer's delayed acknowledgement, and the env says so once."""
    project = Path(shutil.copytree(GAME, tmp_path / "nagle"))
    sync = project / "sync.gd"
    text = sync.read_text().replace("\t\t\tstream.set_no_delay(true)\n", "")
    one_write = "\tout.append_array(body)\n\tstream.put_data(out)"
    assert one_write in text
    sync.write_text(text.replace(one_write, "\tstream.put_u32(n)\n\tstream.put_data(body)"))
    venv = make(spec(id=str(project)), envs=1)
    try:
        venv.reset()
        random_steps(venv, 40)
        from runner.backends.abilities import StepSplit

        assert isinstance(BACKEND, StepSplit)
        split = BACKEND.step_split(venv)  # the rollout profile's split of the step (bench)
        assert split is not None
        said = split.stall()
    finally:
        venv.close()
    assert said is not None and "Nagle's algorithm" in said and str(project) in said
    err = capfd.readouterr().err
    assert err.count("Nagle's algorithm") == 1 and "set_no_delay(true)" in err, err
    assert 36 <= venv.stalls.stall_s * 1e3 < 60


@_have_godot
def test_godot_4_is_found_as_users_name_it_and_recorded_with_its_hash(tmp_path, monkeypatch):
    """`godot` on PATH is taken when it is a 4.x (`godot4` is tried first); provenance's record
    of it (the backend's `versions()`) holds its path, version and the binary's SHA-256."""
    import hashlib

    real = os.path.realpath(godot.godot_binary(4)[0])
    (tmp_path / "godot").symlink_to(real)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("RLCRATE_GODOT", raising=False)
    path, version = godot.godot_binary(4)
    assert path == str(tmp_path / "godot") and version.startswith("4.")
    record = BACKEND.versions()["godot"]
    assert record["path"] == path and record["version"] == version
    assert record["sha256"] == hashlib.sha256(Path(real).read_bytes()).hexdigest()
    monkeypatch.setenv("RLCRATE_GODOT", str(tmp_path / "godot"))  # RLCRATE_GODOT names it
    assert godot.godot_binary(4)[0] == str(tmp_path / "godot")
