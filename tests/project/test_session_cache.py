"""The test session's own rlcrate cache: every process a test starts, and the tests themselves,
remember things under the session's base temporary folder, never in the user's cache or in
one an earlier session left (tests/conftest.py, `session_cache`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from runner.record.cache import cache_dir
from tests.helpers import checkout_env


def test_the_cache_is_this_sessions_own(session_cache, tmp_path_factory):
    base = tmp_path_factory.getbasetemp()
    base = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    assert session_cache.parent == base and session_cache.is_dir()
    assert cache_dir() == session_cache
    home_cache = Path("~/.cache/rlcrate").expanduser()
    assert home_cache not in (session_cache, *session_cache.parents)


def test_a_process_a_test_starts_uses_the_sessions_cache(session_cache):
    said = subprocess.run(
        [sys.executable, "-c", "from runner.record.cache import cache_dir; print(cache_dir())"],
        capture_output=True, text=True, env=checkout_env(), check=True, timeout=60,
    )  # fmt: skip
    assert Path(said.stdout.strip()) == session_cache, said.stdout + said.stderr
