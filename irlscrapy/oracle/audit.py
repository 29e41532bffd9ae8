"""Audit a crawl from the in-vitro server's request log: politeness and robots.txt.

The server logs every request it served (``t_start``, ``t_end``, host, IP, path, status,
bytes, kind; see :mod:`irlscrapy.invitro.httpserver`). :func:`audit` holds that log to
the crawler's contracts (irlscrapy.scheduler.frontier.workbench):

- *host politeness*: a request to a host starts at least ``host_delay(host)`` after the
  previous request to that host ended; a request after the host's robots.txt is exempt
  (the paper limits a robots.txt fetch by the IP delay only);
- *IP politeness*: a request to an IP starts at least ``ip_delay`` after the previous
  request to that IP ended;
- *robots.txt*: no path the host's robots.txt disallows (under RFC 9309, see
  :func:`irlscrapy.oracle.groundtruth.disallowed_prefixes`) is requested, and no page of
  a host is requested before its robots.txt.

A refused connection (an https URL of a host that serves no https: the proxy refuses
the CONNECT, see :mod:`irlscrapy.invitro.httpserver`) is a connection attempt to the
host's address, so it counts in the politeness gaps; it carries no path, so it is
neither a page nor a robots.txt fetch for the robots.txt contract. :attr:`Audit.refused`
counts them per host.

Some ends are the server's and not the crawler's: a page over the crawler's size limit,
which it abandons as soon as the Content-Length arrives, and a hanging request it gives
up at its timeout. The server logs their end when it notices the client has gone, some
milliseconds after the crawler let go; gaps after those are kept apart (``abandoned``).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.groundtruth import CrawlPolicy, disallowed_prefixes

ROBOTS_PATHS = ("/robots.txt", "/robots-real.txt")
Record = dict[str, Any]


@dataclass
class Gaps:
    """Slack (seconds) of each gap: how much later than the delay the request started."""

    slack: list[float] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.slack)

    @property
    def min_slack(self) -> float:
        return min(self.slack, default=0.0)

    @property
    def violations(self) -> int:
        return sum(s < 0 for s in self.slack)


@dataclass
class Audit:
    host: Gaps
    ip: Gaps
    abandoned: Gaps
    robots_violations: list[Record]  # requests of disallowed paths
    before_robots: list[Record]  # pages requested before their host's robots.txt
    hosts: int
    ips: int
    refused: dict[str, int] = field(default_factory=dict)  # host -> refused connections

    def summary(self) -> str:
        return (
            f"{self.host.count} host gaps (min slack {self.host.min_slack * 1000:.1f} ms, "
            f"{self.host.violations} violations); {self.ip.count} IP gaps (min slack "
            f"{self.ip.min_slack * 1000:.1f} ms, {self.ip.violations} violations); "
            f"{self.abandoned.count} gaps after an abandoned page or timeout (min slack "
            f"{self.abandoned.min_slack * 1000:.1f} ms); {len(self.robots_violations)} "
            f"robots.txt violations, {len(self.before_robots)} pages before robots.txt; "
            f"{sum(self.refused.values())} refused connections to {len(self.refused)} hosts; "
            f"{self.hosts} hosts on {self.ips} IPs"
        )


def request_url(record: Record) -> str | None:
    """The URL a log record asked for; None for a refused CONNECT (no path was sent)."""
    if record["kind"] == "refused" and not record["path"]:
        return None
    return f"{record.get('scheme', 'http')}://{record['host']}{record['path']}"


def audit(
    records: Iterable[Record],
    web: InVitroWeb,
    *,
    host_delay: Callable[[str], float],
    ip_delay: float,
    max_bytes: int,
) -> Audit:
    """Hold a server log to the politeness contract and RFC 9309 (see the module
    docstring); ``host_delay(host)``: the least gap owed to that host."""
    served = sorted((r for r in records if r["kind"] != "dns-error"), key=lambda r: r["t_start"])
    by_host: dict[str, list[Record]] = defaultdict(list)
    by_ip: dict[str, list[Record]] = defaultdict(list)
    for r in served:
        by_host[r["host"]].append(r)
        by_ip[r["ip"]].append(r)
    result = Audit(Gaps(), Gaps(), Gaps(), [], [], len(by_host), len(by_ip))

    def gap(a: Record, b: Record, delay: float, gaps: Gaps) -> None:
        slack = b["t_start"] - (a["t_end"] + delay)
        abandoned = a["bytes"] > max_bytes or a["kind"] == "timeout"
        (result.abandoned if abandoned else gaps).slack.append(slack)

    for host, rs in by_host.items():
        delay = host_delay(host)
        for a, b in itertools.pairwise(rs):
            if a["path"] not in ROBOTS_PATHS:
                gap(a, b, delay, result.host)
    for rs in by_ip.values():
        for a, b in itertools.pairwise(rs):
            gap(a, b, ip_delay, result.ip)

    policy = CrawlPolicy(robots="rfc9309")
    for name, rs in by_host.items():
        described = web.host(name)
        blocked = disallowed_prefixes(described, policy) if described is not None else ()
        robots_seen = False
        for r in rs:
            if r["kind"] == "refused":
                result.refused[name] = result.refused.get(name, 0) + 1
                continue
            if r["path"] in ROBOTS_PATHS:
                robots_seen = True
                continue
            if not robots_seen:
                result.before_robots.append(r)
            if blocked and r["path"].startswith(blocked):
                result.robots_violations.append(r)
    return result
