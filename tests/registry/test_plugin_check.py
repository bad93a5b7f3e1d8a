"""`rlcrate plugin check` (runner/cli/plugin_check.py) fails a plugin that breaks its contract,
the same with Python's -O (PYTHONOPTIMIZE strips `assert`, so the checks must not be asserts),
and its conformance kit (`PluginConformance`) fails a plugin author's test the same way.
rlcrate's own plugins passing the same checks: tests/registry/test_registry.py."""

from __future__ import annotations

import re

import pytest

from runner.cli.plugin_check import ContractBroken, PluginConformance
from tests.helpers import PLUGINS, ROOT, rlcrate

# An executor that breaks its contract without raising (tests/plugins_broken)
BROKEN = ROOT / "tests" / "plugins_broken"


def _squashed(text: str) -> str:
    """A table's text without its borders and blanks: a cell wrapped over lines reads whole."""
    return re.sub(r"[\s│┃║|]", "", text)


@pytest.mark.parametrize("optimize", ["", "1"], ids=["plain", "PYTHONOPTIMIZE=1"])
def test_a_broken_executor_fails_the_check(optimize):
    env = {"PYTHONPATH": f"{ROOT}:{PLUGINS}:{BROKEN}", "PYTHONOPTIMIZE": optimize}
    res = rlcrate("plugin", "check", "broken", "--kind", "executor", env_extra=env)
    out = _squashed(res.stdout)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "Traceback" not in res.stdout + res.stderr
    assert _squashed("runs_here must be True or False, not 'yes'") in out, res.stdout
    assert _squashed("status must return Holdings, not {'held': []}") in out, res.stdout


class TestToyClimbConforms(PluginConformance):
    """The kit as a plugin's own tests use it: the toy_climb trainer (tests/plugins) passes."""

    kind, name = "trainer", "toy_climb"


def test_the_kit_fails_an_executor_that_breaks_its_contract(monkeypatch):
    """The local executor made to answer `status` with a dict: the kit's test fails, naming
    the check and what the executor gave."""
    from runner.executors.local import Local

    class TestLocalConforms(PluginConformance):
        kind, name = "executor", "local"

    monkeypatch.setattr(Local, "status", lambda self, run_dir, units: {"held": []})
    with pytest.raises(ContractBroken) as broken:
        TestLocalConforms().test_conforms()
    lines = str(broken.value).splitlines()
    assert lines == [
        "the executor 'local' breaks its contract:",
        "status and started_any of a run it never saw: status must return Holdings, not "
        "{'held': []}",
    ]
