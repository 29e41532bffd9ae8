"""Audit a crawl of the real web from nginx's access log: pages, robots.txt, politeness.

The log (format ``realweb``, :mod:`harness.realweb.server`) gives each request's end
(``msec``) and duration (``request_time``), both to the millisecond of nginx's clock, so
a request *started* at ``msec - request_time``. Each crawl has a log of its own, so every
line is that crawler's.

- *pages*: the (host, path) pairs answered 200 and kept by the crawler: sent in full
  (``complete`` is "OK") and not over the broad spider's size limit (a crawler drops such
  a page as soon as its Content-Length arrives, though over loopback nginx may have sent
  it all by then); paths are percent-decoded, so two spellings of one URL are one page.
- *robots.txt*: no request of a path the host's robots.txt disallows for the crawler's
  user agent (the same parser both crawlers use, Protego), which means nothing but
  /robots.txt from a host that forbids the agent; and no page of a host before its
  robots.txt.
- *politeness* (scheduler/frontier/workbench.py): a request to a host starts at least
  ``host_delay(host)`` after the previous request to that host ended (a request right
  after the host's robots.txt is exempt: the paper limits a robots.txt fetch by the IP
  delay only); a request to an IP starts at least ``ip_delay`` after the previous request
  to that IP ended. Both times are nginx's, to the millisecond: a gap is a violation
  only if it falls short by more than :data:`CLOCK_TICK`. Gaps after a response the
  crawler abandoned (over its size limit, or not sent in full) are kept apart,
  because nginx logs those ends when it notices the client has gone, after the crawler
  let go (as :mod:`irlscrapy.oracle.audit` does).
"""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from protego import Protego

from irlscrapy.oracle.audit import Gaps
from irlscrapy.spiders.broad import MAX_PAGE_BYTES

from .sites import Site

#: nginx stamps times to the millisecond: a gap measured from two stamps may read up to
#: one tick shorter than it was.
CLOCK_TICK = 0.001
ROBOTS_PATH = "/robots.txt"

Page = tuple[str, str]  # (host, percent-decoded path with query)


@dataclass(frozen=True)
class Request:
    start: float
    end: float
    host: str
    ip: str
    uri: str
    status: int
    length: int | None  # the Content-Length nginx sent (None: chunked)
    complete: bool

    @property
    def abandoned(self) -> bool:
        """The crawler let go of the response before its end, or dropped it on arrival
        (over the broad spider's size limit)."""
        return not self.complete or (self.length or 0) > MAX_PAGE_BYTES

    @property
    def page(self) -> Page:
        return (self.host, unquote(self.uri))

    @property
    def is_robots(self) -> bool:
        return self.uri == ROBOTS_PATH


def read(path: Path) -> list[Request]:
    """The log's requests in order of their start."""
    requests = []
    for line in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        requests.append(
            Request(
                start=round(r["msec"] - r["request_time"], 3),
                end=r["msec"],
                host=r["host"].lower(),
                ip=r["ip"],
                uri=r["uri"],
                status=r["status"],
                length=int(r["length"]) if r["length"] else None,
                complete=r["complete"] == "OK",
            )
        )
    return sorted(requests, key=lambda r: (r.start, r.end))


def pages(requests: Iterable[Request]) -> set[Page]:
    """(host, path) of every 200 response the crawler kept, robots.txt left out."""
    return {r.page for r in requests if r.status == 200 and not r.abandoned and not r.is_robots}


def robots_violations(
    requests: Iterable[Request], sites: Iterable[Site], user_agent: str
) -> tuple[list[Request], list[Request]]:
    """(requests of paths robots.txt disallows, pages requested before their host's
    robots.txt)."""
    parsers = {s.host: Protego.parse(s.robots) for s in sites if s.robots is not None}
    disallowed, early = [], []
    robots_seen: set[str] = set()
    for r in requests:
        if r.is_robots:
            robots_seen.add(r.host)
            continue
        if r.host not in robots_seen:
            early.append(r)
        parser = parsers.get(r.host)
        if parser is not None and not parser.can_fetch(f"http://{r.host}{r.uri}", user_agent):
            disallowed.append(r)
    return disallowed, early


#: a gap's slack, the earlier request and the later one
Worst = tuple[float, Request, Request]


@dataclass
class Politeness:
    host: Gaps = field(default_factory=Gaps)
    ip: Gaps = field(default_factory=Gaps)
    abandoned: Gaps = field(default_factory=Gaps)
    #: the worst gaps, for messages
    worst_host: list[Worst] = field(default_factory=list)
    worst_ip: list[Worst] = field(default_factory=list)

    @property
    def violations(self) -> int:
        return sum(s < -CLOCK_TICK for s in self.host.slack + self.ip.slack)

    def summary(self) -> str:
        return (
            f"{self.host.count} host gaps (min slack {self.host.min_slack * 1000:.1f} ms), "
            f"{self.ip.count} IP gaps (min slack {self.ip.min_slack * 1000:.1f} ms), "
            f"{self.abandoned.count} after an abandoned response (min slack "
            f"{self.abandoned.min_slack * 1000:.1f} ms); {self.violations} violations "
            f"beyond nginx's {CLOCK_TICK * 1000:.0f} ms clock tick"
        )


def politeness(
    requests: list[Request], host_delay: Callable[[str], float], ip_delay: float
) -> Politeness:
    """Hold ``requests`` (ordered by start) to the politeness contract (module
    docstring)."""
    result = Politeness()
    by_host: dict[str, list[Request]] = defaultdict(list)
    by_ip: dict[str, list[Request]] = defaultdict(list)
    for r in requests:
        by_host[r.host].append(r)
        by_ip[r.ip].append(r)

    def gap(a: Request, b: Request, delay: float, gaps: Gaps, worst: list[Worst]) -> None:
        slack = b.start - (a.end + delay)
        if a.abandoned:
            result.abandoned.slack.append(slack)
        else:
            gaps.slack.append(slack)
            worst.append((slack, a, b))

    for host, rs in by_host.items():
        for a, b in itertools.pairwise(rs):
            if not a.is_robots:
                gap(a, b, host_delay(host), result.host, result.worst_host)
    for rs in by_ip.values():
        for a, b in itertools.pairwise(rs):
            gap(a, b, ip_delay, result.ip, result.worst_ip)
    result.worst_host = sorted(result.worst_host, key=lambda x: x[0])[:5]
    result.worst_ip = sorted(result.worst_ip, key=lambda x: x[0])[:5]
    return result


def politeness_bound(
    work: Iterable[Page],
    ip_of: Callable[[str], str],
    host_delay: Callable[[str], float],
    ip_delay: float,
) -> tuple[float, str]:
    """The politeness lower bound on a crawl's wall time that fetches ``work``: the
    busiest host's page count times its delay, or the busiest IP's times ``ip_delay``,
    whichever is larger; and which one it was."""
    per_host = Counter(host for host, _ in work)
    per_ip = Counter(ip_of(host) for host in per_host.elements())
    candidates = [(n * host_delay(h), f"host {h}: {n} pages") for h, n in per_host.items()]
    candidates += [(n * ip_delay, f"IP {ip}: {n} pages") for ip, n in per_ip.items()]
    return max(candidates, default=(0.0, "no pages"))
