"""Never a silent empty crawl: a crawl whose every URL was refused ends saying why.

The address guard, robots.txt and DNS drop URLs by design, and a broad crawl loses a
few that way without harm. A crawl that loses *all* of them, though, fetches nothing:
a site on 127.0.0.1 or an intranet with the guard closed, a site whose robots.txt
disallows everything, a misspelt host. Without this check it ends as any finished
crawl does (``finish_reason: finished``, exit 0), with one INFO line to go on.

:class:`EmptyCrawlCheck` listens for ``spider_idle``: if no page request has reached
the downloader in this run (robots.txt fetches do not count) and URLs were refused,
it logs one ERROR line saying why and what to set (``IRL_ALLOW_PRIVATE_ADDRESSES`` with
the refused address's network, ``ROBOTSTXT_OBEY``, the URLs or ``IRL_DNS_SERVERS``)
and closes the spider with reason :data:`ALL_REFUSED_REASON`, counted in
``irl/given_up/all_refused``. A run that fetched one page, or refused nothing (a
resumed crawl with nothing left), finishes as usual. The IRL scheduler connects it,
except in the multi-agent mode (another agent may fetch what this one cannot).
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider

from irlscrapy.scheduler.hosts.addressguard import AddressGuard
from irlscrapy.scheduler.metakeys import ROBOTS_KEY

logger = logging.getLogger(__name__)

#: The close reason of a crawl that fetched nothing because every URL was refused.
ALL_REFUSED_REASON = "irlscrapy_all_refused"


class EmptyCrawlCheck:
    def __init__(self, stats: Any, guard: AddressGuard) -> None:
        self.stats = stats
        self.guard = guard  # its first refusal says which address and network
        self.fetched = False  # a page request reached the downloader in this run

    @classmethod
    def connect(cls, crawler: Crawler, guard: AddressGuard) -> EmptyCrawlCheck:
        check = cls(crawler.stats, guard)
        reached = signals.request_reached_downloader
        crawler.signals.connect(check.request_reached_downloader, reached)
        crawler.signals.connect(check.spider_idle, signals.spider_idle)
        return check

    def request_reached_downloader(self, request: Request) -> None:
        if ROBOTS_KEY not in request.meta:
            self.fetched = True

    def spider_idle(self) -> None:
        why = self.verdict()
        if why is None:
            return
        logger.error("irlscrapy: %s (finish reason %s)", why, ALL_REFUSED_REASON)
        self.stats.inc_value(f"irl/given_up/{ALL_REFUSED_REASON.removeprefix('irlscrapy_')}")
        raise CloseSpider(ALL_REFUSED_REASON)

    def verdict(self) -> str | None:
        """Why the crawl fetched nothing, with what to set, or None when it fetched a
        page or refused nothing."""
        if self.fetched:
            return None
        stat = self.stats.get_value
        parts = []
        guarded = stat("irl/guard/refused_urls", 0)
        if guarded:
            first = self.guard.first_refused
            detail = "IRL_ALLOW_PRIVATE_ADDRESSES"
            if first is not None:
                host, ip, kind = first
                detail = (
                    f"{host} resolves to {ip}, a {kind} address: set "
                    f'IRL_ALLOW_PRIVATE_ADDRESSES = "{AddressGuard.network_of(ip)}" to crawl it'
                )
            parts.append(f"{guarded} by the address guard ({detail})")
        disallowed = stat("irl/robots/disallowed", 0)
        if disallowed:
            parts.append(
                f"{disallowed} by their host's robots.txt (ROBOTSTXT_OBEY = False ignores "
                "it: only for a site you may crawl regardless)"
            )
        unresolved = stat("irl/dns/dropped_urls", 0)
        if unresolved:
            parts.append(
                f"{unresolved} whose host does not resolve (check the URLs' host names, "
                "or IRL_DNS_SERVERS)"
            )
        if not parts:
            return None
        return "nothing was fetched, every URL was refused: " + "; ".join(parts)
