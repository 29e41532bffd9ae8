"""Start an in-vitro web in a child process and learn where it listens."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

from irlscrapy.exceptions import InVitroError


def irlscrapy_root() -> str:
    """The ``sys.path`` entry this process imported ``irlscrapy`` from: a directory, or
    the zip archive of a Scrapyd egg (whose path Scrapyd added at run time, so a child
    process would not find it without being told)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # irlscrapy/
    return os.path.dirname(package)


class InVitroProcess:
    """A child ``irlscrapy invitro serve``; usable as a context manager.

    ``info`` holds the JSON line the child printed (proxy, dns, seeds, settings, env).
    ``cpu`` pins the child to one core (benchmarks keep server and crawler apart).
    """

    def __init__(
        self,
        profile: str = "tiny",
        seed: int = 0,
        log: str | Path | None = None,
        cpu: int | None = None,
        startup_timeout: float = 30.0,
    ) -> None:
        self.profile = profile
        self.seed = seed
        self.log = Path(log) if log is not None else None
        self.cpu = cpu
        self.startup_timeout = startup_timeout
        self.info: dict[str, Any] = {}
        self._proc: subprocess.Popen[str] | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self) -> dict[str, Any]:
        if self._proc is not None:
            raise InVitroError("this in-vitro web is already running")
        cmd = [
            sys.executable,
            "-m",
            "irlscrapy",
            "invitro",
            "serve",
            "--profile",
            self.profile,
            "--seed",
            str(self.seed),
        ]
        if self.log is not None:
            cmd += ["--log", str(self.log)]
        # The child runs the same irlscrapy as this process, even one from a Scrapyd egg.
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (irlscrapy_root(), env.get("PYTHONPATH", "")) if p
        )
        self._proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env
        )
        if self.cpu is not None:
            os.sched_setaffinity(self._proc.pid, {self.cpu})
        assert self._proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self._proc.stdout, selectors.EVENT_READ)
            ready = sel.select(self.startup_timeout)
        line = self._proc.stdout.readline() if ready else ""
        if not line:
            self.stop()
            raise InVitroError(
                f"the in-vitro web ({' '.join(cmd)}) printed nothing within "
                f"{self.startup_timeout} s; run that command by hand to see why"
            )
        self.info = json.loads(line)
        return self.info

    def terminate(self) -> None:
        """Ask the child to stop (SIGTERM) without waiting: it winds down (a few tenths
        of a second) while the crawl closes; :meth:`stop` then waits for it."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        """Stop the child (SIGTERM, then SIGKILL after 10 s); its log is flushed on SIGTERM."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout:
            proc.stdout.close()

    def __enter__(self) -> InVitroProcess:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
