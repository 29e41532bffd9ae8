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

Invariant: *a delay is never below its floor, and never below what the host asked
for* (Crawl-delay) *or earned* (back-off).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from irlscrapy import defaults
from irlscrapy.exceptions import ConfigurationError


@dataclass(frozen=True)
class Politeness:
    host_delay: float  # tau_h of a domain with the default budget
    host_delay_min: float
    ip_delay: float  # tau_s of a server whose domains have the default budget
    ip_delay_min: float
    default_budget: int  # B0

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
        budget = defaults.get(settings, "IRL_BEAST_BUDGET")
        if budget < 1:
            raise ConfigurationError(f"IRL_BEAST_BUDGET={budget}: a budget must be >= 1")
        return cls(
            host_delay=defaults.get(settings, "IRL_HOST_DELAY"),
            host_delay_min=defaults.get(settings, "IRL_HOST_DELAY_MIN"),
            ip_delay=defaults.get(settings, "IRL_IP_DELAY"),
            ip_delay_min=defaults.get(settings, "IRL_IP_DELAY_MIN"),
            default_budget=budget,
        )

    def of_host(self, state: Any) -> float:
        """tau_h of a workbench visit state (its budget, Crawl-delay and back-off)."""
        return self.host(state.budget, state.crawl_delay, state.backoff)

    def of_ip(self, entry: Any) -> float:
        """tau_s of a workbench IP entry (its hosts' mean budget and its back-off)."""
        return self.ip(entry.mean_budget, entry.backoff)

    def host(self, budget: float, crawl_delay: float = 0.0, backoff: float = 0.0) -> float:
        """tau_h of a host whose PLD has ``budget``."""
        scaled = self.host_delay * self.default_budget / max(budget, 1.0)
        return max(self.host_delay_min, min(self.host_delay, scaled), crawl_delay, backoff)

    def ip(self, mean_budget: float, backoff: float = 0.0) -> float:
        """tau_s of a server whose hosts' budgets average ``mean_budget``."""
        scaled = self.ip_delay * self.default_budget / max(mean_budget, 1.0)
        return max(self.ip_delay_min, min(self.ip_delay, scaled), backoff)
