"""The real web at full length: stock Scrapy and irlscrapy, and irlscrapy's bars as ratios.

    python bench/realweb.py                         # both crawls, irlscrapy up to 900 s
    python bench/realweb.py --irl-wall 300          # stop a stalled irlscrapy sooner
    python bench/realweb.py --sites docs.python.org,www.sqlite.org   # a smaller web

The web and both crawls are tests/e2e/test_real_web.py's (harness/realweb: Debian's
documentation served by nginx in a private namespace; needs root and
``sh tests/system-packages.sh``). The test stops irlscrapy at its wall-time bar, so a
stall shows only as a failure; here it may run to :data:`IRL_WALL_S`, so the figures say
how far it gets and where it stands still. Each crawl's files (nginx's access log, the
crawl's log) stay under ``bench/results/realweb/``.

Figures (one JSON line each, ``bench/common.py``): per crawl its pages (complete 200s in
nginx's log), requests, wall seconds, finish reason; for irlscrapy its coverage of
stock's pages, its wall time against the larger of stock's and the politeness lower bound
(the bar: <= 1.5), politeness and robots.txt violations, ``irl/scheduler/*`` and host
health stats, and a downsampled series of its progress lines (pages, requests in flight,
URLseen pending, BEAST's URLs and queues j, the workbench) to see where it stalls.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections import Counter

from common import REPO, RESULTS, emit

sys.path.insert(0, str(REPO))

from harness.realweb import accesslog, crawls, server
from harness.realweb.crawls import HOST_DELAY, IP_DELAY, IRL, SERIES, STOCK, irl_host_delay
from harness.realweb.sites import SITES, USER_AGENT, ip_of

BENCH_NAME = "realweb"
STOCK_WALL_S = 600.0
IRL_WALL_S = 900.0
GRACE_S = 30.0
SERIES_POINTS = 60
WALL_BAR = 1.5
#: Stats of the IRL crawl worth a line of their own (prefixes).
IRL_STATS = ("irl/scheduler/", "irl/hosts/", "irl/urlseen/", "irl/dns/", "irl/robots/")


def crawl(web: server.RealWeb, name: str, settings: dict[str, str], wall: float) -> crawls.Crawl:
    directory = RESULTS / BENCH_NAME / name
    shutil.rmtree(directory, ignore_errors=True)
    print(f"# {name}: crawling, at most {wall:.0f} s; files in {directory}", flush=True)
    result = crawls.run(web, directory, settings, timeout=wall, grace=GRACE_S, cwd=REPO)
    emit(
        BENCH_NAME,
        "crawl",
        name,
        "variant",
        returncode=result.run.returncode,
        stopped_at_wall_limit=result.run.stopped,
        finish_reason=result.finish_reason,
        log=str(result.run.crawl_log),
    )
    emit(BENCH_NAME, "wall_s", round(result.wall, 1), "s", variant=name)
    emit(BENCH_NAME, "pages", len(result.pages), "pages", variant=name)
    emit(BENCH_NAME, "requests", len(result.requests), "requests", variant=name)
    per_host = dict(Counter(host for host, _ in result.pages))
    emit(BENCH_NAME, "pages_per_host", per_host, "pages", variant=name)
    refused = sum(v for k, v in result.stats.items() if "ConnectionRefused" in k)
    emit(BENCH_NAME, "connections_refused", int(refused), "errors", variant=name)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stock-wall", type=float, default=STOCK_WALL_S)
    parser.add_argument("--irl-wall", type=float, default=IRL_WALL_S)
    parser.add_argument("--sites", help="comma-separated host names (default: all)")
    args = parser.parse_args()
    sites = SITES
    if args.sites:
        wanted = set(args.sites.split(","))
        sites = tuple(site for site in SITES if site.host in wanted)
        if len(sites) != len(wanted):
            parser.error(f"unknown sites: {sorted(wanted - {s.host for s in SITES})}")
    reasons = server.missing(sites)
    if reasons:
        print(f"realweb: cannot serve the real web: {'; '.join(reasons)}", file=sys.stderr)
        return 1
    web = server.build(RESULTS / BENCH_NAME / "web", sites)
    emit(
        BENCH_NAME,
        "setup",
        len(sites),
        "hosts",
        ips=len(web.addresses),
        sites={site.host: site.ip for site in sites},
        host_delay=HOST_DELAY,
        ip_delay=IP_DELAY,
    )

    stock = crawl(web, "stock", STOCK, args.stock_wall)
    irl = crawl(web, "irl", IRL, args.irl_wall)
    stock_pages, irl_pages = stock.pages, irl.pages
    bound, busiest = accesslog.politeness_bound(stock_pages, ip_of, irl_host_delay, IP_DELAY)
    floor = max(stock.wall, bound)
    emit(BENCH_NAME, "politeness_bound_s", round(bound, 1), "s", busiest=busiest)
    covered = len(stock_pages & irl_pages) / max(len(stock_pages), 1)
    emit(BENCH_NAME, "irl_coverage_of_stock", round(covered, 4), "share", bar=">= 0.99")
    emit(
        BENCH_NAME,
        "irl_wall_to_floor_ratio",
        round(irl.wall / floor, 3),
        "ratio",
        bar=f"<= {WALL_BAR}",
        floor_s=round(floor, 1),
        stopped_at_wall_limit=irl.run.stopped,
    )
    emit(BENCH_NAME, "irl_wall_to_stock_ratio", round(irl.wall / stock.wall, 3), "ratio")
    missing = Counter(host for host, _ in stock_pages - irl_pages)
    emit(BENCH_NAME, "irl_missing_per_host", dict(missing), "pages")

    polite = accesslog.politeness(irl.requests, irl_host_delay, IP_DELAY)
    emit(
        BENCH_NAME,
        "irl_politeness_violations",
        polite.violations,
        "gaps",
        host_gaps=polite.host.count,
        ip_gaps=polite.ip.count,
        host_min_slack_ms=round(polite.host.min_slack * 1000, 1),
        ip_min_slack_ms=round(polite.ip.min_slack * 1000, 1),
        abandoned_min_slack_ms=round(polite.abandoned.min_slack * 1000, 1),
    )
    disallowed, early = accesslog.robots_violations(irl.requests, sites, USER_AGENT)
    emit(BENCH_NAME, "irl_robots_violations", len(disallowed), "requests", before=len(early))
    stats = {k: v for k, v in irl.stats.items() if k.startswith(IRL_STATS)}
    emit(BENCH_NAME, "irl_stats", stats, "stats", finish_reason=irl.finish_reason)
    rows = irl.series()
    step = max(1, len(rows) // SERIES_POINTS)
    picked = rows[::step] + ([rows[-1]] if rows and rows[-1] is not rows[::step][-1] else [])
    emit(BENCH_NAME, "irl_series", picked, "[" + ", ".join(SERIES) + "]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
