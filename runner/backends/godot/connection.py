"""godot-rl's `GodotEnv`, connected to a supervised process, with deadlines and clear errors.

The protocol code (handshake, env_info parsing, action conversion, reset, call) is godot-rl's,
inherited unchanged. Replaced: how the connection is made (the supervisor's OS-chosen port),
receiving (a deadline on every read and an error, not an endless loop, when the game dies) and
closing (no fixed one-second sleep, no atexit print).
"""

from __future__ import annotations

import contextlib
import io
import socket
import struct
from typing import Any

import numpy as np
from godot_rl.core.godot_env import GodotEnv
from godot_rl.core.utils import ActionSpaceProcessor
from gymnasium import spaces

from runner.backends.godot.supervisor import GodotExited, GodotProcess
from runner.errors import EnvTimeout, RunnerError


class GodotConnection(GodotEnv):
    def __init__(self, process: GodotProcess, *, timeout: float):
        # GodotEnv.__init__ would launch and connect by itself (fixed port, no deadline), so the
        # same attributes are set up here around the supervisor, then its protocol methods run.
        self.process = process
        self.proc = process.proc
        self.port = process.port
        self.timeout = timeout
        self._phase = "the connection"
        self.connection = process.accept(timeout)
        _kernel_timeouts(self.connection, timeout)
        self._rx = bytearray()
        self._chunk = memoryview(bytearray(1 << 16))
        self.num_envs = None
        self._phase = "the handshake"
        self._handshake()
        self.action_spaces: list[spaces.Dict] = []
        self.observation_spaces: list[spaces.Dict] = []
        self._phase = "env_info"
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # godot-rl prints the spaces
                self._get_env_info()
        except (AssertionError, KeyError, TypeError, ValueError) as exc:
            raise RunnerError(
                f"{process.describe()} sent an env_info that is not godot-rl's format ({exc!r})"
            ) from None
        self.observation_space = self.observation_spaces[0]
        self.tuple_action_spaces = [spaces.Tuple(list(a.values())) for a in self.action_spaces]
        self.action_space_processor = ActionSpaceProcessor(self.tuple_action_spaces[0], True)
        keys = list(self.action_spaces[0].keys())
        self._action_key = keys[0] if len(keys) == 1 else None
        self._phase = "a step"

    # -- receiving with a deadline -------------------------------------------------------------

    def _fill(self, n: int) -> None:
        """Reads until `n` bytes are buffered; a whole message usually takes one recv."""
        while len(self._rx) < n:
            try:
                k = self.connection.recv_into(self._chunk)
            except (TimeoutError, BlockingIOError):  # SO_RCVTIMEO expired
                raise self._timed_out() from None
            except OSError:
                k = 0
            if k == 0:
                raise self._exited()
            self._rx += self._chunk[:k]

    def _get_data(self) -> str:
        self._fill(4)
        end = 4 + int.from_bytes(self._rx[:4], "little")
        self._fill(end)
        text = self._rx[4:end].decode()
        del self._rx[:end]
        return text

    def _send_string(self, string: str) -> None:
        data = string.encode()
        try:
            self.connection.sendall(len(data).to_bytes(4, "little") + data)
        except (TimeoutError, BlockingIOError):
            raise self._timed_out() from None
        except OSError:
            raise self._exited() from None

    def _timed_out(self) -> EnvTimeout:
        p = self.process
        return EnvTimeout(
            f"{p.describe()} did not answer {self._phase} within {self.timeout:g} s "
            f"(env.timeout); log {p.log_path}: {p.tail()}"
        )

    def _exited(self) -> GodotExited:
        p = self.process
        code = p.exit_code()
        how = f"exited with code {code}" if code is not None else "closed its connection"
        return GodotExited(
            f"{p.describe()} {how} during {self._phase}; log {p.log_path}: {p.tail()}"
        )

    # -- protocol --------------------------------------------------------------------------------

    def reset(self, seed: Any = None):
        self._phase = "a reset"
        out = super().reset(seed)
        self._phase = "a step"
        return out

    def call(self, method: str) -> list[Any]:
        self._phase = f"a call to {method}"
        out = super().call(method)
        self._phase = "a step"
        return out

    def frame(self) -> Any:
        """The first instance's arena as the game draws it now: an (H, W, 3) uint8 array (the
        bundled games' `frame` message, answered by the full engine only)."""
        import base64

        self._phase = "a frame"
        self._send_as_json({"type": "frame"})
        answer = self._get_json_dict()
        self._phase = "a step"
        if answer.get("type") != "frame" or "error" in answer or "rgb" not in answer:
            why = answer.get("error") or f"a '{answer.get('type')}' message"
            raise RunnerError(f"{self.process.describe()} answered a frame request with {why}")
        rgb = np.frombuffer(base64.b64decode(answer["rgb"]), dtype=np.uint8)
        return rgb.reshape(int(answer["height"]), int(answer["width"]), 3)

    def from_numpy(self, action, order_ij=False):
        """godot-rl's conversion, without its per-agent Python loop for one action key."""
        if order_ij or self._action_key is None:
            return super().from_numpy(action, order_ij=order_ij)
        values = np.asarray(action[0])
        values = values.astype(np.int64) if values.ndim == 1 else values  # int(v), as godot-rl
        key = self._action_key
        return [{key: v} for v in values.tolist()]

    def recv_step(self) -> dict[str, Any]:
        """The raw step message, with obs processed as godot-rl does; may carry `final_obs`."""
        response = self._get_json_dict()
        if response.get("type") != "step":
            raise RunnerError(
                f"{self.process.describe()} answered an action with a "
                f"'{response.get('type')}' message instead of 'step'"
            )
        response["obs"] = self._process_obs(response["obs"])
        return response

    def send_close(self) -> bool:
        """Asks the game to quit; False when it cannot be told (it is dead or stuck)."""
        try:
            _kernel_timeouts(self.connection, 1.0)
            self._send_as_json({"type": "close"})
            return True
        except (OSError, RunnerError):
            return False

    def close(self, grace: float = 2.0) -> None:
        self.send_close()
        self.process.kill(grace=grace)
        self.connection.close()

    def _close(self) -> None:  # GodotEnv registers nothing here, but keep its hook harmless
        self.close(grace=0.0)


def _kernel_timeouts(sock: socket.socket, seconds: float) -> None:
    """Deadlines enforced by the kernel (SO_RCVTIMEO/SO_SNDTIMEO) on a blocking socket.

    Python's own socket timeouts poll() before every recv and send: two extra system calls per
    step on the hot path. A kernel timeout costs nothing until it expires (recv then fails with
    EAGAIN, raised as BlockingIOError).
    """
    sock.settimeout(None)
    whole = int(seconds)
    value = struct.pack("ll", whole, int((seconds - whole) * 1e6))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)
