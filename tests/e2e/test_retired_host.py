"""A finite crawl whose only work left is a retired host's parked URLs waits for the
retirement to end when it ends within IRL_CRAWL_GIVE_UP_AFTER, and fetches them; when it
ends later, the crawl gives up at once, parks them, and a rerun fetches them.

The site is one host, 127.0.0.1: its front page links to PAGES pages, and its first
BUSY page requests answer 503, which retires the host (IRL_HEALTH_MAX_FAILURES=BUSY)
with the rest of its pages parked on disk.
"""

from __future__ import annotations

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

PAGES = [f"/p{n}" for n in range(8)]
BUSY = 3


class BusySite(ThreadingHTTPServer):
    """127.0.0.1:0, logging (path, status) of each request; its first BUSY page
    requests answer 503."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.daemon_threads = True
        self.answers: list[tuple[str, int]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"

    def answered(self, status: int) -> list[str]:
        with self.lock:
            return [path for path, got in self.answers if got == status]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: BusySite

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        site = self.server
        with site.lock:
            busy = self.path in PAGES and sum(got == 503 for _, got in site.answers) < BUSY
            status = 503 if busy else 200 if self.path == "/" or self.path in PAGES else 404
            site.answers.append((self.path, status))
        links = "".join(f'<a href="{p}">x</a>' for p in PAGES) if self.path == "/" else ""
        body = f"<html><body>{links}</body></html>".encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def site() -> Iterator[BusySite]:
    server = BusySite()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(5)


def crawl(site: BusySite, job: Path, *settings: str) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "scrapy", "crawl", "broad", "-a", f"seeds={site.url}"]
    for setting in (
        *QUICK_IRL,
        f"IRL_HEALTH_MAX_FAILURES={BUSY}",
        "RETRY_ENABLED=0",  # a 503 is the page's last answer: the test counts them
        "IRL_ALLOW_PRIVATE_ADDRESSES=127.0.0.0/8",
        "TELNETCONSOLE_ENABLED=0",
        "IRL_REPORT_DIR=",
        f"JOBDIR={job}",
        *settings,
    ):
        args += ["-s", setting]
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_a_retirement_that_ends_within_the_give_up_wait_is_waited_for(
    site: BusySite, tmp_path: Path
) -> None:
    ran = crawl(site, tmp_path / "job", "IRL_HEALTH_RETIRE_DELAY=1", "IRL_CRAWL_GIVE_UP_AFTER=20")
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert "retired for 1 s" in ran.stderr, ran.stderr[-3000:]
    busy = site.answered(503)
    assert len(busy) == BUSY
    assert sorted(site.answered(200)) == sorted(["/", *set(PAGES) - set(busy)])
    assert "'finish_reason': 'finished'" in ran.stderr
    assert "are parked in" not in ran.stderr and "irl/frontier/parked_at_close" not in ran.stderr


def test_a_retirement_past_the_give_up_wait_parks_its_urls_at_once_for_a_rerun(
    site: BusySite, tmp_path: Path
) -> None:
    job, settings = tmp_path / "job", ("IRL_HEALTH_RETIRE_DELAY=600", "IRL_CRAWL_GIVE_UP_AFTER=1")
    started = time.monotonic()
    first = crawl(site, job, *settings)
    took = time.monotonic() - started
    assert first.returncode == 0, first.stderr[-3000:]
    left = len(PAGES) - BUSY
    assert f"{left} URLs of hosts or origins that kept failing are parked in" in first.stderr
    assert took < 60, took  # not the retirement's 600 s
    assert sorted(site.answered(200)) == ["/"]
    again = crawl(site, job, *settings)
    assert again.returncode == 0, again.stderr[-3000:]
    assert sorted(site.answered(200)) == sorted(["/", *set(PAGES) - set(site.answered(503))])
