"""A real redis-server for the tests: a free loopback port, a temporary directory, AOF on.

No mocks: the Redis tests run against the server the Debian package
``redis-server`` installs (``.ci/run`` installs it when missing); ``Sentinel``
starts a master, a replica and a redis-sentinel (package ``redis-sentinel``)
on loopback ports.  Without a redis-server on PATH, conftest.py skips every
test that takes one of these fixtures, or fails it when
``DQ_CORE_REQUIRE_REDIS`` is set (as CI does).
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
SENTINEL = shutil.which("redis-sentinel")


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

    def start(self, *options: str) -> None:
        assert self.proc is None
        self.proc = subprocess.Popen(
            [
                SERVER,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.directory),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--daemonize",
                "no",
                "--loglevel",
                "warning",
                "--logfile",
                str(self.directory / "redis.log"),
                *options,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
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
                            + (self.directory / "redis.log").read_text(errors="replace")
                        )
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


class Sentinel:
    """A master, a replica of it and a redis-sentinel watching them, on loopback.

    The sentinel (quorum 1) declares the master down after ``down_ms`` and
    promotes the replica: about a second and a half in all.
    """

    NAME = "dq"

    def __init__(self, directory: Path, down_ms: int = 300) -> None:
        if SENTINEL is None:
            raise RuntimeError("redis-sentinel is not installed (apt-get install redis-sentinel)")
        (directory / "master").mkdir()
        (directory / "replica").mkdir()
        self.master = RedisServer(directory / "master")
        self.replica = RedisServer(directory / "replica")
        self.directory = directory
        self.port = free_port()
        self.down_ms = down_ms
        self.proc: Optional[subprocess.Popen[bytes]] = None

    def start(self) -> None:
        self.master.start("--repl-diskless-sync-delay", "0")  # the replica syncs at once
        self.replica.start("--replicaof", "127.0.0.1", str(self.master.port))
        conf = self.directory / "sentinel.conf"
        conf.write_text(
            f"port {self.port}\nbind 127.0.0.1\ndir {self.directory}\n"
            f"sentinel monitor {self.NAME} 127.0.0.1 {self.master.port} 1\n"
            f"sentinel down-after-milliseconds {self.NAME} {self.down_ms}\n"
            f"sentinel failover-timeout {self.NAME} 2000\n"
            # told, not left to find (it asks the master every 10 s)
            f"sentinel known-replica {self.NAME} 127.0.0.1 {self.replica.port}\n"
        )
        assert SENTINEL is not None
        self.proc = subprocess.Popen(
            [SENTINEL, str(conf), "--loglevel", "warning", "--logfile", str(self.directory / "sentinel.log")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        probe = redis.Redis(port=self.port, socket_timeout=1)
        end = time.monotonic() + 20
        try:  # up once the replica is in sync and the sentinel knows it
            while True:
                try:
                    info = self.replica.client().info("replication")
                    known = probe.sentinel_slaves(self.NAME)
                    if info.get("master_link_status") == "up" and known:
                        return
                except redis.ConnectionError:
                    pass
                if time.monotonic() > end:
                    raise RuntimeError(
                        "the sentinel set did not come up: "
                        + (self.directory / "sentinel.log").read_text(errors="replace")
                    )
                time.sleep(0.05)
        finally:
            probe.close()

    def master_address(self) -> tuple[str, int]:
        probe = redis.Redis(port=self.port, socket_timeout=1)
        try:
            host, port = probe.sentinel_get_master_addr_by_name(self.NAME)
            return host, int(port)
        finally:
            probe.close()

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(20)
            self.proc = None
        self.master.kill()
        self.replica.kill()


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One server for a test module; tests that stop it start their own."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.kill()


@pytest.fixture
def sentinel(tmp_path: Path) -> Iterator[Sentinel]:
    """A master, its replica and a sentinel, for one test."""
    sentinels = Sentinel(tmp_path)
    sentinels.start()
    yield sentinels
    sentinels.kill()


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A server for one test, which may shut it down and start it again."""
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.kill()
