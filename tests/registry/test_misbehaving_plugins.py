"""Plugins and container engines that misbehave, met through the console
script: a plugin that calls sys.exit at import, one whose import never ends, an entry point
naming a function; an engine that prints bytes that are not UTF-8, one that never answers (with
the probe it started), and `image ls` stopped while it waits. Each is one line or a listed
problem, bounded in time, with no process left. The plugins are a package beside its dist-info
(what pip installs), the engines fake `docker` scripts on PATH: neither fault can be produced
with the real thing on demand."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from tests.helpers import (
    PLUGINS,
    ROOT,
    checkout_env,
    one_error_line,
    rlcrate,
    rlcrate_exe,
    tiny_manifest,
)

ENTRY_POINTS = """\
[rlcrate.backends]
exits = bad_plugs.exits:Thing
blocks = bad_plugs.blocks:Thing
func = bad_plugs.funcs:make
"""
MODULES = {
    "exits": "import sys\nsys.exit(3)\n",
    "blocks": "import time\ntime.sleep(10**6)\n",
    "funcs": "def make():\n    return None\n",
}


@pytest.fixture
def bad_plugins(tmp_path) -> dict[str, str]:
    """The environment of a process that has the bad plugins installed."""
    site = tmp_path / "site"
    (site / "bad_plugs").mkdir(parents=True)
    (site / "bad_plugs" / "__init__.py").write_text("")
    for name, text in MODULES.items():
        (site / "bad_plugs" / f"{name}.py").write_text(text)
    info = site / "bad_plugs-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bad-plugs\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    path = os.pathsep.join([str(ROOT), str(PLUGINS), str(site)])
    return {"PYTHONPATH": path, "RLCRATE_PLUGIN_IMPORT_TIMEOUT": "2"}


BACKENDS = {
    "exits": "it called sys.exit(3) while being imported",
    "blocks": "its import did not finish within 2 s",
    "func": "is not a subclass of runner.backends.base.Backend",
}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_manifest_naming_a_misbehaving_backend_is_one_line(bad_plugins, write_manifest, backend):
    path = write_manifest(tiny_manifest(env__backend=backend))
    t0 = time.monotonic()
    res = rlcrate("validate", str(path), env_extra=bad_plugins, timeout=120)
    one_error_line(res, f"{path}:", "env.backend:", f"'{backend}'", BACKENDS[backend])
    assert time.monotonic() - t0 < 60


def _squashed(text: str) -> str:
    """A table's text without its borders and blanks: a cell wrapped over lines reads whole."""
    return re.sub(r"[\s│┃║|]", "", text)


def test_doctor_and_plugin_check_list_them_as_broken_and_end(bad_plugins):
    t0 = time.monotonic()
    res = rlcrate("doctor", env_extra=bad_plugins, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    for backend, says in BACKENDS.items():
        assert _squashed(f"backend {backend} (bad-plugs)") in _squashed(res.stdout)
        assert _squashed(says) in _squashed(res.stdout), says
    res = rlcrate("plugin", "check", "exits", env_extra=bad_plugins)
    assert res.returncode == 1, res.stdout + res.stderr
    assert _squashed(BACKENDS["exits"]) in _squashed(res.stdout)
    assert "Traceback" not in res.stdout + res.stderr
    assert time.monotonic() - t0 < 90


def _docker(folder: Path, images: str) -> dict[str, str]:
    """PATH with a fake docker whose daemon answers `version`, does `images` as told and
    inspects an image in bytes that are not UTF-8."""
    folder.mkdir(exist_ok=True)
    (folder / "inspect.json").write_bytes(
        b'[{"Id": "sha256:\xffcafe", "Labels": {"io.rlcrate.variant": "cpu\xfe"}}]\n'
    )
    script = f"""\
        #!/bin/sh
        case "$1" in
          version) echo 27.0.0 ;;
          images) {images} ;;
          image) cat "{folder}/inspect.json" ;;
          *) exit 99 ;;
        esac
        """
    path = folder / "docker"
    path.write_text(textwrap.dedent(script))
    path.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}", "RLCRATE_ENGINE": ""}


def test_an_engine_printing_bytes_that_are_not_utf8_is_read(tmp_path):
    listing = tmp_path / "images.json"
    listing.write_bytes(b'{"Repository": "rlcrate-cpu", "Tag": "0.9\xff"}\n')
    env = _docker(tmp_path / "bin", f'cat "{listing}"')
    res = rlcrate("image", "ls", "--engine", "docker", env_extra=env)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stdout + res.stderr
    assert "rlcrate-cpu:0.9\ufffd" in res.stdout and "sha256:\ufffdcafe" in res.stdout


def _alive(pids: Path) -> list[int]:
    """The recorded processes still running (a zombie has ended; only its parent is gone)."""
    alive = []
    for pid in map(int, pids.read_text().split()):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            alive.append(pid)
    return alive


HANGS = 'sleep 100000 & echo $! >> "$PIDS"; echo $$ >> "$PIDS"; wait'


def test_an_engine_that_never_answers_is_bounded_and_its_probe_stopped(tmp_path):
    pids = tmp_path / "pids"
    env = {**_docker(tmp_path / "bin", HANGS), "PIDS": str(pids), "RLCRATE_ENGINE_TIMEOUT": "2"}
    t0 = time.monotonic()
    res = rlcrate("image", "ls", "--engine", "docker", env_extra=env, timeout=120)
    one_error_line(res, "docker did not answer `images --format` within 2 s", "it was stopped",
                   code=1)  # fmt: skip
    assert time.monotonic() - t0 < 60
    assert pids.read_text().split() and not _alive(pids), "the engine's probe was left running"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["Ctrl-C", "SIGTERM"])
def test_image_ls_stopped_while_it_waits_leaves_no_probe(tmp_path, sig):
    pids = tmp_path / "pids"
    env = checkout_env({**os.environ, **_docker(tmp_path / "bin", HANGS), "PIDS": str(pids)})
    proc = subprocess.Popen(
        [rlcrate_exe(), "image", "ls", "--engine", "docker"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not (pids.exists() and len(pids.read_text().split()) == 2):  # the probe is running
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
        time.sleep(0.05)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and err.strip() == "interrupted", err
    assert not _alive(pids), "the engine's probe was left running"
