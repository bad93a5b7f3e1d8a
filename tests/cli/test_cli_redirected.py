"""The console script with its output redirected to a file, as a user reads a finished run:
tables keep their full variant names past 80 columns, the report's and status's wording of the
seeds won and of the IQM, reproduce's verdict naming no `expect` the manifest lacks."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import checkout_env, rlcrate, run_dir_of, tiny_manifest

RATES = [0.0003, 0.001]
NAMES = ["learning_rate-0.0003", "learning_rate-0.001"]


def _redirected(*args: str, cwd: Path, out: Path) -> int:
    """The console script with stdout to a file and no COLUMNS: `rlcrate ... > file`."""
    env = {k: v for k, v in checkout_env().items() if k not in ("COLUMNS", "LINES")}
    exe = Path(sys.executable).with_name("rlcrate")
    with out.open("w") as f:
        return subprocess.run(
            [str(exe), *args], cwd=cwd, stdout=f, stderr=subprocess.PIPE, env=env, timeout=600
        ).returncode


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """Two variants x 3 seeds, no `expect:`: the shape of a first own manifest."""
    tmp = tmp_path_factory.mktemp("first-hour")
    m = tiny_manifest(seeds=[0, 1, 2], matrix={"algo.params.learning_rate": RATES})
    (tmp / "m.yaml").write_text(yaml.safe_dump(m))
    res = rlcrate("run", "m.yaml", "--out", "runs", cwd=tmp, report=True)
    assert res.returncode == 0, res.stderr
    return run_dir_of(tmp / "runs", "tiny")


@pytest.mark.slow
@pytest.mark.gymnasium
def test_status_redirected_keeps_full_variant_names(finished, tmp_path):
    out = tmp_path / "status.txt"
    assert _redirected("status", str(finished), cwd=tmp_path, out=out) == 0
    text = out.read_text()
    for name in NAMES:
        assert re.search(rf"│ {re.escape(name)} +│", text), text
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) > 80  # the table took the room it needs


@pytest.mark.slow
@pytest.mark.gymnasium
def test_report_says_seeds_won_and_why_the_iqm_is_the_mean(finished, tmp_path):
    report = (finished / "report.md").read_text()
    assert "Best return per seed" not in report
    won = re.search(r"Seeds won \(.*\): (.*)", report)
    assert won, report
    counts = re.findall(r"(learning_rate-[\d.]+): (\d) seed\(s\)", won.group(1))
    assert counts and sum(int(n) for _, n in counts) == 3, won.group(0)
    assert "with 3 seeds the IQM trims no seed" in report
    out = tmp_path / "status.txt"
    _redirected("status", str(finished), cwd=tmp_path, out=out)
    assert "with 3 seeds the IQM trims no seed" in out.read_text()  # the summary's caption


@pytest.mark.slow
@pytest.mark.gymnasium
def test_reproduce_names_no_expect_when_the_manifest_has_none(finished, tmp_path):
    tar = tmp_path / "a.tar.gz"
    assert rlcrate("archive", str(finished), "-o", str(tar)).returncode == 0
    res = rlcrate("reproduce", str(tar), "--units", "2", "--out", str(tmp_path / "re"))
    assert res.returncode == 0, res.stdout + res.stderr
    verdict = res.stdout.strip().splitlines()[-1]
    assert verdict.startswith("verdict: ") and "expect" not in verdict, verdict
    line = json.loads(next((tmp_path / "re").rglob("reproduce.json")).read_text())["line"]
    assert line == verdict
