"""STAR in a real crawl: after the tiny web is crawled completely, every PLD's in-degree
and page count in the crawl's state equal a brute-force count over the ground truth's
pages and links, and top PLDs got larger budgets. With ``IRL_BUDGETS = "off"`` the
same crawl fetches the same pages (budgets order a crawl, they never drop a URL) and
STAR still counts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from scrapy.settings import Settings

from irlscrapy.domains import pld, url_host
from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.audit import ROBOTS_PATHS
from irlscrapy.oracle.groundtruth import crawl_order, followed_links
from irlscrapy.spiders.broad import MAX_PAGE_BYTES
from irlscrapy.star.indegree import PLDInDegree

from .conftest import IRL_POLICY, QUICK_IRL, SEED, crawl_tiny

TOP = 100_000  # every PLD of the tiny web is ranked


def crawl_with(root: Path, budgets: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    return crawl_tiny(
        root / "requests.jsonl",
        *QUICK_IRL,
        f"IRL_STATE_DIR={root / 'state'}",
        f"IRL_STAR_TOP_DOMAINS={TOP}",
        "IRL_STAR_REFRESH=1",
        f"IRL_BUDGETS={budgets}",
    ), root / "state"


@pytest.fixture(scope="module")
def crawl(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    return crawl_with(tmp_path_factory.mktemp("star-crawl"), "star")


def pages_fetched(requests_log: Path) -> set[str]:
    """The pages a crawl got with status 200, from the server's log."""
    records = [json.loads(line) for line in requests_log.read_text().splitlines()]
    return {
        f"{r['scheme']}://{r['host']}{r['path']}"
        for r in records
        if r["status"] == 200 and r["path"] not in ROBOTS_PATHS
    }


def truth() -> tuple[dict[str, int], dict[str, int]]:
    """In-degree and pages per PLD, counted over every page the ground truth fetches
    whose body the spider gets (status 200, within DOWNLOAD_MAXSIZE)."""
    linking: dict[str, set[str]] = {}
    pages: dict[str, int] = {}
    for url, reply in crawl_order(InVitroWeb(TINY, SEED), IRL_POLICY):
        if reply.status != 200 or len(reply.body) > MAX_PAGE_BYTES:
            continue
        source = pld(url_host(url))
        pages[source] = pages.get(source, 0) + 1
        for target in {pld(url_host(u)) for u in followed_links(url, reply, IRL_POLICY)}:
            if target != source:
                linking.setdefault(target, set()).add(source)
    return {p: len(s) for p, s in linking.items()}, pages


def test_in_degrees_and_pages_equal_the_ground_truth(
    crawl: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, state = crawl
    assert result.returncode == 0, result.stderr[-3000:]
    assert "'irl/star/refreshes'" in result.stderr
    assert_star_counted(state)


def test_without_budgets_the_same_pages_are_fetched_and_star_still_counts(
    crawl: tuple[subprocess.CompletedProcess[str], Path], tmp_path: Path
) -> None:
    off, state = crawl_with(tmp_path, "off")
    assert off.returncode == 0, off.stderr[-3000:]
    assert "'irl/star/budget/1001-10000'" not in off.stderr  # no PLD got a larger budget
    star_pages = pages_fetched(crawl[1].parent / "requests.jsonl")
    assert len(star_pages) > 1_000
    assert pages_fetched(tmp_path / "requests.jsonl") == star_pages
    assert_star_counted(state)


def assert_star_counted(state: Path) -> None:
    """The in-degrees and pages in STAR's store equal the ground truth's."""
    # the crawl's own settings: the DRUMs refuse to open with others
    settings = Settings({"IRL_STAR_TOP_DOMAINS": TOP})
    reputation = PLDInDegree.from_settings(settings, None, lambda: 0.0)
    reputation.open(state / "star")  # merges what the crawl left, reads the ranking
    try:
        got = {e.name: (e.in_degree, e.pages) for e in reputation.ranked}
    finally:
        reputation.close()
    in_degree, pages = truth()
    expected = {p: (d, pages.get(p, 0)) for p, d in in_degree.items()}
    assert len(expected) > 50
    assert got == expected, {
        p: (got.get(p), expected.get(p))
        for p in set(got) | set(expected)
        if got.get(p) != expected.get(p)
    }


def test_stats_show_the_budgets_given(
    crawl: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, _ = crawl
    assert "'irl/star/budget/1001-10000'" in result.stderr
    assert "'irl/star/edges'" in result.stderr
