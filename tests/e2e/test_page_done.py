"""A page is done only once every request its callback yielded is in the frontier.

Scrapy's scraper reads a callback's output ahead, into a queue of up to
2 x CONCURRENT_ITEMS, and passes each request on to the scheduler later (its asyncio
path, the default reactor): the iterator can end while the last requests have not
reached the scheduler. A page marked done in the admitted journal at that moment was
lost with them to a kill -9: the resumed crawl neither fetched the page again nor had
its last links. The page is now done once the engine has finished with its request.

A real crawl of a loopback server (``scrapy runspider`` with the add-on and a JOBDIR):
the root page yields ``KIDS`` requests, and the spider kills its own process with
SIGKILL when the engine schedules the last of them, before the scheduler has it. The
crawl resumed on the same JOBDIR fetches every kid."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .contract_spiders import EchoWeb

pytestmark = pytest.mark.e2e

KIDS = 20
SPIDER = (
    f"KIDS = {KIDS}\n"
    + """
import os
import signal

import scrapy
from scrapy import signals


class FanOut(scrapy.Spider):
    name = "fanout"

    def __init__(self, base, kill="", **kwargs):
        super().__init__(**kwargs)
        self.base, self.kill = base, kill

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        if spider.kill:
            crawler.signals.connect(spider.scheduled, signal=signals.request_scheduled)
        return spider

    async def start(self):
        yield scrapy.Request(self.base + "/root")

    def parse(self, response):
        if response.url.endswith("/root"):
            for n in range(KIDS):
                yield scrapy.Request(f"{self.base}/kid/{n}")

    def scheduled(self, request, spider):
        if request.url.endswith(f"/kid/{KIDS - 1}"):  # not in the scheduler yet
            os.kill(os.getpid(), signal.SIGKILL)
"""
)
SETTINGS = {
    "ADDONS": json.dumps({"irlscrapy.Addon": 0}),
    "IRL_ALLOW_PRIVATE_ADDRESSES": "127.0.0.0/8",
    "IRL_HOST_DELAY": 0.02,
    "IRL_HOST_DELAY_MIN": 0.01,
    "IRL_IP_DELAY": 0.01,
    "IRL_IP_DELAY_MIN": 0.0,
    "IRL_REPORT_DIR": "",
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "INFO",
}


def crawl(work: Path, base: str, kill: bool) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "scrapy", "runspider", "fanout.py", "-a", f"base={base}"]
    if kill:
        args += ["-a", "kill=1"]
    for name, value in {**SETTINGS, "JOBDIR": str(work / "job")}.items():
        args += ["-s", f"{name}={value}"]
    return subprocess.run(args, cwd=work, capture_output=True, text=True, timeout=120)


def test_a_kill_as_the_last_link_is_scheduled_loses_no_link(tmp_path: Path) -> None:
    (tmp_path / "fanout.py").write_text(SPIDER)
    with EchoWeb() as web:
        base = f"http://{web.b}"
        killed = crawl(tmp_path, base, kill=True)
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
        assert "Spider closed" not in killed.stderr
        resumed = crawl(tmp_path, base, kill=False)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert "Spider closed (finished)" in resumed.stderr
        fetched = {entry["path"] for entry in web.log}
    missing = [n for n in range(KIDS) if f"/kid/{n}" not in fetched]
    assert not missing, f"kids never fetched: {missing}"
