"""Run one crawl of the real web inside a private mount, network and PID namespace.

Theory of operation
-------------------
:func:`run` starts, from the test::

    unshare --mount --net --pid --fork --kill-child --mount-proc --propagation private \\
        python netns.py RUN_DIR ... -- CRAWL COMMAND

``unshare`` makes the namespaces and forks this file's :func:`main` as PID 1 of the new
PID namespace. :func:`main` (the *driver*) then, inside:

1. brings up the namespace's own loopback (``ip link set lo up``: a new network namespace
   has only ``lo``, down; every 127.0.x.y is local on it, nothing else is reachable);
2. bind-mounts the web's ``hosts`` and ``nsswitch.conf`` over /etc/hosts and
   /etc/nsswitch.conf (the mount namespace is private, so only processes in it see them:
   the machine's files are never changed);
3. starts nginx in the foreground with the run's configuration and waits until every
   site address accepts connections;
4. runs the crawl command (its output to ``RUN_DIR/crawl.log``) for at most
   ``--timeout`` seconds, or the fewer seconds that ``--limit-file`` says once it is
   written (a limit known only after the crawl started: the test's irlscrapy crawl runs
   beside stock Scrapy's, whose wall time sets it); past that it sends SIGINT (Scrapy's
   graceful stop: the stats are still dumped), and SIGKILL ``--grace`` seconds later;
5. stops nginx gracefully (SIGQUIT) and writes ``RUN_DIR/result.json``: the crawl's
   return code, wall seconds, and whether it was stopped.

Teardown cannot be forgotten: when PID 1 of a PID namespace exits, the kernel kills every
process left in it, and ``--kill-child`` kills the driver when ``unshare`` itself dies
(for instance when :func:`run`'s own timeout kills it, or the test is interrupted). With
the last process gone, the network namespace and its mounts go too. ``--mount-proc``
gives the namespace its own /proc, so a process that reads /proc/<its pid> (psutil, in
the crawler's progress line) reads its own.

This file imports only the standard library: it runs as a script inside the namespace.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .server import RealWeb

#: How long nginx gets to listen on every address.
NGINX_START_S = 15.0
#: How long nginx gets to finish a graceful stop before SIGKILL.
NGINX_STOP_S = 10.0
#: How often the driver looks for a ``--limit-file``.
LIMIT_POLL_S = 0.2
#: Extra seconds :func:`run` waits for the driver beyond the crawl's timeout and grace.
DRIVER_MARGIN_S = 30.0
PROXY_VARIABLES = ("http_proxy", "https_proxy", "no_proxy", "all_proxy", "ftp_proxy")


@dataclass(frozen=True)
class NamespaceRun:
    """What one run left in its directory."""

    directory: Path
    returncode: int
    wall: float  # seconds from the crawl's start to its end, as the driver saw them
    stopped: bool  # the driver stopped it at its timeout

    @property
    def access_log(self) -> Path:
        return self.directory / "access.log"

    @property
    def crawl_log(self) -> Path:
        return self.directory / "crawl.log"


def run(
    web: RealWeb,
    directory: Path,
    command: Sequence[str],
    *,
    cwd: Path,
    timeout: float,
    grace: float = 30.0,
    limit_file: Path | None = None,
) -> NamespaceRun:
    """Serve ``web`` and run ``command`` against it in a new namespace (module docstring);
    the run's files go to ``directory``. ``limit_file``, once written (a number of
    seconds), lowers ``timeout`` to that while the crawl runs. Raises RuntimeError, with
    the driver's output, if the namespace or nginx could not be set up."""
    from .server import NAMESPACES, nginx_binary

    directory.mkdir(parents=True, exist_ok=True)
    conf = web.nginx_conf(directory)
    env = {k: v for k, v in os.environ.items() if k.lower() not in PROXY_VARIABLES}
    driver = [
        "unshare",
        *NAMESPACES,
        "--propagation",
        "private",
        sys.executable,
        str(Path(__file__).resolve()),
        str(directory),
        "--nginx",
        str(nginx_binary()),
        "--conf",
        str(conf),
        "--hosts",
        str(web.hosts_file),
        "--nsswitch",
        str(web.nsswitch_file),
        "--timeout",
        str(timeout),
        "--grace",
        str(grace),
        *(("--limit-file", str(limit_file)) if limit_file is not None else ()),
        "--cwd",
        str(cwd),
        *(arg for address in web.addresses for arg in ("--address", address)),
        "--",
        *command,
    ]
    out = subprocess.run(
        driver,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout + 2 * grace + NGINX_START_S + NGINX_STOP_S + DRIVER_MARGIN_S,
    )
    result = directory / "result.json"
    if not result.exists():
        raise RuntimeError(
            f"the namespace driver failed ({out.returncode}):\n{out.stdout}\n{out.stderr}"
        )
    fields = json.loads(result.read_text())
    return NamespaceRun(directory, fields["returncode"], fields["wall"], fields["stopped"])


def _wait_listening(addresses: Sequence[str], nginx: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + NGINX_START_S
    pending = list(addresses)
    while pending:
        if nginx.poll() is not None:
            raise SystemExit(f"nginx exited with {nginx.returncode} before listening")
        try:
            socket.create_connection((pending[0], 80), timeout=1).close()
            pending.pop(0)
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit(f"nginx is not listening on {pending[0]}:80") from None
            time.sleep(0.05)


def _wait(process: subprocess.Popen[bytes], timeout: float, limit_file: Path | None) -> bool:
    """Wait for ``process`` at most ``timeout`` seconds, or what ``limit_file`` says
    once it is written (polled every :data:`LIMIT_POLL_S`). True if it ran past that."""
    started = time.monotonic()
    limit = timeout
    while True:
        if limit_file is not None and limit == timeout and limit_file.exists():
            text = limit_file.read_text(encoding="utf-8").strip()
            if text:  # (written whole by os.replace)
                limit = min(timeout, float(text))
        left = limit - (time.monotonic() - started)
        if left <= 0:
            return process.poll() is None
        try:
            process.wait(left if limit_file is None else min(left, LIMIT_POLL_S))
            return False
        except subprocess.TimeoutExpired:
            pass


def _stop(process: subprocess.Popen[bytes], sig: int, wait: float) -> bool:
    """Send ``sig``; SIGKILL if ``process`` is still there ``wait`` seconds later.
    True if it had to be killed."""
    if process.poll() is not None:
        return False
    process.send_signal(sig)
    try:
        process.wait(wait)
        return False
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return True


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description="the real web's namespace driver")
    parser.add_argument("directory", type=Path)
    parser.add_argument("--nginx", required=True)
    parser.add_argument("--conf", required=True)
    parser.add_argument("--hosts", required=True)
    parser.add_argument("--nsswitch", required=True)
    parser.add_argument("--address", action="append", default=[])
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--grace", type=float, required=True)
    parser.add_argument("--limit-file", type=Path)
    parser.add_argument("--cwd", required=True)
    parser.add_argument("command", nargs="+")
    args = parser.parse_args(argv)
    if os.getpid() != 1:
        raise SystemExit("netns.py runs as PID 1 of a namespace of its own; see run()")

    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    for source, target in ((args.hosts, "/etc/hosts"), (args.nsswitch, "/etc/nsswitch.conf")):
        subprocess.run(["mount", "--bind", source, target], check=True)
    nginx = subprocess.Popen(
        [args.nginx, "-p", str(args.directory), "-e", str(args.directory / "error.log"),
         "-c", args.conf, "-g", "daemon off;"],
    )  # fmt: skip
    try:
        _wait_listening(args.address, nginx)
        with open(args.directory / "crawl.log", "wb") as log:
            started = time.monotonic()
            crawl = subprocess.Popen(
                args.command, cwd=args.cwd, stdout=log, stderr=subprocess.STDOUT
            )
            stopped = _wait(crawl, args.timeout, args.limit_file)
            if stopped:
                print("netns: the crawl passed its time limit; SIGINT", file=sys.stderr)
                _stop(crawl, signal.SIGINT, args.grace)
            wall = time.monotonic() - started
    finally:
        _stop(nginx, signal.SIGQUIT, NGINX_STOP_S)
    result = {"returncode": crawl.returncode, "wall": wall, "stopped": stopped}
    (args.directory / "result.json").write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
