"""The one function of the delays in force: host delay tau_h and IP delay tau_s.

IRLbot (seeds/003 section VII.A): a low-ranked domain's host is visited at most every
``tau_h`` seconds and a server (IP) at most every ``tau_s``; for higher-ranked domains
both are scaled down in proportion to the budget, to a floor::

    tau_h(host) = max(host_min, host_delay * B0 / B_x)          B_x: the host's PLD budget
    tau_s(ip)   = max(ip_min,   ip_delay   * B0 / mean B)       mean over the IP's hosts

then raised by what the host itself asked for or earned: ``Crawl-delay`` from its
robots.txt and back-off after 429/503/errors (the parts that learn those facts set them
on the visit state; this module combines them). The paper averages over the PLDs on a
server; we average over its hosts, which weights a PLD by its number of hosts there.

Which settings give ``host_delay`` and the rest (IRL_HOST_DELAY, or the project's
DOWNLOAD_DELAY, or the defaults): :mod:`irlscrapy.scheduler.hosts.pace`. A delay taken
from DOWNLOAD_DELAY has Scrapy's jitter: each wait a host is given (:meth:`wait`) is
``tau_h * (1 + uniform(-jitter, jitter))``, floored at 0, then raised by Crawl-delay and
back-off; :meth:`host` is the delay in force without it (its mean).

Invariant: *a delay is never below its floor, and never below what the host asked
for* (Crawl-delay) *or earned* (back-off); *a wait is within a jitter of its delay
(``[1 - jitter, 1 + jitter] x``), and never below what the host asked for or earned.*
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from irlscrapy import defaults
from irlscrapy.exceptions import ConfigurationError
from irlscrapy.scheduler.hosts.pace import Pace, pace_of


@dataclass(frozen=True)
class Politeness:
    host_delay: float  # tau_h of a domain with the default budget
    host_delay_min: float
    ip_delay: float  # tau_s of a server whose domains have the default budget
    ip_delay_min: float
    default_budget: int  # B0
    jitter: float = 0.0  # of each host wait (Scrapy's, for a delay from DOWNLOAD_DELAY)
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("host_delay", "host_delay_min", "ip_delay", "ip_delay_min"):
            if getattr(self, name) < 0:
                raise ConfigurationError(f"politeness: {name} must be >= 0 seconds")
        if self.host_delay_min > self.host_delay or self.ip_delay_min > self.ip_delay:
            raise ConfigurationError(
                "politeness: a delay's floor (IRL_HOST_DELAY_MIN, IRL_IP_DELAY_MIN) must not "
                f"exceed the delay itself (host {self.host_delay_min} > {self.host_delay} or "
                f"IP {self.ip_delay_min} > {self.ip_delay})"
            )
        if self.default_budget < 1:
            raise ConfigurationError("politeness: the default budget must be >= 1")

    @classmethod
    def from_settings(cls, settings: Any) -> Politeness:
        return cls.of_pace(pace_of(settings), settings)

    @classmethod
    def of_pace(cls, pace: Pace, settings: Any) -> Politeness:
        budget = defaults.get(settings, "IRL_BUDGET_DEFAULT")
        if budget < 1:
            raise ConfigurationError(f"IRL_BUDGET_DEFAULT={budget}: a budget must be >= 1")
        return cls(
            host_delay=pace.host_delay,
            host_delay_min=pace.host_delay_min,
            ip_delay=pace.ip_delay,
            ip_delay_min=pace.ip_delay_min,
            default_budget=budget,
            jitter=pace.jitter,
        )

    @property
    def longest(self) -> float:
        """The longest wait a host or an IP of the default budget is given (without
        Crawl-delay and back-off)."""
        return max(self.host_delay * (1 + self.jitter), self.ip_delay)

    def of_host(self, state: Any) -> float:
        """tau_h of a workbench visit state (its budget, Crawl-delay and back-off)."""
        return self.host(state.budget, state.crawl_delay, state.backoff)

    def wait_of_host(self, state: Any) -> float:
        """One wait of a workbench visit state: its tau_h with the jitter drawn."""
        return self.wait(state.budget, state.crawl_delay, state.backoff)

    def of_ip(self, entry: Any) -> float:
        """tau_s of a workbench IP entry (its hosts' mean budget and its back-off)."""
        return self.ip(entry.mean_budget, entry.backoff)

    def host(self, budget: float, crawl_delay: float = 0.0, backoff: float = 0.0) -> float:
        """tau_h of a host whose PLD has ``budget``."""
        return max(self._scaled_host(budget), crawl_delay, backoff)

    def wait(self, budget: float, crawl_delay: float = 0.0, backoff: float = 0.0) -> float:
        """One wait of a host whose PLD has ``budget``: :meth:`host` with the jitter
        drawn (before Crawl-delay and back-off raise it), as Scrapy draws a download
        delay."""
        delay = self._scaled_host(budget)
        if self.jitter:
            delay = max(0.0, delay * (1 + self.rng.uniform(-self.jitter, self.jitter)))
        return max(delay, crawl_delay, backoff)

    def _scaled_host(self, budget: float) -> float:
        scaled = self.host_delay * self.default_budget / max(budget, 1.0)
        return max(self.host_delay_min, min(self.host_delay, scaled))

    def ip(self, mean_budget: float, backoff: float = 0.0) -> float:
        """tau_s of a server whose hosts' budgets average ``mean_budget``."""
        scaled = self.ip_delay * self.default_budget / max(mean_budget, 1.0)
        return max(self.ip_delay_min, min(self.ip_delay, scaled), backoff)
