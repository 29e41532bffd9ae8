"""A project's own DOWNLOAD_DELAY under the add-on: per host, as in stock Scrapy.

    python bench/download_delay.py [--rounds R] [--delay SECONDS] [--pages N]

A small HTTP server on 127.0.0.1 answers every path with a page (robots.txt: 404). One
spider (``scrapy runspider``, no project settings) fetches N pages from each of two host
names of that server (``localhost`` and ``127.0.0.1``) with ``DOWNLOAD_DELAY`` set, as
a project would, and ``ROBOTSTXT_OBEY``; once as stock Scrapy and once with the add-on
(``ADDONS = {"irlscrapy.Addon": 0}``, IRL politeness delays 0, loopback allowed),
alternately, R rounds. Figure: each crawl's ``elapsed_time_seconds`` stat (start-up not
counted). Bar (issue 17): the median of the add-on's crawls is at most 1.1 x the median
of stock's plus 0.5 s. Stock Scrapy keeps one downloader slot per host, so two hosts
take about N delays, not 2 N.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from common import ADDON_ON_LOOPBACK, emit, median

BENCH_NAME = "download_delay"
HOSTS = ("localhost", "127.0.0.1")
#: ADDON_ON_LOOPBACK as ``-s`` values
ADDON_SETTINGS = {
    name: json.dumps(value) if isinstance(value, dict) else str(value)
    for name, value in ADDON_ON_LOOPBACK.items()
}
SPIDER = """
import scrapy


class DelaySpider(scrapy.Spider):
    name = "delay"
    start_urls = {urls!r}

    def parse(self, response):
        yield {{"url": response.url, "slot": response.meta.get("download_slot")}}
"""
CRAWL_TIMEOUT_S = 300


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/robots.txt":
            self.send_response(404)
            body = b"no robots.txt"
        else:
            self.send_response(200)
            body = b"<html><body>a page</body></html>"
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


def crawl(spider: Path, settings: dict[str, str], delay: float) -> float:
    """One crawl; its elapsed_time_seconds stat."""
    command = [sys.executable, "-m", "scrapy", "runspider", str(spider)]
    for name, value in {
        "DOWNLOAD_DELAY": str(delay),
        "ROBOTSTXT_OBEY": "True",
        "TELNETCONSOLE_ENABLED": "False",
        "LOG_LEVEL": "INFO",
        **settings,
    }.items():
        command += ["-s", f"{name}={value}"]
    proc = subprocess.run(
        command,
        cwd=spider.parent,  # no scrapy.cfg: Scrapy's defaults only
        capture_output=True,
        text=True,
        timeout=CRAWL_TIMEOUT_S,
    )
    found = re.search(r"'elapsed_time_seconds': ([0-9.]+)", proc.stderr)
    pages = re.search(r"'item_scraped_count': ([0-9]+)", proc.stderr)
    if proc.returncode or not found or not pages:
        raise RuntimeError(f"the crawl failed:\n{proc.stderr[-3000:]}")
    return float(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds (3)")
    parser.add_argument("--delay", type=float, default=1.0, help="DOWNLOAD_DELAY (1.0)")
    parser.add_argument("--pages", type=int, default=6, help="pages per host (6)")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    urls = [f"http://{host}:{port}/p{i}" for host in HOSTS for i in range(args.pages)]
    times: dict[str, list[float]] = {"stock": [], "addon": []}
    try:
        with tempfile.TemporaryDirectory(prefix="irlscrapy-delay-") as tmp:
            spider = Path(tmp) / "delay.py"
            spider.write_text(SPIDER.format(urls=urls))
            for round_ in range(1, args.rounds + 1):
                for variant, settings in (("stock", {}), ("addon", ADDON_SETTINGS)):
                    seconds = crawl(spider, settings, args.delay)
                    times[variant].append(seconds)
                    emit(
                        BENCH_NAME,
                        "elapsed_s",
                        round(seconds, 3),
                        "s",
                        variant=variant,
                        round=round_,
                    )
    finally:
        server.shutdown()
    stock, addon = median(times["stock"]), median(times["addon"])
    emit(BENCH_NAME, "median_elapsed_s", round(stock, 3), "s", variant="stock")
    emit(BENCH_NAME, "median_elapsed_s", round(addon, 3), "s", variant="addon")
    limit = 1.1 * stock + 0.5
    emit(
        BENCH_NAME,
        "addon_median_within_bar",
        addon <= limit,
        "bool",
        bar="addon <= 1.1 x stock + 0.5 s",
        limit_s=round(limit, 3),
        hosts=len(HOSTS),
        pages_per_host=args.pages,
        delay_s=args.delay,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
