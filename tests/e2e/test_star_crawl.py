"""STAR in a real crawl: after the tiny web is crawled completely, every PLD's in-degree
and page count in the crawl's state equal a brute-force count over the ground truth's
pages and links, and top PLDs got larger budgets."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from scrapy.settings import Settings

from irlscrapy.domains import pld, url_host
from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.groundtruth import crawl_order, followed_links
from irlscrapy.spiders.broad import MAX_PAGE_BYTES
from irlscrapy.star.indegree import PLDInDegree

from .conftest import IRL_POLICY, QUICK_IRL, SEED, crawl_tiny

TOP = 100_000  # every PLD of the tiny web is ranked


@pytest.fixture(scope="module")
def crawl(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    root = tmp_path_factory.mktemp("star-crawl")
    result = crawl_tiny(
        root / "requests.jsonl",
        *QUICK_IRL,
        f"IRL_STATE_DIR={root / 'state'}",
        f"IRL_STAR_TOP_DOMAINS={TOP}",
        "IRL_STAR_REFRESH=1",
    )
    return result, root / "state"


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
