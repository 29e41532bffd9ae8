"""``HostServices``: the host services one crawl's scheduler uses, built and opened
together: the DNS cache, the politeness delays (and the pace they came from), the
robots.txt cache, host health and the address guard. Their files live under the state
directory (``dns/``, ``robots/``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from scrapy.crawler import Crawler

from irlscrapy.scheduler.hosts.addressguard import AddressGuard
from irlscrapy.scheduler.hosts.delays import Politeness
from irlscrapy.scheduler.hosts.dns import DNSCache
from irlscrapy.scheduler.hosts.hosthealth import HostHealth
from irlscrapy.scheduler.hosts.pace import Pace, pace_of
from irlscrapy.scheduler.hosts.robotscache import RobotsCache
from irlscrapy.state.directory import StateDirectory

logger = logging.getLogger(__name__)


@dataclass
class HostServices:
    dns: DNSCache
    politeness: Politeness
    robots: RobotsCache
    health: HostHealth
    guard: AddressGuard
    pace: Pace

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HostServices:
        settings = crawler.settings
        pace = pace_of(settings)
        return cls(
            DNSCache.of(crawler),
            Politeness.of_pace(pace, settings),
            RobotsCache.from_settings(settings),
            HostHealth.from_settings(settings),
            AddressGuard.from_settings(settings),
            pace,
        )

    def open(self, state: StateDirectory) -> None:
        logger.info("%s", self.pace)
        self.dns.open(state / "dns")
        self.robots.open(state / "robots")

    def close(self) -> None:
        self.robots.close()
        self.dns.close()
