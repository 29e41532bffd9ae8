"""A real ``redis-server`` (Debian's package, tests/system-packages.sh) for the tests of
the multi-agent mode: on 127.0.0.1, an ephemeral port, no persistence, its own
directory; it can be stopped and started again on the same port (Redis going away)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import redis

LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 10.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        port: int = s.getsockname()[1]
        return port


class RedisServer:
    def __init__(self, directory: Path, persistent: bool = False) -> None:
        """``persistent``: an append-only file fsynced at every write, so a Redis stopped
        and started again has everything it had (as a production Redis is set up)."""
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError(
                "redis-server is not installed: run `sh tests/system-packages.sh` as root"
            )
        self.binary = binary
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.persistence = ["--appendonly", "yes", "--appendfsync", "always"] if persistent else [
            "--appendonly", "no"]  # fmt: skip

    @property
    def url(self) -> str:
        return f"redis://{LOOPBACK}:{self.port}/0"

    def start(self) -> RedisServer:
        self.directory.mkdir(parents=True, exist_ok=True)
        with (self.directory / "redis.log").open("ab") as log:
            self.process = subprocess.Popen(
                [self.binary, "--bind", LOOPBACK, "--port", str(self.port), "--save", "",
                 *self.persistence, "--dir", str(self.directory), "--loglevel", "warning",
                 "--protected-mode", "no"],
                stdout=log,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        client = self.client()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                client.ping()
                return self
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    written = (self.directory / "redis.log").read_text()
                    raise RuntimeError(f"redis-server did not start: {written[-2000:]}") from None
                time.sleep(0.02)
            finally:
                client.close()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.process = None

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)
