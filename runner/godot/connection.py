"""godot-rl's `GodotEnv`, connected to a supervised process, with deadlines and clear errors.

The protocol code (handshake, env_info parsing, action conversion, reset, call) is godot-rl's,
inherited unchanged. Replaced: how the connection is made (the supervisor's OS-chosen port),
receiving (a deadline on every read and an error, not an endless loop, when the game dies) and
closing (no fixed one-second sleep, no atexit print).
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import numpy as np
from godot_rl.core.godot_env import GodotEnv
from godot_rl.core.utils import ActionSpaceProcessor
from gymnasium import spaces

from runner.errors import EnvTimeout, RunnerError
from runner.godot.supervisor import GodotExited, GodotProcess


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
        self.connection.settimeout(timeout)
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
        self._phase = "a step"

    # -- receiving with a deadline -------------------------------------------------------------

    def _recv_exact(self, n: int) -> bytearray:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            try:
                k = self.connection.recv_into(view[got:], n - got)
            except TimeoutError:
                raise self._timed_out() from None
            except OSError:
                k = 0
            if k == 0:
                raise self._exited()
            got += k
        return buf

    def _get_data(self) -> str:
        length = int.from_bytes(self._recv_exact(4), "little")
        return self._recv_exact(length).decode()

    def _send_string(self, string: str) -> None:
        data = string.encode()
        try:
            self.connection.sendall(len(data).to_bytes(4, "little") + data)
        except TimeoutError:
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

    def from_numpy(self, action, order_ij=False):
        """godot-rl's conversion, without its per-agent Python loop for one action key."""
        keys = list(self.action_spaces[0].keys())
        if order_ij or len(keys) != 1:
            return super().from_numpy(action, order_ij=order_ij)
        values = np.asarray(action[0])
        values = values.astype(np.int64) if values.ndim == 1 else values  # int(v), as godot-rl
        return [{keys[0]: v} for v in values.tolist()]

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
            self.connection.settimeout(1.0)
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
