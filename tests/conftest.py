"""Shared fixtures."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml


@pytest.fixture
def write_manifest(tmp_path):
    def write(data: dict | str, name: str = "m.yaml") -> Path:
        path = tmp_path / name
        text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
        path.write_text(textwrap.dedent(text))
        return path

    return write
