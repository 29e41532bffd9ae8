"""A real frontier for component tests: BEAST files, the admitted journal and parked
files under a test's directory, a workbench with the test's delays, DNS answered at once,
and the part of Scrapy's stats collector the frontier uses."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from twisted.internet import defer

from irlscrapy.scheduler.frontier.admitted import AdmittedJournal
from irlscrapy.scheduler.frontier.beast import Beast
from irlscrapy.scheduler.frontier.horizon import Horizon
from irlscrapy.scheduler.frontier.parking import ParkedStore
from irlscrapy.scheduler.frontier.workbench import Workbench
from irlscrapy.scheduler.hosts.addressguard import AddressGuard
from irlscrapy.scheduler.hosts.robotscache import RobotsCache
from irlscrapy.scheduler.stages import Frontier


class Stats:
    """``inc_value`` of Scrapy's StatsCollector, the counts in ``values``."""

    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] = self.values.get(key, 0) + count


def open_test_frontier(
    directory: Path,
    *,
    capacity: int,
    host_cap: int,
    clock: Callable[[], float],
    budget: int = 100,
    host_delay: Callable[[Any], float] = lambda state: 0.0,
    ip_delay: Callable[[Any], float] = lambda entry: 0.0,
    resolve: Callable[[str], defer.Deferred[str]] = lambda host: defer.succeed("8.8.8.8"),
    guard: AddressGuard | None = None,
    horizon: Horizon | None = None,
    robots: RobotsCache | None = None,
) -> Frontier:
    """An open frontier (close it when done); every PLD has ``budget``."""
    beast = Beast(directory / "beast", lambda _: budget)
    beast.open()
    journal = AdmittedJournal(directory / "admitted")
    journal.open()
    parked = ParkedStore(directory)
    parked.open()
    return Frontier(
        beast,
        Workbench(host_delay, ip_delay),
        journal,
        parked,
        resolve,
        lambda _: budget,
        Stats(),
        capacity=capacity,
        host_cap=host_cap,
        user_agent="test",
        clock=clock,
        guard=guard or AddressGuard(),
        horizon=horizon,
        robots=robots,
    )
