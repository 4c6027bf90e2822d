"""A real redis-server for the tests: a free loopback port, a temporary directory, AOF on.

No mocks: the Redis tests run against the server the Debian package
``redis-server`` installs (``.ci/run`` installs it when missing).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator, Optional

import pytest
import redis

SERVER = shutil.which("redis-server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RedisServer:
    """One redis-server process; ``stop``/``start`` keep the port and the data directory."""

    def __init__(self, directory: Path) -> None:
        if SERVER is None:
            raise RuntimeError("redis-server is not installed (apt-get install redis-server)")
        self.directory = directory
        self.port = free_port()
        self.proc: Optional[subprocess.Popen[bytes]] = None

    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self, **kwargs: object) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, **kwargs)  # type: ignore[arg-type]

    def start(self) -> None:
        assert self.proc is None
        self.proc = subprocess.Popen(
            [SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory),
             "--appendonly", "yes", "--appendfsync", "always", "--save", "",
             "--daemonize", "no", "--loglevel", "warning",
             "--logfile", str(self.directory / "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        probe = self.client(socket_timeout=1)
        end = time.monotonic() + 20
        try:
            while True:
                try:
                    if probe.ping():
                        return
                except (redis.ConnectionError, redis.BusyLoadingError):
                    if self.proc.poll() is not None or time.monotonic() > end:
                        raise RuntimeError(
                            "redis-server did not start: "
                            + (self.directory / "redis.log").read_text(errors="replace"))
                    time.sleep(0.02)
        finally:
            probe.close()

    def shutdown(self) -> None:
        """SHUTDOWN (the AOF is flushed) and wait for the process to end."""
        assert self.proc is not None
        probe = self.client(socket_timeout=5)
        try:
            probe.shutdown()
        except redis.ConnectionError:
            pass  # the server closes the connection as it exits
        finally:
            probe.close()
        self.proc.wait(20)
        self.proc = None

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(20)
            self.proc = None


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One server for a test module; tests that stop it start their own."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.kill()


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A server for one test, which may shut it down and start it again."""
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.kill()
