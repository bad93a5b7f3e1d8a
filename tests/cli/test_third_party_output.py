"""rlcrate's output stays rlcrate's: notices third-party libraries print about their own
internals (Gymnasium's lowered Box precision for EnvPool's spaces, SB3's batch-size advice for a
model rebuilt on one env to act, the Arcade Learning Environment's banner from every process)
are kept off the user's terminal; their errors still come through. `rlcrate export`'s one line
alone, through the console script: tests/export/test_export.py."""

from __future__ import annotations

import warnings

import pytest

from tests.helpers import env_spec


@pytest.mark.envpool
def test_envpool_spaces_raise_no_precision_warning():
    from runner.backends import get_backend
    from runner.manifest.schema import ParallelSpec

    backend, env = get_backend("envpool"), env_spec(backend="envpool", id="CartPole-v1")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        backend.spaces(env)
        venv = backend.make_vec_env(env, ParallelSpec(envs=2, workers=1), seed=0, log_dir=None)
        venv.close()
    assert not [str(w.message) for w in seen if "precision" in str(w.message)]


@pytest.mark.gymnasium
def test_no_ale_banner_from_subprocess_workers(capfd):
    """SubprocVecEnv's workers print to the terminal the runner prints to (a bench measures in
    the runner's own process): one banner per worker before."""
    pytest.importorskip("ale_py")
    from runner.backends import get_backend
    from runner.manifest.schema import ParallelSpec

    env = env_spec(backend="gymnasium", id="ALE/Pong-v5")
    parallel = ParallelSpec(envs=1, workers=1, mode="subproc")
    venv = get_backend("gymnasium").make_vec_env(env, parallel, seed=0, log_dir=None)
    try:
        venv.reset()
    finally:
        venv.close()
    err = capfd.readouterr().err
    assert "A.L.E" not in err and "Powered by Stella" not in err, err
