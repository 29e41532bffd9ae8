"""The floor of issue 22's per-core bar: the IRL crawl's own downloads, replayed through
the same spider callback and Scrapy components, without the frontier.

The ``irl`` variant of bench/crawl.py runs with :class:`FetchLog`, which writes the URL
of every response downloaded (robots.txt, redirects and error pages included), in the
order they arrived. The ``replay`` variant (:func:`replay_settings`) then crawls the same
in-vitro web with ``scrapy crawl broad`` and:

- :class:`ReplayScheduler`: hands out that list in order, as fast as the downloader
  takes it: no dedup, no politeness, no DNS of its own, no robots.txt rules. Every
  request the crawl makes (seeds, redirects, retries) is dropped: the list already
  holds what the IRL crawl downloaded. A robots.txt goes to a callback that does
  nothing; a page to the spider's ``parse``, which extracts its links as in the IRL
  crawl;
- :class:`DropLinks`, where StarMiddleware stands (which belongs to the frontier:
  STAR's counting and the hand-off of ``Links``): the spider's ``Links`` end there;
- everything else as the IRL crawl has it: the project's settings (CONCURRENT_REQUESTS,
  CONCURRENT_ITEMS, the page budget), Scrapy's downloader and its middlewares, and what
  the add-on changes in page handling: its download handler, its decompression
  middleware, GC tuning, cookies off.

So the two runs download the same responses and parse the same pages with the same
code; they differ by the frontier only (the IRL scheduler, URLseen, STAR, robots.txt
first, DNS, host health, the crawl report's records), and the pages/s ratio is what
the frontier costs.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.http import Response

from irlscrapy import addon
from irlscrapy.links import Links

#: The list the irl run writes and the replay reads (a setting of each).
LOG_SETTING = "BENCH_FETCH_LOG"
REPLAY_SETTING = "BENCH_REPLAY_URLS"
FETCH_LOG_EXTENSION = "replay.FetchLog"
#: The extensions of the add-on's that the replay keeps (besides the project's own).
REPLAY_EXTENSIONS = {addon.GC_TUNING_EXTENSION: 0}


class FetchLog:
    """Writes the URL of every response downloaded, one a line, to BENCH_FETCH_LOG."""

    def __init__(self, path: str) -> None:
        self.file: IO[str] = open(path, "w", encoding="utf-8")  # noqa: SIM115 -- until close

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FetchLog:
        log = cls(crawler.settings.get(LOG_SETTING))
        crawler.signals.connect(log.downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(log.close, signal=signals.spider_closed)
        return log

    def downloaded(self, response: Response, request: Request, spider: Spider) -> None:
        self.file.write(request.url + "\n")

    def close(self) -> None:
        self.file.close()


class ReplayScheduler:
    """Scrapy's scheduler interface over a fixed list of URLs (module docstring)."""

    def __init__(self, crawler: Crawler, urls: list[str]) -> None:
        self.crawler = crawler
        self.urls = urls
        self.next = 0
        self.dropped = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ReplayScheduler:
        path = Path(crawler.settings.get(REPLAY_SETTING))
        return cls(crawler, path.read_text(encoding="utf-8").split())

    def open(self, spider: Spider) -> None:
        self.spider = spider

    def close(self, reason: str) -> None:
        stats = self.crawler.stats
        assert stats is not None
        stats.set_value("bench/replay/handed_out", self.next)
        stats.set_value("bench/replay/dropped", self.dropped)

    def __len__(self) -> int:
        return len(self.urls) - self.next

    def has_pending_requests(self) -> bool:
        return self.next < len(self.urls)

    def enqueue_request(self, request: Request) -> bool:
        self.dropped += 1
        return False

    def next_request(self) -> Request | None:
        if self.next >= len(self.urls):
            return None
        url = self.urls[self.next]
        self.next += 1
        if url.endswith("/robots.txt"):
            return Request(url, callback=_robots, dont_filter=True)
        return Request(url, callback=self.spider.parse, dont_filter=True)


def _robots(response: Response) -> None:
    return None


class DropLinks:
    """The spider's ``Links`` end here (where StarMiddleware would hand them on)."""

    def process_spider_output(
        self, response: Response | None, result: Iterable[Any]
    ) -> Iterator[Any]:
        for obj in result:
            if not isinstance(obj, Links):
                yield obj

    async def process_spider_output_async(
        self, response: Response | None, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        async for obj in result:
            if not isinstance(obj, Links):
                yield obj


def replay_settings(urls: Path) -> dict[str, str]:
    """The ``-s`` settings of the replay run, besides the page budget and EXTENSIONS
    (the project's, the sampler's and :data:`REPLAY_EXTENSIONS`)."""
    return {
        "ADDONS": "{}",
        "SCHEDULER": "replay.ReplayScheduler",
        REPLAY_SETTING: str(urls),
        "DOWNLOAD_HANDLERS": json.dumps({"http": addon.HTTP_HANDLER, "https": addon.HTTP_HANDLER}),
        "DOWNLOADER_MIDDLEWARES": json.dumps(
            {
                addon.SCRAPY_DECOMPRESSION: None,
                addon.DECOMPRESSION_MIDDLEWARE: addon.DECOMPRESSION_ORDER,
            }
        ),
        "SPIDER_MIDDLEWARES": json.dumps(
            {addon.STAR_MIDDLEWARE: None, "replay.DropLinks": addon.STAR_ORDER}
        ),
        "COOKIES_ENABLED": "False",
        "ROBOTSTXT_OBEY": "False",
        "CONCURRENT_REQUESTS_PER_DOMAIN": "64",
        "DOWNLOAD_DELAY": "0",
        "IRL_REACTOR_LAG_STATS": "True",
    }
