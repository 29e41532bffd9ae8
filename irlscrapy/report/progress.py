"""Live progress for a crawl: a periodic line, and a summary when the spider closes.

Both count *responses* (Scrapy's ``response_received_count``, what
``CLOSESPIDER_PAGECOUNT`` counts) and split them: pages the spider parsed, robots.txt
responses (``robotstxt/response_count``) and responses HttpErrorMiddleware kept from the
spider (``httperror/response_ignored_count``: a status it does not handle). The rate is
responses per second over the crawling time: from the spider's opening to the start of
its close (:data:`irlscrapy.runtime.closing.spider_closing`; without it, the end of the close),
so a close's tail does not lower it; no progress line is logged once the close began.

The line's figures are :func:`irlscrapy.report.figures.crawl_figures`, the status
endpoint's; on the IRL scheduler it adds the frontier: URLseen's pending URLs, BEAST's
URLs and queues, URLs waiting for DNS, the workbench's URLs, hosts and IPs (and how many
IPs have a host due), and the load governor's cap; for an agent of a multi-agent crawl,
its partitions, the URLs it sent and received, its outbox, and how long Redis has been
unreachable, if it is.
"""

from __future__ import annotations

import logging
import resource
import time

import psutil
from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from irlscrapy import defaults
from irlscrapy.report.figures import crawl_figures
from irlscrapy.report.meter import BAR_WIDTH, bar
from irlscrapy.runtime.closing import spider_closing

logger = logging.getLogger(__name__)


class CrawlProgress:
    """Logs responses (pages parsed, robots.txt, HTTP errors) and links per second, what is
    scheduled, and RSS every ``IRL_PROGRESS_INTERVAL`` seconds; logs a summary of the
    whole crawl at the end."""

    def __init__(self, crawler: Crawler, interval: float) -> None:
        self.crawler = crawler
        self.interval = interval
        self.started = 0.0
        #: when the spider started closing (0: it has not)
        self.closing_at = 0.0
        #: time, pages, links at the previous line
        self._last: tuple[float, float, float] = (0.0, 0, 0)
        #: CLOSESPIDER_PAGECOUNT: with a page budget the line opens with a progress bar
        self.page_budget = crawler.settings.getint("CLOSESPIDER_PAGECOUNT")
        self._loop: task.LoopingCall | None = None
        self._process = psutil.Process()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlProgress:
        interval = defaults.get(crawler.settings, "IRL_PROGRESS_INTERVAL")
        if interval <= 0:
            raise NotConfigured("IRL_PROGRESS_INTERVAL is 0")
        ext = cls(crawler, interval)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closing, signal=spider_closing)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider: Spider) -> None:
        self.started = time.monotonic()
        self._last = (self.started, 0, 0)
        self._loop = task.LoopingCall(self.log_progress)
        self._loop.start(self.interval, now=False)

    def log_progress(self) -> None:
        now = time.monotonic()
        figures = crawl_figures(self.crawler, self._process)
        pages, links = figures["pages"], figures["links"]
        then, pages0, links0 = self._last
        dt = max(now - then, 1e-9)
        self._last = (now, pages, links)
        rate = (pages - pages0) / dt
        logger.info(
            "progress: %s%s, %d links (%.0f/s), %d scheduled, %d in flight, RSS %.0f MB%s",
            progress_bar(pages, self.page_budget, rate),
            responses_part(figures, rate),
            links,
            (links - links0) / dt,
            figures.get("scheduled", 0),
            figures.get("downloader_active", 0),
            figures["rss_bytes"] / 2**20,
            _frontier_part(figures) + _agent_part(figures),
        )

    def spider_closing(self) -> None:
        self.closing_at = time.monotonic()
        if self._loop is not None and self._loop.running:
            self._loop.stop()

    def spider_closed(self, spider: Spider, reason: str) -> None:
        if self._loop is None:
            return  # the spider never opened (irlscrapy.runtime.openfailure said why)
        if self._loop.running:
            self._loop.stop()
        now = time.monotonic()
        crawling = max((self.closing_at or now) - self.started, 1e-9)
        closing = now - self.closing_at if self.closing_at else 0.0
        stats = self.crawler.stats
        assert stats is not None
        figures = crawl_figures(self.crawler, self._process)
        statuses = {
            k.rsplit("/", 1)[1]: v
            for k, v in stats.get_stats().items()
            if k.startswith("downloader/response_status_count/")
        }
        logger.info(
            "summary (%s): in %.1f s of crawling%s, %s%s; %d links extracted; "
            "%d duplicate requests filtered; %d robots.txt-forbidden; status counts %s; "
            "peak RSS %.0f MB",
            reason,
            crawling,
            f" (then {closing:.1f} s closing)" if closing else "",
            responses_part(figures, figures["pages"] / crawling),
            f"; CLOSESPIDER_PAGECOUNT {self.page_budget:,} counts responses"
            if self.page_budget > 0
            else "",
            figures["links"],
            stats.get_value("dupefilter/filtered", 0),
            # Scrapy's RobotsTxtMiddleware counts Requests; the IRL frontier counts URLs
            # (robotstxt/forbidden too, for Requests it refuses): irl/robots/disallowed
            max(
                stats.get_value("robotstxt/forbidden", 0),
                stats.get_value("irl/robots/disallowed", 0),
            ),
            dict(sorted(statuses.items())),
            _peak_rss_mb(),
        )


def responses_part(figures: dict[str, float], rate: float) -> str:
    """The responses received (what CLOSESPIDER_PAGECOUNT counts) and what they were:
    ``3012 responses (96.2/s): 1825 pages parsed, 1185 robots.txt, 2 HTTP errors not
    parsed``."""
    responses = figures["pages"]
    robots, ignored = figures["robots_responses"], figures["ignored_responses"]
    parsed = max(responses - robots - ignored, 0)
    return (
        f"{responses:.0f} responses ({rate:.1f}/s): {parsed:.0f} pages parsed, "
        f"{robots:.0f} robots.txt, {ignored:.0f} HTTP errors not parsed"
    )


def progress_bar(done: float, budget: int, rate: float, width: int = BAR_WIDTH) -> str:
    """``[#####-----] 50% of 3,000 responses, ETA 12 s; `` towards CLOSESPIDER_PAGECOUNT
    (which counts responses, robots.txt included); "" without one."""
    if budget <= 0:
        return ""
    share = min(max(done / budget, 0.0), 1.0)
    eta = f", ETA {(budget - done) / rate:.0f} s" if rate > 0 and done < budget else ""
    return f"{bar(share, width)} {share:.0%} of {budget:,} responses{eta}; "


def _frontier_part(figures: dict[str, float]) -> str:
    if "workbench_urls" not in figures:
        return ""
    return (
        "; frontier: URLseen {urlseen_pending:,.0f} pending, BEAST {beast_urls:,.0f} URLs "
        "in {beast_queues:.0f} queues, DNS {dns_waiting_urls:,.0f}, workbench "
        "{workbench_urls:,.0f} URLs (horizon {horizon_urls:,.0f}) / {workbench_hosts:,.0f} "
        "hosts / {workbench_ips:,.0f} IPs ({ips_due:,.0f} due), {fetches_in_flight:.0f} "
        "fetching (cap {fetch_cap:.0f}), "
        "{held_urls:,.0f} held, {parked_urls:,.0f} parked"
    ).format(**figures)


def _agent_part(figures: dict[str, float]) -> str:
    if "agent_partitions" not in figures:
        return ""
    failing = figures["agent_redis_failing_seconds"]
    return (
        "; agent: {agent_partitions:.0f} of the partitions, {agent_members:.0f} agents, "
        "{agent_urls_out:,.0f} URLs out, {agent_urls_in:,.0f} in, outbox {agent_outbox:,.0f}, "
        "IPs held {agent_ips_held:,.0f}, waiting {agent_ips_waiting:,.0f}"
    ).format(**figures) + (
        f", Redis unreachable for {failing:.0f} s ({figures['agent_unsent_batches']:.0f} "
        "batches held)"
        if failing
        else ""
    )


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
