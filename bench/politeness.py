"""Politeness and robots.txt at the server: a broad-profile in-vitro crawl of 50,000 pages.

    python bench/politeness.py                  # 50,000 pages (the issue's bar)
    python bench/politeness.py --pages 5000     # a smoke run
    python bench/politeness.py --ip-delay 0.05  # tau_s 0.05 s: the host delay binds too

The issue's bar: *zero robots violations and zero politeness violations (delays
binding, minimum slack reported) in the server log of a broad-profile in-vitro crawl of
50,000 pages*.

What runs: ``scrapy crawl broad -a seeds=invitro -a profile=broad`` with the project's
settings as shipped (the IRL scheduler; tau_h = 4 s, tau_s = 0.5 s unless
``--host-delay`` / ``--ip-delay`` say otherwise, floors equal to them; DOWNLOAD_TIMEOUT
20 s, robots.txt obeyed, Crawl-delay capped at IRL_ROBOTS_MAX_CRAWL_DELAY) and
the in-vitro server's request log, which this script follows: once the server has
served ``--pages`` page requests (robots.txt fetches not counted), the crawl gets one
SIGINT and stops gracefully (requests in flight end). The log is then
audited (:mod:`irlscrapy.oracle.audit`): every host gap against the host's delay (tau_h,
raised by its robots.txt Crawl-delay up to the cap), every IP gap against tau_s, every
request against its host's robots.txt (RFC 9309) and against "robots.txt first".

Figures: requests, pages, hosts, IPs; per kind of gap its count, minimum slack and
violations; robots.txt violations; the crawl's robots, guard and host-health stats.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from common import crawl_broad_web, emit

from irlscrapy import defaults
from irlscrapy.invitro.profiles import BROAD
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.audit import ROBOTS_PATHS, audit
from irlscrapy.spiders.broad import MAX_PAGE_BYTES

PAGES = 50_000
SEED = 0
#: settings/broad.py's politeness (the demo's, and bench/crawl.py's irl variant).
HOST_DELAY, IP_DELAY = 4.0, 0.5


def host_delay_of(web: InVitroWeb, tau_h: float, cap: float) -> Callable[[str], float]:
    """The least gap each host is owed: ``tau_h``, raised by its Crawl-delay up to
    ``cap``."""
    cache: dict[str, float] = {}

    def delay(name: str) -> float:
        if name not in cache:
            host = web.host(name)
            asked = (web.crawl_delay(host) or 0.0) if host is not None else 0.0
            cache[name] = max(tau_h, min(asked, cap))
        return cache[name]

    return delay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=PAGES)
    parser.add_argument("--host-delay", type=float, default=HOST_DELAY, help="tau_h, seconds")
    parser.add_argument("--ip-delay", type=float, default=IP_DELAY, help="tau_s, seconds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="irlscrapy-bench-politeness-") as tmp:
        parsed, crawl_log = crawl_broad_web(
            Path(tmp),
            args.pages,
            {
                "IRL_HOST_DELAY": args.host_delay,
                "IRL_HOST_DELAY_MIN": args.host_delay,
                "IRL_IP_DELAY": args.ip_delay,
                "IRL_IP_DELAY_MIN": args.ip_delay,
            },
        )
    web = InVitroWeb(BROAD, SEED)
    cap = defaults.BY_NAME["IRL_ROBOTS_MAX_CRAWL_DELAY"].default
    result = audit(
        parsed,
        web,
        host_delay=host_delay_of(web, args.host_delay, cap),
        ip_delay=args.ip_delay,
        max_bytes=MAX_PAGE_BYTES,
    )
    print("#", result.summary(), flush=True)
    pages = sum(1 for r in parsed if r["path"] not in ROBOTS_PATHS)
    emit("politeness", "requests", len(parsed), "requests", pages=pages,
         hosts=result.hosts, ips=result.ips)  # fmt: skip
    for name, gaps in (("host", result.host), ("ip", result.ip), ("abandoned", result.abandoned)):
        emit("politeness", f"{name}_gaps", gaps.count, "gaps",
             min_slack_ms=round(gaps.min_slack * 1000, 1), violations=gaps.violations)  # fmt: skip
    emit("politeness", "robots_violations", len(result.robots_violations), "requests",
         before_robots=len(result.before_robots),
         examples=result.robots_violations[:3] + result.before_robots[:3])  # fmt: skip
    stats = dict(re.findall(r"'((?:irl/(?:robots|guard|hosts|traps)|robotstxt)/[^']+)': (\d+)",
                            crawl_log))  # fmt: skip
    emit("politeness", "stats", len(stats), "stats", **{k: int(v) for k, v in stats.items()})
    met = (
        result.host.violations == 0
        and result.ip.violations == 0
        and not result.robots_violations
        and not result.before_robots
    )
    emit("politeness", "bar_zero_violations", met, "met")


if __name__ == "__main__":
    main()
