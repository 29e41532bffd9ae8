"""A crawl closed by its cap does not wait on a hung download (irlscrapy/runtime/closing.py):
the download is cut IRL_CLOSE_GRACE after the close begins, its errback gets a
DownloadCut, no error is logged, and its URL, never fetched, is fetched when the crawl
resumes with the same JOBDIR.

Two loopback hosts (127.0.0.1 and 127.0.0.2: one request in flight per host): the
first's front page links to its own /a and to the second's /hang, which answers only
once the test lets it. The cap (two responses) is reached with /a while /hang hangs.
"""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

DOWNLOAD_TIMEOUT = 60
GRACE = 1.0

SPIDER = """
import json, sys
import scrapy
from scrapy.crawler import CrawlerProcess

class Links(scrapy.Spider):
    name = "links"
    start_urls = [sys.argv[1]]

    def parse(self, response):
        yield {"url": response.url}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, errback=self.failed)

    def failed(self, failure):
        self.logger.info("errback: %%s", type(failure.value).__name__)

process = CrawlerProcess({
    "ADDONS": {"irlscrapy.Addon": 0},
    "IRL_ALLOW_PRIVATE_ADDRESSES": "127.0.0.0/8",
    "IRL_HOST_DELAY": 0.1, "IRL_HOST_DELAY_MIN": 0.0, "IRL_IP_DELAY": 0.0,
    "IRL_IP_DELAY_MIN": 0.0, "IRL_CLOSE_GRACE": %(grace)s,
    "ROBOTSTXT_OBEY": False, "TELNETCONSOLE_ENABLED": False,
    "DOWNLOAD_TIMEOUT": %(timeout)d, "CLOSESPIDER_PAGECOUNT": int(sys.argv[3]),
    "JOBDIR": sys.argv[2], "FEEDS": {sys.argv[4]: {"format": "jsonlines"}},
})
process.crawl(Links)
process.start()
"""


class _Site(http.server.ThreadingHTTPServer):
    daemon_threads = True
    release = threading.Event()
    links: bytes = b""


class _Pages(http.server.BaseHTTPRequestHandler):
    server: _Site

    def do_GET(self) -> None:
        if self.path == "/hang":
            self.server.release.wait(DOWNLOAD_TIMEOUT + 30)
        body = self.server.links if self.path == "/" else b"<html>leaf</html>"
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the first run's cut /hang: its client is gone

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def sites() -> Iterator[tuple[_Site, _Site]]:
    first, second = _Site(("127.0.0.1", 0), _Pages), _Site(("127.0.0.2", 0), _Pages)
    second.release = threading.Event()
    hang = f"http://127.0.0.2:{second.server_address[1]}/hang"
    first.links = f'<html><a href="/a">a</a> <a href="{hang}">hang</a></html>'.encode()
    for site in (first, second):
        threading.Thread(target=site.serve_forever, daemon=True).start()
    yield first, second
    second.release.set()
    for site in (first, second):
        site.shutdown()
        site.server_close()


def _crawl(script: Path, url: str, jobdir: Path, cap: int, feed: Path) -> tuple[str, float]:
    began = time.monotonic()
    result = subprocess.run(
        [sys.executable, str(script), url, str(jobdir), str(cap), str(feed)],
        capture_output=True,
        text=True,
        timeout=DOWNLOAD_TIMEOUT * 2,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stderr, time.monotonic() - began


def _feed_urls(feed: Path) -> list[str]:
    return [json.loads(line)["url"] for line in feed.read_text().splitlines()]


@pytest.mark.e2e
def test_a_hung_download_is_cut_at_the_close_and_fetched_on_resume(
    sites: tuple[_Site, _Site], tmp_path: Path
) -> None:
    first, second = sites
    script = tmp_path / "links.py"
    script.write_text(SPIDER % {"grace": GRACE, "timeout": DOWNLOAD_TIMEOUT})
    url = f"http://127.0.0.1:{first.server_address[1]}/"
    jobdir = tmp_path / "job"

    log, took = _crawl(script, url, jobdir, 2, tmp_path / "run1.jsonl")
    closing = log.index("Closing spider (closespider_pagecount)")
    assert "cut 1 download(s) still in flight IRL_CLOSE_GRACE (1.0 s) after" in log[closing:]
    assert "errback: DownloadCut" in log
    assert "] ERROR: " not in log and "Traceback" not in log
    assert took < DOWNLOAD_TIMEOUT / 2, took  # not held until the download timed out
    first_urls = _feed_urls(tmp_path / "run1.jsonl")
    assert not any(u.endswith("/hang") for u in first_urls)

    second.release.set()  # the resumed crawl finds the host answering
    log, _ = _crawl(script, url, jobdir, 0, tmp_path / "run2.jsonl")
    resumed = _feed_urls(tmp_path / "run2.jsonl")
    assert [u for u in resumed if u.endswith("/hang")] == [
        f"http://127.0.0.2:{second.server_address[1]}/hang"
    ], log[-3000:]
    assert "] ERROR: " not in log
