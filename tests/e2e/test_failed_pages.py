"""A page that fails for good is done when its fetch ends: a crawl killed with kill -9
a moment later, and run again on its JOBDIR, does not fetch it again.

The failures are those no middleware of ours sees end (a downloader middleware raises
them in ``process_response``, and they go to the request's errback only: a gzip body
that unpacks past DOWNLOAD_MAXSIZE, a redirect past REDIRECT_MAX_TIMES: /loop/0 to
/loop/2), and those it
does (a body announced past DOWNLOAD_MAXSIZE, a 404). A page that answers slowly keeps
the first run going until the kill, and is fetched again by the second: it was in
flight.
"""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from .conftest import QUICK_IRL, ROOT

MAX_SIZE = 100_000
#: the failures, each its own way
FAILING = ("/gzip-bomb", "/too-big", "/missing", "/loop/2")
SLOW_S = 60.0  # the first answer of /slow: longer than the test waits


class FailingSite(ThreadingHTTPServer):
    """127.0.0.1:0, logging the paths asked for; /slow answers after SLOW_S the first
    time, at once after."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.daemon_threads = True
        self.paths: list[str] = []
        self.lock = threading.Lock()
        self.release = threading.Event()  # lets the first /slow answer (at teardown)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a crawler killed mid-answer: a broken pipe, as expected

    def asked(self, path: str) -> int:
        with self.lock:
            return self.paths.count(path)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FailingSite

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        site = self.server
        with site.lock:
            site.paths.append(self.path)
            first = site.paths.count(self.path) == 1
        if self.path == "/":
            links = "".join(f'<a href="{p}">x</a>' for p in (*FAILING[:3], "/loop/0", "/slow"))
            self.send(200, f"<html><body>{links}</body></html>".encode(), "text/html")
        elif self.path == "/gzip-bomb":  # 2 KB on the wire, 2 MB unpacked
            self.send(200, gzip.compress(b"<p>" * (700_000)), "text/html", gzip=True)
        elif self.path == "/too-big":
            self.send(200, b"x" * (2 * MAX_SIZE), "text/html")
        elif self.path.startswith("/loop/"):
            step = int(self.path.rsplit("/", 1)[1])
            self.send(302, b"", "text/html", location=f"/loop/{step + 1}")
        elif self.path == "/slow":
            if first:
                site.release.wait(SLOW_S)
            self.send(200, b"<html><body>slow</body></html>", "text/html")
        else:
            self.send(404, b"no such page", "text/plain")

    def send(
        self, status: int, body: bytes, ctype: str, gzip: bool = False, location: str = ""
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if gzip:
            self.send_header("Content-Encoding", "gzip")
        if location:
            self.send_header("Location", location)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def site() -> Iterator[FailingSite]:
    server = FailingSite()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()
    thread.join(5)


def crawl_args(site: FailingSite, job: Path) -> list[str]:
    settings = (
        *QUICK_IRL,
        # The site is one host, fetched one page at a time. A redirect goes through
        # URLseen before it reaches the host's queue: with QUICK_IRL's 0.2 s, a loaded
        # machine let /slow (queued earlier, answered after a minute) go first.
        "IRL_HOST_DELAY=1",
        "IRL_HOST_DELAY_MIN=1",
        "IRL_ALLOW_PRIVATE_ADDRESSES=127.0.0.0/8",
        f"DOWNLOAD_MAXSIZE={MAX_SIZE}",
        "REDIRECT_MAX_TIMES=2",
        "RETRY_ENABLED=0",
        f"DOWNLOAD_TIMEOUT={SLOW_S + 30}",
        "TELNETCONSOLE_ENABLED=0",
        "IRL_REPORT_DIR=",
        f"JOBDIR={job}",
    )
    args = [sys.executable, "-m", "scrapy", "crawl", "broad", "-a", f"seeds={site.url}"]
    for setting in settings:
        args += ["-s", setting]
    return args


def test_a_page_that_failed_for_good_is_not_fetched_again_after_a_kill(
    site: FailingSite, tmp_path: Path
) -> None:
    job = tmp_path / "job"
    with (tmp_path / "first.err").open("w") as err:
        first = subprocess.Popen(
            crawl_args(site, job), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err
        )
    try:
        deadline = time.monotonic() + 60
        while not all(site.asked(p) for p in (*FAILING, "/slow")):
            assert first.poll() is None, (tmp_path / "first.err").read_text()[-3000:]
            assert time.monotonic() < deadline, site.paths
            time.sleep(0.1)
        time.sleep(1.0)  # the failures' ends are handled (they are done in 0.1 s)
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait(30)
    asked_first = list(site.paths)
    second = subprocess.run(
        crawl_args(site, job), cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert second.returncode == 0, second.stderr[-3000:]
    again = site.paths[len(asked_first) :]
    assert "/slow" in again, again  # in flight at the kill: fetched again
    assert not [p for p in again if p in FAILING or p.startswith("/loop/")], again
