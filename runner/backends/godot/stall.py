"""A game whose every reply arrives about 40 ms late: the stall of a socket that holds small
writes back (Nagle's algorithm) until the peer acknowledges the last one, which the trainer's
side does only after its delayed-acknowledgement timer (40 ms on Linux).

Godot's StreamPeerTCP leaves Nagle's algorithm on unless the game calls `set_no_delay(true)`, and
a reply written in two parts (the length, then the text) then waits out that timer on every
step: measured here, a Godot 4 game ran 87 steps/s that way and 10.4k with `set_no_delay(true)`.
rlcrate's own games set it and write each message at once; `StallWatch` notices a game that does
not, from the replies' latency alone, and says so once.
"""

from __future__ import annotations

import statistics

# Linux's delayed acknowledgement waits 40 ms at least; the stall is that plus the step itself.
BAND_S = (0.036, 0.060)
SAMPLES = 32  # steps watched before judging (the first ones: nothing else is timed later)
SHARE = 0.8  # of them in the band: a game that is merely slow varies far more than that


def advice(game: str, median_s: float) -> str:
    return (
        f"{game} answers every step about {median_s * 1e3:.0f} ms late, the stall of a reply "
        "held back by Nagle's algorithm until the trainer acknowledges the last one: unless its "
        "steps are that slow by themselves, call set_no_delay(true) on the game's StreamPeerTCP "
        "once it is connected, and write each message with one put_data"
    )


class StallWatch:
    """Times the first `SAMPLES` replies (seconds from the actions sent to the answers read, less
    what the engine says it spent simulating) and judges once."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.stall_s: float | None = None  # the median latency, when the replies were stalled

    @property
    def judged(self) -> bool:
        return len(self.latencies) >= SAMPLES

    def record(self, seconds: float) -> float | None:
        """Adds one reply's latency; the stall (the median latency) once, when the replies turn
        out stalled, else None."""
        if self.judged:
            return None
        self.latencies.append(seconds)
        if not self.judged:
            return None
        inside = [s for s in self.latencies if BAND_S[0] <= s < BAND_S[1]]
        if len(inside) < SHARE * len(self.latencies):
            return None
        self.stall_s = statistics.median(self.latencies)
        return self.stall_s
