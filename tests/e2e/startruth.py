"""STAR's counts against the ground truth: the in-degree and pages of every PLD, counted
by brute force over the tiny web's pages and links, and as a crawl's STAR store holds
them."""

from __future__ import annotations

from pathlib import Path

from scrapy.settings import Settings

from irlscrapy.domains import pld, url_host
from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.groundtruth import crawl_order, followed_links
from irlscrapy.spiders.broad import MAX_PAGE_BYTES
from irlscrapy.star.indegree import PLDInDegree

from .conftest import IRL_POLICY, SEED

#: IRL_STAR_TOP_DOMAINS for crawls whose store is read here: every PLD of the tiny web
#: is ranked, so the ranking names them all
TOP = 100_000


def star_truth() -> dict[str, tuple[int, int]]:
    """PLD -> (in-degree, pages) over every page the ground truth fetches whose body the
    spider gets (status 200, within DOWNLOAD_MAXSIZE), for the PLDs with in-links."""
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
    return {p: (len(s), pages.get(p, 0)) for p, s in linking.items()}


def star_counts(star_dir: Path) -> dict[str, tuple[int, int]]:
    """PLD -> (in-degree, pages) as the STAR store at ``star_dir`` (a crawl's
    ``<state dir>/star``, crawled with IRL_STAR_TOP_DOMAINS = TOP) ranks them."""
    # the crawl's own settings: the DRUMs refuse to open with others
    reputation = PLDInDegree.from_settings(
        Settings({"IRL_STAR_TOP_DOMAINS": TOP}), None, lambda: 0.0
    )
    reputation.open(star_dir)  # merges what the crawl left, reads the ranking
    try:
        return {e.name: (e.in_degree, e.pages) for e in reputation.ranked}
    finally:
        reputation.close()


Counts = dict[str, tuple[int, int]]


def assert_counts_equal(got: Counts, expected: Counts) -> None:
    assert len(expected) > 50
    assert got == expected, {
        p: (got.get(p), expected.get(p))
        for p in set(got) | set(expected)
        if got.get(p) != expected.get(p)
    }
