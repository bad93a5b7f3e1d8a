"""One version set across the two images: every Python package both locks contain has the same
version, except those `[differences]` in versions.toml names with a reason (no engine needed)."""

from __future__ import annotations

import re
import tomllib

from tests.helpers import ROOT

IMAGES = ROOT / "images"


def _locked(variant: str) -> dict[str, str]:
    text = (IMAGES / variant / "requirements.lock").read_text()
    return {
        n.lower().replace("_", "-"): v
        for n, v in re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+)", text, re.M)
    }


def _table(variant: str) -> dict:
    return tomllib.loads((IMAGES / variant / "versions.toml").read_text())


def test_shared_packages_have_one_version():
    cpu, cuda = _locked("cpu"), _locked("cuda")
    allowed = set(_table("cpu")["differences"]) & set(_table("cuda")["differences"])
    drift = {n: (cpu[n], cuda[n]) for n in cpu.keys() & cuda.keys() if cpu[n] != cuda[n]}
    assert set(drift) <= allowed, f"shared packages drifted between the images: {drift}"
    assert set(drift) == {n for n in allowed if n in cpu and n in cuda}, (
        "a [differences] entry names a package that no longer differs"
    )


def test_every_cpu_package_is_in_the_cuda_image():
    assert not set(_locked("cpu")) - set(_locked("cuda")) - {"torch"}


def test_shared_constraints_are_the_locked_versions():
    """images/shared.txt (passed to both locks) pins exactly the shared packages."""
    text = (IMAGES / "shared.txt").read_text()
    pins = dict(re.findall(r"^([a-z0-9_.\-]+)==(\S+)$", text, re.M))
    cpu, cuda = _locked("cpu"), _locked("cuda")
    shared = {n: cpu[n] for n in cpu.keys() & cuda.keys() if cpu[n] == cuda[n]}
    assert pins == shared


def test_each_difference_has_a_reason_and_holds():
    cpu, cuda = _table("cpu"), _table("cuda")
    assert set(cpu["differences"]) == set(cuda["differences"])
    for table in (cpu, cuda):
        assert all(len(reason) > 30 for reason in table["differences"].values())
    assert cpu["python"]["version"] != cuda["python"]["version"]
    assert cpu["apt"]["godot3-server"] != cuda["apt"]["godot3-server"]
    for name in set(cpu["packages"]) & set(cuda["packages"]) - set(cpu["differences"]):
        assert cpu["packages"][name] == cuda["packages"][name], name


def test_lock_script_applies_the_shared_constraints():
    assert "--constraint images/shared.txt" in (IMAGES / "lock.sh").read_text()
