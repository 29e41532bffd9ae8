"""Stopped and resumed, an ordinary project yields each item once.

The first-hour project (:mod:`.project`: made by ``scrapy startproject``, its ``docs``
spider yielding an item per page and a ``response.follow`` Request per link, the
README's blocks pasted into settings.py) crawls Flask's documentation on loopback with
a JOBDIR, is stopped mid-crawl and rerun on the same JOBDIR until it finishes. Its
items are compared with those of the same project without the add-on, crawled whole
once (stock Scrapy):

- stopped by SIGINT twice: the feed's URL multiset is stock Scrapy's (which holds the
  start page twice: Scrapy's start request is ``dont_filter``, and the page links to
  itself);
- killed by kill -9 three times: no URL is missing, and each kill adds at most one item
  (the page in flight: one request per host at a time). Scrapy's feed export buffers
  its file, so a kill -9 loses the feed's last lines (and may cut one): the items are
  read from the crawl's log ("Scraped from"), which is written line by line.

The workbench holds few URLs of a host, so most of the site goes back to BEAST's later
queues while the host is busy: the deferral that made a resumed run fetch pages twice.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from .project import Project, Site, interrupt, kill, startproject
from .readme import code_blocks

pytestmark = pytest.mark.e2e

#: A pace for a crawl of tens of seconds: the project's (the template's DOWNLOAD_DELAY
#: is 1 s) and the add-on's, per host and per IP, with floors at the delays.
PACE = (
    "DOWNLOAD_DELAY=0.1",
    "IRL_HOST_DELAY=0.1",
    "IRL_HOST_DELAY_MIN=0.1",
    "IRL_IP_DELAY=0.05",
    "IRL_IP_DELAY_MIN=0.05",
)
#: The host's URLs in RAM at most: the rest of the site waits in BEAST.
HOST_URLS = "IRL_WORKBENCH_HOST_URLS=8"
SCRAPED = re.compile(r"Scraped from <\d+ (\S+)>")
CRAWLED = re.compile(r"Crawled \(\d+\) <GET (\S+)>")
RUN_TIMEOUT = 120.0


def settings(*names: str) -> list[str]:
    return [arg for name in names for arg in ("-s", name)]


def scraped(log: Path) -> list[str]:
    return SCRAPED.findall(log.read_text(encoding="utf-8", errors="replace"))


@pytest.fixture(scope="module")
def stock_items(docs_site: Site, tmp_path_factory: pytest.TempPathFactory) -> Counter[str]:
    """The items' URLs of the project without the add-on, crawled whole once."""
    project = startproject(tmp_path_factory.mktemp("stock"))
    done = project.run(project.crawl_command(docs_site.url, *settings("DOWNLOAD_DELAY=0.1")))
    assert done.returncode == 0, done.stderr[-3000:]
    items = project.item_urls()
    assert len(items) > docs_site.pages * 0.9, sorted(items)
    return items


def adopting_project(parent: Path) -> Project:
    """The project with the README's blocks appended to its settings.py."""
    project = startproject(parent)
    blocks = code_blocks("Adding it to an existing project", "python")
    assert len(blocks) == 2, blocks
    for block in blocks:
        project.append_settings(block)
    return project


def crawl_until(
    project: Project, site: Site, pattern: re.Pattern[str], count: int
) -> tuple[subprocess.Popen[str], Path]:
    """A run of the crawl, once its log holds ``count`` lines matching ``pattern``
    (the run still going: the stop lands mid-crawl)."""
    log = project.root / f"crawl-{len(list(project.root.glob('crawl-*.log')))}.log"
    process = project.start(project.crawl_command(site.url, *settings(*PACE, HOST_URLS)))
    deadline = time.monotonic() + RUN_TIMEOUT
    while len(pattern.findall(log.read_text(encoding="utf-8", errors="replace"))) < count:
        assert process.poll() is None, f"the run ended before the stop: {log}"
        assert time.monotonic() < deadline, f"no {count} lines {pattern.pattern!r}: {log}"
        time.sleep(0.05)
    return process, log


def finish(project: Project, site: Site) -> Path:
    """The last run, to the end of the crawl."""
    log = project.root / f"crawl-{len(list(project.root.glob('crawl-*.log')))}.log"
    process = project.start(project.crawl_command(site.url, *settings(*PACE, HOST_URLS)))
    assert process.wait(RUN_TIMEOUT) == 0, log
    text = log.read_text(encoding="utf-8")
    assert "'finish_reason': 'finished'" in text, log
    assert "resuming from" in text, log  # (the state of the stopped runs was there)
    return log


def test_stopped_by_sigint_twice_and_resumed_it_yields_stock_scrapys_items(
    docs_site: Site, stock_items: Counter[str], tmp_path: Path
) -> None:
    project = adopting_project(tmp_path)
    for count in (8, 30):
        process, log = crawl_until(project, docs_site, SCRAPED, count)
        assert interrupt(process) == 0, log
        assert "'finish_reason': 'shutdown'" in log.read_text(encoding="utf-8"), log
    finish(project, docs_site)
    items = project.item_urls()
    assert items == stock_items, {
        "twice": {url: n for url, n in (items - stock_items).items()},
        "missing": sorted(stock_items - items),
    }


def test_killed_three_times_and_resumed_each_kill_adds_at_most_one_item(
    docs_site: Site, stock_items: Counter[str], tmp_path: Path
) -> None:
    project = adopting_project(tmp_path)
    logs = []
    # a kill just after a page's item (its links being handed over), just after a
    # response came (before its callback), and after an item again
    for pattern, count in ((SCRAPED, 6), (CRAWLED, 12), (SCRAPED, 20)):
        process, log = crawl_until(project, docs_site, pattern, count)
        assert kill(process) == -9
        logs.append(log)
    logs.append(finish(project, docs_site))
    items = Counter(url for log in logs for url in scraped(log))
    assert not stock_items - items, sorted(stock_items - items)
    extra = items - stock_items
    assert extra.total() <= 3, dict(extra)
