"""A bound in time on one tracker call, for the process that uploads (`runner.track.upload`).

The libraries' own timeouts bound each socket read, not a call: a server that answers one byte
a second never trips them. A SIGALRM does: its handler raises `CallTimeout` in the main thread,
out of whatever read the call is blocked in. It is a BaseException so that no library's
`except Exception` (a retry loop) swallows it and carries on unbounded; and a library that catches
everything and raises its own error instead (jsonschema, building a validator while the alarm
fires: "SchemaError: Error building ... validator") still ends in `CallTimeout`, since the bound
knows that it fired.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator

PROBE_S = 5.0  # is a server there at all: one small request
CALL_S = 15.0  # one sink's open, one unit's upload (a model artifact included), the close


class CallTimeout(BaseException):
    """A tracker call ran past its bound."""


def call_s() -> float:
    """CALL_S, or RLCRATE_TRACK_CALL_TIMEOUT_S where set (a slow link with large models)."""
    text = os.environ.get("RLCRATE_TRACK_CALL_TIMEOUT_S", "")
    try:
        value = float(text)
    except ValueError:
        return CALL_S
    return value if 0 < value < 86_400 else CALL_S


@contextlib.contextmanager
def deadline(seconds: float, what: str) -> Iterator[None]:
    """Raise CallTimeout out of the body after `seconds` (not nested: one bound at a time),
    whatever the body turned it into."""
    fired: list[CallTimeout] = []

    def fire(signum: int, frame: object) -> None:
        fired.append(CallTimeout(f"{what} did not finish within {seconds:.0f} s"))
        raise fired[0]

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except BaseException as exc:
        if fired and exc is not fired[0]:
            raise fired[0] from exc
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
