"""The project's own pace is kept: a ``scrapy startproject`` project crawls a site as
fast with the add-on as without it, and no faster than its ``DOWNLOAD_DELAY`` allows.

Two copies of one project made by ``scrapy startproject`` (whose template writes
``DOWNLOAD_DELAY = 1`` and ``CONCURRENT_REQUESTS_PER_DOMAIN = 1``): one as made, one with
the add-on in the template's ``ADDONS`` and the README's loopback block appended, as
written (the site is on 127.0.0.1). Both crawl the docs site at the same time, so both
meet the same load on the machine; the figures are printed (``pytest -s``).
"""

from __future__ import annotations

import itertools
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
PROGRESS_LINE = re.compile(r"\[irlscrapy\.report\.progress\] INFO: progress: .* responses \(")
#: Log lines stamped to the millisecond (Scrapy's default stamp is to the second).
TIMED_LOG_FORMAT = "%(created).3f [%(name)s] %(levelname)s: %(message)s"
#: When a page of the site came (200 or 404; robots.txt's fetch is no page), in such a log.
CRAWLED_PAGE = re.compile(
    r"^([0-9.]+) \[scrapy\.core\.engine\] DEBUG: Crawled \(\d+\) <GET (?!\S*/robots\.txt>)", re.M
)
#: Two download times on loopback differ by less than this.
GAP_TOLERANCE = 0.05


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
    """``scrapy crawl docs``, its log stamped to the millisecond: its wall time and its
    log; it must succeed."""
    started = time.monotonic()
    command = project.crawl_command(url, f"-sLOG_FORMAT={TIMED_LOG_FORMAT}")
    result = project.run(command, timeout=CRAWL_TIMEOUT)
    wall = time.monotonic() - started
    assert result.returncode == 0, result.stderr[-4000:]
    return wall, result.stderr


def page_gaps(log: str) -> list[float]:
    """The seconds between two pages of the site coming, in a crawl's timed log."""
    pages = [float(at) for at in CRAWLED_PAGE.findall(log)]
    return [later - earlier for earlier, later in itertools.pairwise(pages)]


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
    assert f"politeness: {delay:g} s between two requests to a host (from the project's " in irl_log
    stock_urls, irl_urls = stock.item_urls(), irl.item_urls()
    pages = len(irl_urls)
    ratio = irl_wall / stock_wall
    gaps = page_gaps(irl_log)
    print(
        f"pace: {pages} pages, DOWNLOAD_DELAY {delay:g} s; wall stock {stock_wall:.1f} s, "
        f"add-on {irl_wall:.1f} s, ratio {ratio:.3f} (bar {WALL_TIME_RATIO_BAR}); the "
        f"add-on's gaps between pages {min(gaps):.3f} to {max(gaps):.3f} s, mean "
        f"{sum(gaps) / len(gaps):.3f} s"
    )
    print(f"pace: items stock {stock_urls.total()}, add-on {irl_urls.total()}")
    assert set(irl_urls) == set(stock_urls)
    assert pages >= 50  # the site is crawled, not refused
    assert ratio <= WALL_TIME_RATIO_BAR
    # The project's pace, not faster: each wait at least half of DOWNLOAD_DELAY, and
    # the delay on average (robots.txt's fetch, the first, is paced by the IP delay).
    assert min(gaps) >= 0.5 * delay - GAP_TOLERANCE
    assert irl_wall >= PACE_FLOOR * delay * (pages - 1)
    # drawn as Scrapy draws it: of 70 waits, some are well under the delay (IRL_HOST_DELAY's
    # default, also 1 s, has no jitter)
    assert min(gaps) < 0.9 * delay
    assert PROGRESS_LINE.search(irl_log), "no progress line: a slow crawl looks hung"


def test_with_irl_host_delay_set_the_projects_download_delay_still_applies(
    tmp_path: Path, docs_site: Site
) -> None:
    """IRL_HOST_DELAY (here 0) wins in the workbench; the template's DOWNLOAD_DELAY is
    then kept by Scrapy's downloader, between the starts of a host's requests: no two
    pages come closer than its shortest draw, half the delay."""
    irl = startproject(tmp_path, "irl")
    add_addon(irl)
    irl.append_settings(loopback_block())
    delay = template_delay(irl)
    result = irl.run(
        irl.crawl_command(
            docs_site.url,
            "-sIRL_HOST_DELAY=0",
            "-sIRL_HOST_DELAY_MIN=0",
            "-sCLOSESPIDER_ITEMCOUNT=8",
            f"-sLOG_FORMAT={TIMED_LOG_FORMAT}",
        ),
        timeout=CRAWL_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    gaps = page_gaps(result.stderr)
    assert len(gaps) >= 7, result.stderr[-4000:]
    print(f"pace: IRL_HOST_DELAY=0, gaps between pages {min(gaps):.3f} to {max(gaps):.3f} s")
    assert min(gaps) >= 0.5 * delay - GAP_TOLERANCE
