"""unit.log is a file, not a terminal: colour codes some libraries print regardless (Gymnasium's
warnings, for one) are taken out before they reach it."""

from __future__ import annotations

import io
import os
import re
import sys
from typing import TextIO

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


class PlainText(io.TextIOBase):
    """A text stream that writes through to `inner` without ANSI escape sequences."""

    def __init__(self, inner: TextIO):
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(strip_ansi(text))
        return len(text)

    def flush(self) -> None:
        self.inner.flush()

    def fileno(self) -> int:
        return self.inner.fileno()

    def isatty(self) -> bool:
        return False


def plain_output() -> None:
    """In a unit process: strip colour from Python-level output, ask child processes for none."""
    os.environ.setdefault("NO_COLOR", "1")
    os.environ["TERM"] = "dumb"
    if not sys.stdout.isatty():
        sys.stdout = PlainText(sys.stdout)
    if not sys.stderr.isatty():
        sys.stderr = PlainText(sys.stderr)
