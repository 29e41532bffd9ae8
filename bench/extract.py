"""Link extractors on broad-profile pages, no network.

    python bench/extract.py [--quick]

Pages: the bodies :meth:`InVitroWeb.respond` gives (profile broad, seed 0) for the first
:data:`PAGE_COUNT` HTML pages a breadth-first crawl downloads (``irlscrapy invitro
urls``), without the few above :data:`MAX_PAGE_BYTES` that the spider's DOWNLOAD_MAXSIZE
drops. Extractors:

``regex``          :func:`irlscrapy.spiders.extract.extract_hrefs`, the spider's byte regex
                   (the baseline: every ratio is against it)
``regex_follow``   :func:`irlscrapy.spiders.extract.links_to_follow`: the regex plus URL
                   joining, fragment removal, scheme/extension filters and de-duplication,
                   i.e. everything the spider does per page
``lxml``           ``lxml.html.document_fromstring(body).xpath("//a/@href")``
``parsel``         ``parsel.Selector(body=body, encoding="utf-8").xpath("//a/@href")``
``linkextractor``  ``scrapy.linkextractors.LinkExtractor().extract_links(response)`` on an
                   ``HtmlResponse`` built beforehand (in a spider the response exists; its
                   parse is part of the timing, as the selector is built lazily)

Each extractor runs over all pages :data:`ROUNDS` times, interleaved with the others;
the figure is the median round, in microseconds per page, and its ratio to the regex.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import lxml.html
import parsel
from common import emit, median, page_urls
from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor

from irlscrapy.invitro.profiles import get_profile
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.groundtruth import split_url
from irlscrapy.spiders.extract import extract_hrefs, links_to_follow

PROFILE = "broad"
SEED = 0
PAGE_COUNT = 500
QUICK_PAGE_COUNT = 50
ROUNDS = 5
QUICK_ROUNDS = 1
MAX_PAGE_BYTES = 2 * 1024 * 1024  # the broad spider's DOWNLOAD_MAXSIZE
BENCH_CPU = 1  # away from core 0, where a server of another benchmark would run
BENCH_NAME = "extract"

Page = tuple[str, bytes]


def load_pages(count: int) -> list[Page]:
    web = InVitroWeb(get_profile(PROFILE), SEED)
    pages = []
    for url in page_urls(PROFILE, SEED, count):
        body = web.respond(*split_url(url)).body
        if len(body) <= MAX_PAGE_BYTES:
            pages.append((url, body))
    return pages


def run_regex(pages: list[Page], _: Any) -> int:
    return sum(len(extract_hrefs(body)) for _, body in pages)


def run_regex_follow(pages: list[Page], _: Any) -> int:
    return sum(len(links_to_follow(url, body)) for url, body in pages)


def run_lxml(pages: list[Page], _: Any) -> int:
    return sum(len(lxml.html.document_fromstring(body).xpath("//a/@href")) for _, body in pages)


def run_parsel(pages: list[Page], _: Any) -> int:
    return sum(
        len(parsel.Selector(body=body, encoding="utf-8").xpath("//a/@href").getall())
        for _, body in pages
    )


def run_linkextractor(pages: list[Page], responses: list[HtmlResponse]) -> int:
    extractor = LinkExtractor()
    return sum(len(extractor.extract_links(r)) for r in responses)


EXTRACTORS: dict[str, Callable[[list[Page], Any], int]] = {
    "regex": run_regex,
    "regex_follow": run_regex_follow,
    "lxml": run_lxml,
    "parsel": run_parsel,
    "linkextractor": run_linkextractor,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    args = parser.parse_args()
    count = QUICK_PAGE_COUNT if args.quick else PAGE_COUNT
    rounds = QUICK_ROUNDS if args.quick else ROUNDS
    if BENCH_CPU in os.sched_getaffinity(0):
        os.sched_setaffinity(0, {BENCH_CPU})
    pages = load_pages(count)
    emit(
        BENCH_NAME,
        "pages",
        len(pages),
        "pages",
        profile=PROFILE,
        seed=SEED,
        mean_bytes=round(sum(len(b) for _, b in pages) / len(pages)),
        rounds=rounds,
    )
    timings: dict[str, list[float]] = {name: [] for name in EXTRACTORS}
    found: dict[str, int] = {}
    for _ in range(rounds):
        for name, run in EXTRACTORS.items():
            responses = None
            if name == "linkextractor":  # fresh responses: a parsed selector is cached on each
                responses = [HtmlResponse(url, body=body, encoding="utf-8") for url, body in pages]
            t0 = time.perf_counter()
            found[name] = run(pages, responses)
            timings[name].append((time.perf_counter() - t0) / len(pages) * 1e6)
    baseline = median(timings["regex"])
    for name, values in timings.items():
        us = median(values)
        emit(
            BENCH_NAME,
            name,
            round(us, 1),
            "us/page",
            ratio_to_regex=round(us / baseline, 2),
            links_per_page=round(found[name] / len(pages), 1),
            rounds=[round(v, 1) for v in values],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
