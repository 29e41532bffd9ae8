"""The project's own pace is kept: a ``scrapy startproject`` project crawls a site as
fast with the add-on as without it, and no faster than its ``DOWNLOAD_DELAY`` allows.

Two copies of one project made by ``scrapy startproject`` (whose template writes
``DOWNLOAD_DELAY = 1`` and ``CONCURRENT_REQUESTS_PER_DOMAIN = 1``): one as made, one with
the add-on in the template's ``ADDONS`` and the README's loopback block appended, as
written (the site is on 127.0.0.1). Both crawl the docs site at the same time, so both
meet the same load on the machine; the figures are printed (``pytest -s``).
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from .project import Project, Site, add_addon, startproject
from .readme import code_blocks

pytestmark = pytest.mark.e2e

#: The bar: the add-on's wall time over stock Scrapy's, the same project and site.
WALL_TIME_RATIO_BAR = 1.3
#: The add-on's crawl lasts at least this fraction of its pages' waits at the project's
#: DOWNLOAD_DELAY. Each wait is drawn from 0.5 to 1.5 x the delay, a mean of 1 x: the
#: sum of 70 such draws is within 0.8 x of its mean by more than 10 standard deviations.
PACE_FLOOR = 0.8
CRAWL_TIMEOUT = 290  # under pytest's 300 s
PROGRESS_LINE = re.compile(r"\[irlscrapy\.report\.progress\] INFO: .*pages/s")


def loopback_block() -> str:
    """The README's block that lets a crawl reach a site on this machine."""
    blocks = [
        block
        for block in code_blocks("Adding it to an existing project", "python")
        if "IRL_ALLOW_PRIVATE_ADDRESSES" in block
    ]
    assert len(blocks) == 1, blocks
    return blocks[0]


def template_delay(project: Project) -> float:
    """The ``DOWNLOAD_DELAY`` that ``scrapy startproject`` wrote."""
    found = re.search(r"^DOWNLOAD_DELAY = ([0-9.]+)$", project.settings.read_text(), re.M)
    assert found, "scrapy startproject's template no longer sets DOWNLOAD_DELAY"
    return float(found[1])


def timed_crawl(project: Project, url: str) -> tuple[float, str]:
    """``scrapy crawl docs``: its wall time and its log; it must succeed."""
    started = time.monotonic()
    result = project.run(project.crawl_command(url), timeout=CRAWL_TIMEOUT)
    wall = time.monotonic() - started
    assert result.returncode == 0, result.stderr[-4000:]
    return wall, result.stderr


def test_a_startproject_project_with_the_addon_keeps_its_pace(
    tmp_path: Path, docs_site: Site
) -> None:
    stock, irl = startproject(tmp_path, "stock"), startproject(tmp_path, "irl")
    add_addon(irl)
    irl.append_settings(loopback_block())
    delay = template_delay(irl)
    with ThreadPoolExecutor(2) as pool:
        stock_run = pool.submit(timed_crawl, stock, docs_site.url)
        irl_run = pool.submit(timed_crawl, irl, docs_site.url)
        (stock_wall, _), (irl_wall, irl_log) = stock_run.result(), irl_run.result()
    assert "irlscrapy.scheduler.irl.IRLScheduler" in irl_log  # the add-on took effect
    stock_urls, irl_urls = stock.item_urls(), irl.item_urls()
    pages = len(irl_urls)
    ratio = irl_wall / stock_wall
    print(
        f"pace: {pages} pages, DOWNLOAD_DELAY {delay:g} s; wall stock {stock_wall:.1f} s, "
        f"add-on {irl_wall:.1f} s, ratio {ratio:.3f} (bar {WALL_TIME_RATIO_BAR})"
    )
    print(f"pace: items stock {stock_urls.total()}, add-on {irl_urls.total()}")
    assert set(irl_urls) == set(stock_urls)
    assert pages >= 50  # the site is crawled, not refused
    assert ratio <= WALL_TIME_RATIO_BAR
    # The project's pace, not faster: a wait of DOWNLOAD_DELAY on average between two
    # pages (robots.txt's fetch, the first, is paced by the IP delay, no longer).
    assert irl_wall >= PACE_FLOOR * delay * (pages - 1)
    assert PROGRESS_LINE.search(irl_log), "no progress line: a slow crawl looks hung"
