"""Where a Godot env step goes: the trainer's encoding, the socket wait, decoding.

`GodotSplit` patches one GodotVecEnv's instance methods (removed again by `detach`) and adds up,
per vector step:
    encode       step_async but the send: actions -> JSON text, every process
    send         sendall of the action messages (on a host with fewer free cores than
                 processes, the woken game may take the CPU from the trainer right here)
    wait         blocked in recv for the step messages (`_fill`), every process in turn
    decode       the rest of step_wait: bytes -> JSON -> arrays, episode ends
and splits `wait` with what each game reports in its step message (`tick_us`, `codec_us`,
the bundled games' extension): the engine's simulation ticks and its own JSON decoding and
encoding. The processes tick concurrently, so a step's engine share is the slowest process's;
what remains of the wait is transport, the engine's frame loop and, when paced, its sleep.
"""

from __future__ import annotations

import time
from typing import Any

from runner.backends.godot.stall import advice

KEYS = ("encode", "send", "engine_tick", "engine_codec", "wait_other", "decode")


class GodotSplit:
    def __init__(self, venv: Any) -> None:
        self.venv = venv
        self.seconds = dict.fromkeys(KEYS, 0.0)
        self.reported = True  # False once a step message lacks tick_us (not a bundled game)
        self.calls = 0  # timed calls, for the profile's own cost
        self._send = 0.0
        self._wait = 0.0
        self._engine: list[tuple[float, float]] = []
        self._patched: list[tuple[Any, str]] = []
        self._patch(venv, "step_async", self._timed_async)
        self._patch(venv, "step_wait", self._timed_wait)
        for conn in venv.conns:
            self._patch(conn, "_fill", self._timed_fill(conn._fill))
            self._patch(conn, "_send_string", self._timed_send(conn._send_string))
            self._patch(conn, "recv_step", self._reporting(conn.recv_step))

    def _patch(self, obj: Any, name: str, fn: Any) -> None:
        setattr(obj, name, fn)
        self._patched.append((obj, name))

    def stall(self) -> str | None:
        """The env's own finding when its first replies all came about 40 ms late (Nagle's
        algorithm on the game's socket: `stall`), else None."""
        seconds = self.venv.stalls.stall_s
        return None if seconds is None else advice(self.venv.game, seconds)

    def detach(self) -> None:
        for obj, name in self._patched:
            delattr(obj, name)  # the class's method shows through again
        self._patched.clear()

    def _timed_async(self, actions: Any) -> None:
        self._send = 0.0
        t0 = time.perf_counter()
        type(self.venv).step_async(self.venv, actions)
        total = time.perf_counter() - t0
        self.calls += 1
        self.seconds["send"] += min(self._send, total)
        self.seconds["encode"] += total - min(self._send, total)

    def _timed_send(self, send: Any) -> Any:
        def timed(text: str) -> None:
            t0 = time.perf_counter()
            send(text)
            self._send += time.perf_counter() - t0
            self.calls += 1

        return timed

    def _timed_fill(self, fill: Any) -> Any:
        def timed(n: int) -> None:
            t0 = time.perf_counter()
            fill(n)
            self._wait += time.perf_counter() - t0
            self.calls += 1

        return timed

    def _reporting(self, recv: Any) -> Any:
        def recv_step() -> dict[str, Any]:
            response = recv()
            self.calls += 1
            tick, codec = response.get("tick_us"), response.get("codec_us")
            if tick is None or codec is None:
                self.reported = False
            else:
                self._engine.append((tick * 1e-6, codec * 1e-6))
            return response

        return recv_step

    def _timed_wait(self) -> Any:
        self._wait, self._engine = 0.0, []
        t0 = time.perf_counter()
        out = type(self.venv).step_wait(self.venv)
        total = time.perf_counter() - t0
        self.calls += 1
        wait = min(self._wait, total)
        tick, codec = max(self._engine, key=sum) if self._engine else (0.0, 0.0)
        tick = min(tick, wait)
        codec = min(codec, wait - tick)
        s = self.seconds
        s["engine_tick"] += tick
        s["engine_codec"] += codec
        s["wait_other"] += wait - tick - codec
        s["decode"] += total - wait
        return out
