"""One real `mlflow server` per test run (a SQLite store and artifacts in a temporary folder),
and HTTP servers of the tests' own on 127.0.0.1: a proxy to it that can hold an answer back.

Starting the server costs tens of seconds here (it imports a web stack and migrates its
database), so `test_track` and `test_track_bounds` share one (the `mlflow_uri` fixture; both
modules are one xdist group, so one worker starts it once); each test uses its own experiment.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.helpers import wait_for


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ready(uri: str) -> bool:
    """The server answers a request that reads its store (the default experiment): /health
    answers before the worker has opened its database, which on a loaded machine took a minute
    more, and the tests' first calls ran into their bounds."""
    url = f"{uri}/api/2.0/mlflow/experiments/get-by-name?experiment_name=Default"
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def mlflow_server(tmp: Path) -> Iterator[str]:
    """A real tracking server on a free port of 127.0.0.1, killed (its whole process group) at
    the end."""
    exe = Path(sys.executable).with_name("mlflow")
    tmp.mkdir(parents=True, exist_ok=True)
    log = open(tmp / "server.log", "wb")  # noqa: SIM115
    port = free_port()
    # MLflow 3's server also starts a job runner and seven huey consumers that poll their queue:
    # 33 s of CPU to start and 1.5 of the two cores for as long as it runs (measured idle, 45 CPU
    # s in 30 s; 0.1 without them). rlcrate submits no server-side jobs, so they stay off.
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    proc = subprocess.Popen(
        [
            str(exe), "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
            "--backend-store-uri", f"sqlite:///{tmp}/mlflow.db",
            "--artifacts-destination", str(tmp / "artifacts"),
        ],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        env=env,
    )  # fmt: skip
    uri = f"http://127.0.0.1:{port}"
    try:
        # a minute and more on a loaded machine: it imports a web stack and migrates its database
        wait_for(lambda: _ready(uri) or proc.poll() is not None, 300, "mlflow server")
        assert proc.poll() is None, (tmp / "server.log").read_text()[-2000:]
        yield uri
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        log.close()


@contextlib.contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler], port: int = 0) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 (loopback only; `port` 0: a free one) in a thread, shut down
    at the end."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        handler.stop.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()


class Hold:
    """A proxy to the real MLflow server that, at the Nth request whose path has `part`,
    forwards it, gets the server's answer, and holds that answer back until released: the
    moment a kill leaves the client not knowing what the server made. `nth` 0: a plain proxy
    that holds nothing."""

    def __init__(self, upstream: str, part: str = "", nth: int = 0):
        self.upstream, self.part, self.nth = upstream, part, nth
        self.seen, self.held, self.release = 0, threading.Event(), threading.Event()

    def handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        hold = self

        class Proxy(http.server.BaseHTTPRequestHandler):
            stop = threading.Event()

            def _forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                req = urllib.request.Request(
                    hold.upstream + self.path, data=body or None, method=self.command
                )
                req.add_header("Content-Type", self.headers.get("Content-Type") or "")
                try:
                    with urllib.request.urlopen(req, timeout=60) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as err:
                    status, data = err.code, err.read()
                if hold.part in self.path:
                    hold.seen += 1
                    if hold.seen == hold.nth:
                        hold.held.set()
                        hold.release.wait(120)
                with contextlib.suppress(OSError):
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_DELETE = _forward  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        return Proxy
