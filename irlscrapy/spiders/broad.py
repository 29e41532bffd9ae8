"""The ``broad`` spider: a crawl of the whole web reachable from a set of seeds.

Its order is the scheduler's. On Scrapy's stock scheduler with Scrapy's defaults that
is depth-first (LIFO queues); ``-s DEPTH_PRIORITY=1`` with FIFO queues makes it
breadth-first (see BENCHMARKS.md for both).

Usage::

    scrapy crawl broad -a seeds=URL,URL,...      # comma-separated seed URLs
    scrapy crawl broad -a seeds=FILE              # one URL per line; blank and # lines skipped
    scrapy crawl broad -a seeds=invitro [-a profile=broad] [-a seed=0] [-a invitro_log=FILE]
    scrapy crawl broad -s IRL_REDIS_URL=...       # an agent of a multi-agent crawl: seeds
                                                  # optional (irlscrapy agents seed)

``seeds=invitro`` starts an in-vitro web in a child process, points the crawl at it
(its ``env`` and ``settings``, see :mod:`irlscrapy.invitro.serve`) and stops it when the
engine stops. Set a page limit for that one, e.g. ``-s CLOSESPIDER_PAGECOUNT=2000``: the
broad profile is unbounded.

Each HTML page yields its followable links
(:func:`irlscrapy.spiders.extract.links_to_follow`) as :class:`irlscrapy.Links`, one per
LINK_SLICE links, each in a reactor turn of its own: a page of 100,000 links holds the
reactor a few ms at a time, not a second. On the in-vitro web, each page
the spider handles is counted (``invitro/pages``) and so is each page of a spam farm
(``invitro/spam_pages``, the web's own ground truth), for the report's spam share.
Pages that are not HTML, or whose meta robots or ``X-Robots-Tag`` says ``nofollow``,
yield nothing. Pages above
``DOWNLOAD_MAXSIZE`` (2 MiB unless set) are dropped by Scrapy's downloader.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.http import Response, TextResponse
from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings
from scrapy.utils.asyncio import sleep

from irlscrapy import defaults
from irlscrapy.addon import STAR_ORDER
from irlscrapy.domains import url_host
from irlscrapy.exceptions import ConfigurationError, IrlscrapyError
from irlscrapy.invitro.process import InVitroProcess, irlscrapy_root
from irlscrapy.invitro.profiles import get_profile
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.links import Links
from irlscrapy.runtime.openfailure import report_open_failure
from irlscrapy.spiders.extract import header_nofollow, links_in_slices, meta_nofollow
from irlscrapy.version import __version__

MAX_PAGE_BYTES = 2 * 1024 * 1024
HTML_TYPES = (b"text/html", b"application/xhtml+xml")


class BroadSpider(Spider):
    name = "broad"

    def __init__(
        self,
        seeds: str = "",
        profile: str = "broad",
        seed: str = "0",
        invitro_log: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.seeds_arg = seeds
        self.invitro: InVitroProcess | None = None
        self.web: InVitroWeb | None = None  # the in-vitro web's ground truth
        if seeds == "invitro":
            if not seed.lstrip("-").isdigit():
                raise ConfigurationError(f"-a seed={seed!r}: the in-vitro seed must be an integer")
            self.invitro = InVitroProcess(profile, int(seed), invitro_log)
            self.web = InVitroWeb(get_profile(profile), int(seed))
            self.seed_urls: list[str] = []
        else:
            self.seed_urls = parse_seeds(seeds) if seeds else []

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        super().update_settings(settings)
        # At spider priority: CrawlerProcess re-applies project settings over what is set
        # here at the dict's own priority, which would drop the middleware.
        middlewares = settings.getdict("SPIDER_MIDDLEWARES")
        middlewares.setdefault("irlscrapy.middlewares.star.StarMiddleware", STAR_ORDER)
        priority = max(
            settings.getpriority("SPIDER_MIDDLEWARES") or 0, SETTINGS_PRIORITIES["spider"]
        )
        settings.set("SPIDER_MIDDLEWARES", middlewares, priority=priority)
        settings.set("DOWNLOAD_MAXSIZE", MAX_PAGE_BYTES, priority="spider")

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> BroadSpider:
        """The spider, its arguments checked: a wrong one, or an in-vitro web that does
        not start, is said in one line (before the crawl's settings are checked, since
        Scrapy builds the spider first)."""
        try:
            return cls._build(crawler, *args, **kwargs)
        except IrlscrapyError as exc:
            report_open_failure(exc)
            raise

    @classmethod
    def _build(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> BroadSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        if not spider.seeds_arg and not defaults.get(crawler.settings, "IRL_REDIS_URL"):
            raise ConfigurationError(
                "the broad spider needs seeds: -a seeds=URL,URL,... or -a seeds=FILE or -a "
                "seeds=invitro (an agent of a multi-agent crawl may start without: its crawl "
                "is seeded by another agent or with `irlscrapy agents seed`)"
            )
        # Which copy runs, when a checkout, an install and a Scrapyd egg may all hold one.
        spider.logger.info("irlscrapy %s from %s", __version__, irlscrapy_root())
        if spider.invitro is not None:
            # Started here, not in start(): the proxy environment must be in place before
            # Scrapy builds HttpProxyMiddleware, and settings before they are frozen.
            info = spider.invitro.start()
            atexit.register(spider.invitro.stop)
            # nothing is fetched once the spider has closed: the web winds down meanwhile
            crawler.signals.connect(spider.invitro.terminate, signal=signals.spider_closed)
            crawler.signals.connect(spider.invitro.stop, signal=signals.engine_stopped)
            spider.seed_urls = list(info["seeds"])
            for name, value in info["settings"].items():
                crawler.settings.set(name, value, priority="spider")
            os.environ.update(info["env"])
            spider.logger.info(
                "in-vitro web (%s, seed %s, pid %s) at %s, DNS %s; seeds %s",
                info["profile"],
                info["seed"],
                info["pid"],
                info["proxy"],
                info["dns"],
                ", ".join(spider.seed_urls),
            )
        return spider

    async def start(self) -> AsyncIterator[Any]:
        for url in self.seed_urls:
            yield Request(url, callback=self.parse)

    async def parse(self, response: Response, **kwargs: Any) -> AsyncIterator[Links]:
        """The page's followable links, as ``Links`` of at most LINK_SLICE URLs, each
        slice found and handed on in a reactor turn of its own."""
        stats = self.crawler.stats
        assert stats is not None
        if self.web is not None:
            stats.inc_value("invitro/pages")
            host = self.web.host(url_host(response.url))
            if host is not None and host.spam:
                stats.inc_value("invitro/spam_pages")
        content_type = response.headers.get(b"Content-Type", b"") or b""
        if not isinstance(response, TextResponse) or not any(
            t in content_type.lower() for t in HTML_TYPES
        ):
            stats.inc_value("irl/spider/not_html")
            return
        body = response.body
        if header_nofollow(response.headers.getlist(b"X-Robots-Tag")) or meta_nofollow(body):
            stats.inc_value("irl/spider/nofollow")
            return
        stats.inc_value("irl/spider/pages")
        depth = response.meta.get("depth", 0)
        for count, urls in enumerate(links_in_slices(response.url, body)):
            if count:
                await sleep(0)  # the next reactor turn
            stats.inc_value("irl/spider/links", len(urls))
            yield Links(response.url, urls, depth)


def parse_seeds(arg: str, named: str = "-a seeds=") -> list[str]:
    """Seed URLs from ``URL,URL,...`` or from a file with one URL per line; ``named``:
    how the user gave ``arg``, for the message that refuses it."""
    path = Path(arg)
    how = "give URL,URL,... or a file of one URL per line"
    if "://" not in arg and path.is_file():
        lines = path.read_text(encoding="utf-8").splitlines()
        urls = [s for s in (line.strip() for line in lines) if s and not s.startswith("#")]
        where = f"file {path}"
    elif "://" not in arg and "," not in arg:
        raise ConfigurationError(f"{named}{arg}: no such file, and not an http(s) URL; {how}")
    else:
        urls = [s.strip() for s in arg.split(",") if s.strip()]
        where = f"{named}{arg}"
    bad = [u for u in urls if not u.startswith(("http://", "https://"))]
    if bad or not urls:
        shown = ", ".join(repr(u) for u in bad[:3]) or "nothing"
        raise ConfigurationError(f"{where}: seeds must be http(s) URLs, got {shown}; {how}")
    return urls
