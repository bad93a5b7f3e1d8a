"""runner/provenance: the installed packages a run records, remembered between runs by the files
they are read from (provenance/installed.py), never stale and never trusted blindly."""

from __future__ import annotations

import os

import pytest

from runner.provenance import _read_packages, installed


def _dist(folder, name: str, version: str):
    meta = folder / f"{name.replace('-', '_')}-1.dist-info" / "METADATA"
    meta.parent.mkdir(parents=True, exist_ok=True)
    meta.write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return meta


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A folder on the import path holding one distribution, and an empty cache."""
    monkeypatch.setenv("RLCRATE_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "site"
    monkeypatch.syspath_prepend(str(folder))
    return folder, _dist(folder, "demo-pkg", "1.0")


def _cached(tmp_path):
    return list((tmp_path / "cache" / installed.PACKAGES_DIR).glob("*.json"))


def test_the_remembered_list_is_the_read_one_until_a_version_changes(site, tmp_path):
    folder, meta = site
    first = installed.remembered(_read_packages)
    assert first["demo-pkg"] == "1.0" and first == _read_packages()
    assert len(_cached(tmp_path)) == 1
    assert installed.remembered(lambda: {"read": "again"}) == first  # from the cache

    # an editable install's version rewritten in place: its folder's time stays as it was
    stat = os.stat(meta.parent)
    meta.write_text(meta.read_text().replace("1.0", "2.0"))
    os.utime(meta.parent, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert installed.remembered(_read_packages)["demo-pkg"] == "2.0"

    _dist(folder, "other-pkg", "0.3")  # a package installed
    assert installed.remembered(_read_packages)["other-pkg"] == "0.3"


@pytest.mark.parametrize("content", ['["a list"]', '{"demo-pkg": 1}', "not json", ""])
def test_a_damaged_cache_entry_is_read_afresh(site, tmp_path, content):
    installed.remembered(_read_packages)
    (entry,) = _cached(tmp_path)
    entry.write_text(content)
    assert installed.remembered(_read_packages)["demo-pkg"] == "1.0"
    assert entry.read_text() != content  # and written again whole


def test_an_unwritable_cache_costs_only_a_reread(site, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("RLCRATE_CACHE_DIR", str(blocker / "cache"))  # under a file: unwritable
    assert installed.remembered(_read_packages)["demo-pkg"] == "1.0"
