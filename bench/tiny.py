"""Issue 16's bar on the ``tiny`` in-vitro web, crawled with the project's settings.

    python bench/tiny.py                # one stock/IRL pair (~10-15 minutes)
    python bench/tiny.py --rounds 3     # three pairs, stock and IRL alternately

The bar (issue 16, *The tiny in-vitro web with the project's settings*: ``scrapy crawl
broad`` as shipped, plus the ``serve`` line's settings):

- the crawl ends by itself (finish reason ``finished``);
- its wall time is at most the larger of 2x stock Scrapy's (``-s ADDONS={}``, the same
  project settings, ROBOTSTXT_OBEY) and 1.2x the politeness lower bound from the ground
  truth;
- it downloads stock's 200-page set, except where RFC 9309 and Scrapy's robots policy
  differ (as tests/e2e/test_stock_crawl.py explains) and except the URLs it gives up;
- the URLs it gives up are at most 1% of stock's 200-page set, and each is on a host
  that the server's log shows failing ``IRL_HEALTH_MAX_FAILURES`` times in a row.

Issue 16 also asks for zero idle-with-work windows in every crawl
(``irl/scheduler/idle_with_work_windows``) and BEAST's j over time.

What runs, from the repository root so that ``settings.broad`` applies as shipped, each
crawl in its own subprocess with its own in-vitro server (started by the broad spider,
which also applies the ``serve`` line's settings: DOWNLOAD_TIMEOUT 6 s and the short
back-off, retirement and give-up of :data:`irlscrapy.invitro.serve.TEST_WEB_SETTINGS`)::

    scrapy crawl broad -a seeds=invitro -a profile=tiny -a seed=0 -a invitro_log=LOG \\
        -s TELNETCONSOLE_ENABLED=0 -s IRL_REPORT_DIR= [-s ADDONS={}]

The IRL crawl also gets ``-s IRL_STATE_DIR=DIR`` (a fresh directory: where its state
goes, nothing else), so that the URLs it parked can be read after it exits. A crawl still
running after :data:`CRAWL_TIMEOUT_S` gets one SIGINT, and is killed
:data:`STOP_GRACE_S` later; a timed-out crawl fails the bar (it did not end by itself).

The politeness lower bound
--------------------------
From the ground truth (:func:`irlscrapy.oracle.groundtruth.reachable` with RFC 9309 and
the IRL trap limits, as tests/e2e/conftest.py's IRL_POLICY): the busiest host's page count
times its delay, or the busiest IP's page count times tau_s, whichever is larger
("busiest": the largest such product, so a small host with a long Crawl-delay can be
it). That is the issue's formula, and the bar's figure; strictly, n pages need only
n - 1 gaps (the first may follow robots.txt at once, which owes no host delay), so
``host_bound_gaps_s`` and ``ratio_with_gaps_bound`` print the bound from the gaps alone,
which a crawl can come within a few seconds of. A *true* lower bound takes the
smallest delay the crawler may legally use (:mod:`irlscrapy.scheduler.hosts.delays`): STAR
may scale a host's tau_h down to IRL_HOST_DELAY_MIN and a server's tau_s down to
IRL_IP_DELAY_MIN, but never below the host's robots.txt Crawl-delay (capped at
IRL_ROBOTS_MAX_CRAWL_DELAY); back-off is earned, not owed, so it is left out. So the
host's delay is
``max(IRL_HOST_DELAY_MIN, min(Crawl-delay, IRL_ROBOTS_MAX_CRAWL_DELAY))`` and the IP's
IRL_IP_DELAY_MIN, with the values settings/broad.py (then irlscrapy's defaults) gives.
The same figure with the unscaled tau_h (IRL_HOST_DELAY) is printed alongside, for
reference only.

Sets (from the in-vitro servers' request logs; robots.txt fetches left out)
-------------------------------------------------------------------------
*200-page set*: every ``http://host/path`` the server answered with status 200.
*Excluded*: stock's 200-page URLs outside the IRL ground truth, split into those where
RFC 9309 and Scrapy's robots policy differ (robots.txt 5xx or unreachable: Scrapy allows
all; pages reached only through such hosts) and those the IRL trap limits drop
(IRL_TRAPS_MAX_PATH_DEPTH, IRL_TRAPS_MAX_REPEATED_SEGMENTS; stock Scrapy has none).
*Given up*: the URLs in the IRL crawl's parked files (``parked-*.rec`` under its state
directory), with the stats ``irl/frontier/given_up`` and ``irl/frontier/parked_at_close``
and the log lines "gave up on N URLs".
A host *failed N times in a row* when N consecutive page requests to it in the IRL
crawl's server log ended without an answer (status 0: reset, timeout) or with 429/503.

Figures: per crawl its process wall time and ``elapsed_time_seconds``, finish reason,
requests, 200 pages and when the server saw 80/95/99/100% of its requests; the lower
bound; the wall-time ratio; coverage; the given-up URLs and their hosts' failure runs;
idle-with-work windows; BEAST's j over time; and, from the IRL crawl, its tail (the hosts
it requested in its last :data:`TAIL_SHARE` of wall time, with their robots variant,
Crawl-delay and server kind, and its last progress lines).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import runpy
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from common import PROXY_VARIABLES, REPO, RESULTS, emit, median

from irlscrapy import defaults
from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.serve import TEST_WEB_SETTINGS
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.audit import ROBOTS_PATHS
from irlscrapy.oracle.groundtruth import CrawlPolicy, reachable, split_url
from irlscrapy.scheduler.frontier.traps import TrapLimits
from irlscrapy.scheduler.requestcodec import payload_url
from irlscrapy.storage.recordfile import scan

BENCH_NAME = "tiny"
PROFILE = TINY.name
SEED = 0
ROUNDS = 1
#: A crawl still running after this long gets one SIGINT (and fails the bar).
CRAWL_TIMEOUT_S = 1500
#: After that SIGINT, how long before it is killed.
STOP_GRACE_S = 60
#: The bar's factors.
STOCK_FACTOR = 2.0
LOWER_BOUND_FACTOR = 1.2
GIVEN_UP_MAX_SHARE = 0.01
#: The tail: what the IRL crawl requested in the last share of its wall time.
TAIL_SHARE = 0.2
TAIL_PROGRESS_LINES = 4
TAIL_HOSTS = 12
SERIES_POINTS = 40
#: Statuses a host fails with (irlscrapy.scheduler.hosts.hosthealth); 0: no answer.
FAILURE_STATUSES = frozenset((0, 429, 503))
#: The frontier's record head in front of a parked payload (irlscrapy.scheduler.stages).
PARKED_HEAD_BYTES = 12
STOCK = ("ADDONS={}",)
COMMON = ("TELNETCONSOLE_ENABLED=0", "IRL_REPORT_DIR=")

STAT = r"'{}': ([0-9.]+)"
PROGRESS_BEAST = re.compile(r"BEAST ([0-9,]+) URLs in ([0-9]+) queues")
LOG_TIME = "%Y-%m-%d %H:%M:%S"


# -- settings -------------------------------------------------------------------------------
def project_settings() -> dict[str, Any]:
    """settings/broad.py, then the tiny web's ``serve`` settings (what the spider sets)."""
    shipped = {
        k: v for k, v in runpy.run_path(str(REPO / "settings" / "broad.py")).items() if k.isupper()
    }
    return {**shipped, **TEST_WEB_SETTINGS.get(PROFILE, {})}


def setting(settings: dict[str, Any], name: str) -> Any:
    return settings[name] if name in settings else defaults.BY_NAME[name].default


def irl_policy(settings: dict[str, Any]) -> CrawlPolicy:
    """What the IRL scheduler fetches: RFC 9309 and its trap limits (tests/e2e)."""
    return CrawlPolicy(
        robots="rfc9309",
        traps=TrapLimits(
            max_depth=setting(settings, "IRL_TRAPS_MAX_PATH_DEPTH"),
            max_repeats=setting(settings, "IRL_TRAPS_MAX_REPEATED_SEGMENTS"),
        ),
    )


# -- one crawl ------------------------------------------------------------------------------
@dataclass
class Crawl:
    variant: str
    round: int
    wall_s: float
    returncode: int | None
    timed_out: bool
    log: Path
    requests: Path
    state_dir: Path | None
    stderr: str = ""
    records: list[dict[str, Any]] = field(default_factory=list)

    def stat(self, name: str) -> float | None:
        found = re.findall(STAT.format(re.escape(name)), self.stderr)
        return float(found[-1]) if found else None

    @property
    def finish_reason(self) -> str | None:
        found = re.findall(r"'finish_reason': '([^']*)'", self.stderr)
        return found[-1] if found else None

    def pages(self) -> list[dict[str, Any]]:
        """The server's records of page requests (robots.txt and unresolved hosts out)."""
        return [
            r for r in self.records if r["path"] not in ROBOTS_PATHS and r["kind"] != "dns-error"
        ]

    def ok_set(self) -> set[str]:
        return {f"http://{r['host']}{r['path']}" for r in self.pages() if r["status"] == 200}


def run_crawl(variant: str, round_: int, settings: tuple[str, ...]) -> Crawl:
    RESULTS.mkdir(exist_ok=True)
    stem = RESULTS / f"tiny-{variant}-r{round_}"
    log = stem.with_suffix(".log")
    requests = Path(f"{stem}.requests.jsonl")
    requests.unlink(missing_ok=True)
    state_dir = None
    extra = list(settings)
    if variant == "irl":
        state_dir = Path(f"{stem}.state")
        shutil.rmtree(state_dir, ignore_errors=True)
        extra.append(f"IRL_STATE_DIR={state_dir}")
    cmd = [
        sys.executable, "-m", "scrapy", "crawl", "broad",
        "-a", "seeds=invitro", "-a", f"profile={PROFILE}", "-a", f"seed={SEED}",
        "-a", f"invitro_log={requests}",
    ]  # fmt: skip
    for s in (*COMMON, *extra):
        cmd += ["-s", s]
    print("#", " ".join(cmd), flush=True)
    env = {k: v for k, v in os.environ.items() if k.lower() not in PROXY_VARIABLES}
    timed_out = False
    with open(log, "w", encoding="utf-8") as out:
        started = time.monotonic()
        # Its own session: the crawl and the in-vitro server it starts can be stopped
        # together if the crawl has to be killed.
        proc = subprocess.Popen(
            cmd,
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            proc.wait(CRAWL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            timed_out = True
            print(f"# {variant}: still running after {CRAWL_TIMEOUT_S} s; SIGINT", flush=True)
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        wall = time.monotonic() - started
    crawl = Crawl(variant, round_, wall, proc.returncode, timed_out, log, requests, state_dir)
    crawl.stderr = log.read_text(errors="replace")
    if requests.exists():
        crawl.records = [json.loads(x) for x in requests.read_text().splitlines() if x]
    return crawl


# -- figures --------------------------------------------------------------------------------
def lower_bound(web: InVitroWeb, truth: set[str], settings: dict[str, Any]) -> dict[str, Any]:
    """The politeness lower bound (module docstring) and what it is made of."""
    host_min = float(setting(settings, "IRL_HOST_DELAY_MIN"))
    host_tau = float(setting(settings, "IRL_HOST_DELAY"))
    ip_min = float(setting(settings, "IRL_IP_DELAY_MIN"))
    cap = float(setting(settings, "IRL_ROBOTS_MAX_CRAWL_DELAY"))
    by_host = Counter(split_url(u)[0] for u in truth)
    by_ip: Counter[str] = Counter()
    hosts: list[tuple[float, float, str, int, float]] = []
    for name, n in by_host.items():
        host = web.host(name)
        assert host is not None
        by_ip[host.ip] += n
        asked = min(web.crawl_delay(host) or 0.0, cap)
        least, unscaled = max(host_min, asked), max(host_tau, asked)
        hosts.append((n * least, n * unscaled, name, n, least))
    host_lb, _, host_name, host_pages, host_delay = max(hosts)
    ip, ip_pages = by_ip.most_common(1)[0]
    return {
        "value": max(host_lb, ip_pages * ip_min),
        "host": host_name,
        "host_pages": host_pages,
        "host_delay_s": host_delay,
        "host_bound_s": host_lb,
        "host_bound_gaps_s": (host_pages - 1) * host_delay,
        "ip": ip,
        "ip_pages": ip_pages,
        "ip_delay_s": ip_min,
        "ip_bound_s": round(ip_pages * ip_min, 3),
        "unscaled_tau_h_bound_s": max(max(h[1] for h in hosts), ip_pages * ip_min),
        "settings": {
            "IRL_HOST_DELAY_MIN": host_min,
            "IRL_HOST_DELAY": host_tau,
            "IRL_IP_DELAY_MIN": ip_min,
            "IRL_ROBOTS_MAX_CRAWL_DELAY": cap,
        },
    }


def served_quantiles(crawl: Crawl) -> dict[str, float]:
    """Seconds after the server's first request at which it had seen 80/95/99/100% of
    the crawl's requests."""
    starts = sorted(r["t_start"] for r in crawl.records if r["kind"] != "bad-request")
    if not starts:
        return {}
    t0 = starts[0]
    return {
        f"p{q}": round(starts[min(len(starts) - 1, int(len(starts) * q / 100))] - t0, 1)
        for q in (80, 95, 99)
    } | {"p100": round(starts[-1] - t0, 1)}


def failure_runs(records: list[dict[str, Any]]) -> dict[str, int]:
    """Per host: the longest run of consecutive failed page requests in a server log."""
    by_host: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in sorted(records, key=lambda r: r["t_start"]):
        if r["path"] not in ROBOTS_PATHS and r["kind"] not in ("dns-error", "bad-request"):
            by_host[r["host"]].append(r)
    runs = {}
    for host, rs in by_host.items():
        best = run = 0
        for r in rs:
            run = run + 1 if r["status"] in FAILURE_STATUSES else 0
            best = max(best, run)
        runs[host] = best
    return runs


def describe_host(web: InVitroWeb, runs: dict[str, int], name: str) -> dict[str, Any]:
    host = web.host(name)
    return {
        "robots": host.robots if host else None,
        "crawl_delay": web.crawl_delay(host) if host else None,
        "server": host.server if host else None,
        "failures_in_a_row": runs.get(name, 0),
    }


def describe(web: InVitroWeb, runs: dict[str, int], url: str) -> dict[str, Any]:
    return {"url": url} | describe_host(web, runs, split_url(url)[0])


def parked_urls(state_dir: Path | None) -> set[str]:
    if state_dir is None or not state_dir.exists():
        return set()
    return {
        payload_url(record[PARKED_HEAD_BYTES:])
        for path in sorted(state_dir.glob("parked-*.rec"))
        for _, record in scan(path)
    }


def progress(crawl: Crawl) -> list[tuple[float, str]]:
    """(seconds since the crawl's first log line, the line) of each progress line."""
    lines = crawl.stderr.splitlines()
    first = next((ln for ln in lines if re.match(r"\d{4}-\d\d-\d\d ", ln)), None)
    if first is None:
        return []
    t0 = datetime.strptime(first[:19], LOG_TIME)
    return [
        ((datetime.strptime(ln[:19], LOG_TIME) - t0).total_seconds(), ln)
        for ln in lines
        if "progress: " in ln and re.match(r"\d{4}-\d\d-\d\d ", ln)
    ]


def beast_series(crawl: Crawl) -> list[list[float]]:
    points = []
    for t, line in progress(crawl):
        found = PROGRESS_BEAST.search(line)
        if found:
            points.append([t, int(found.group(1).replace(",", "")), int(found.group(2))])
    return points


def downsample(points: list[Any], n: int = SERIES_POINTS) -> list[Any]:
    if not points:
        return []
    step = max(1, len(points) // n)
    picked = points[::step]
    if picked[-1] is not points[-1]:
        picked.append(points[-1])
    return picked


def crawl_figures(crawl: Crawl) -> None:
    emit(
        BENCH_NAME,
        "run",
        crawl.variant,
        "variant",
        round=crawl.round,
        returncode=crawl.returncode,
        timed_out=crawl.timed_out,
        log=str(crawl.log.relative_to(REPO)),
        requests_log=str(crawl.requests.relative_to(REPO)),
    )
    emit(
        BENCH_NAME,
        "wall_s",
        round(crawl.wall_s, 1),
        "s",
        variant=crawl.variant,
        round=crawl.round,
        elapsed_time_seconds=crawl.stat("elapsed_time_seconds"),
    )
    emit(
        BENCH_NAME,
        "finish_reason",
        crawl.finish_reason,
        "reason",
        variant=crawl.variant,
        round=crawl.round,
    )
    pages = crawl.pages()
    emit(
        BENCH_NAME,
        "requests",
        len(crawl.records),
        "requests",
        variant=crawl.variant,
        round=crawl.round,
        pages=len(pages),
        pages_200=len(crawl.ok_set()),
        served_s=served_quantiles(crawl),
    )


def tail(crawl: Crawl, web: InVitroWeb) -> None:
    """What the IRL crawl requested in the last TAIL_SHARE of its wall time."""
    starts = [r["t_start"] for r in crawl.records]
    if not starts:
        return
    t0 = min(starts)
    last = max(r["t_end"] or r["t_start"] for r in crawl.records)
    since = last - TAIL_SHARE * crawl.wall_s
    recent = [r for r in crawl.records if r["t_start"] >= since]
    hosts = Counter(r["host"] for r in recent)
    described = []
    for name, n in hosts.most_common(TAIL_HOSTS):
        host = web.host(name)
        described.append(
            {
                "host": name,
                "requests": n,
                "robots": host.robots if host else None,
                "crawl_delay": web.crawl_delay(host) if host else None,
                "server": host.server if host else None,
                "statuses": dict(Counter(str(r["status"]) for r in recent if r["host"] == name)),
            }
        )
    emit(
        BENCH_NAME,
        "irl_tail_hosts",
        len(hosts),
        "hosts",
        round=crawl.round,
        window_s=[round(since - t0, 1), round(last - t0, 1)],
        requests=len(recent),
        hosts=described,
    )
    emit(
        BENCH_NAME,
        "irl_tail_progress",
        [line.split("INFO: ", 1)[-1] for _, line in progress(crawl)[-TAIL_PROGRESS_LINES:]],
        "lines",
        round=crawl.round,
    )
    gave_up = [
        ln.split("INFO: ", 1)[-1]
        for ln in crawl.stderr.splitlines()
        if "gave up on " in ln or ("failed " in ln and "in a row" in ln)
    ]
    emit(
        BENCH_NAME,
        "irl_give_up_and_retire_lines",
        gave_up[-10:],
        "lines",
        round=crawl.round,
        count=len(gave_up),
    )


def bar(
    stock: Crawl,
    irl: Crawl,
    web: InVitroWeb,
    truth: set[str],
    rfc_all: set[str],
    lb: dict[str, Any],
    settings: dict[str, Any],
) -> bool:
    round_ = irl.round
    # wall time
    allowed = max(STOCK_FACTOR * stock.wall_s, LOWER_BOUND_FACTOR * lb["value"])
    ratio = irl.wall_s / allowed
    gaps_bound = max(lb["host_bound_gaps_s"], lb["ip_bound_s"])
    stock_el, irl_el = stock.stat("elapsed_time_seconds"), irl.stat("elapsed_time_seconds")
    ratio_el = (
        irl_el / max(STOCK_FACTOR * stock_el, LOWER_BOUND_FACTOR * lb["value"])
        if stock_el and irl_el
        else None
    )
    emit(
        BENCH_NAME,
        "wall_ratio",
        round(ratio, 3),
        "ratio",
        round=round_,
        formula="irl_wall / max(2 x stock_wall, 1.2 x LB)",
        irl_wall_s=round(irl.wall_s, 1),
        stock_wall_s=round(stock.wall_s, 1),
        lower_bound_s=lb["value"],
        irl_to_stock=round(irl.wall_s / stock.wall_s, 2),
        irl_to_lower_bound=round(irl.wall_s / lb["value"], 3),
        ratio_with_gaps_bound=round(
            irl.wall_s / max(STOCK_FACTOR * stock.wall_s, LOWER_BOUND_FACTOR * gaps_bound), 3
        ),
        ratio_from_elapsed_time_seconds=round(ratio_el, 3) if ratio_el else None,
    )
    ended = irl.finish_reason == "finished" and not irl.timed_out and irl.returncode == 0
    emit(
        BENCH_NAME,
        "bar_irl_ends_by_itself",
        ended,
        "met",
        round=round_,
        finish_reason=irl.finish_reason,
        returncode=irl.returncode,
        timed_out=irl.timed_out,
    )
    wall_met = ended and not stock.timed_out and ratio <= 1.0
    emit(BENCH_NAME, "bar_wall_time", wall_met, "met", round=round_, ratio=round(ratio, 3))

    # coverage and what was given up
    stock_ok, irl_ok = stock.ok_set(), irl.ok_set()
    outside = stock_ok - truth
    robots_diff = {u for u in outside if u not in rfc_all}  # Scrapy's robots policy only
    traps = outside - robots_diff  # RFC 9309 allows them; the IRL trap limits drop them
    expected = stock_ok - outside
    missing = expected - irl_ok
    given_up = parked_urls(irl.state_dir)
    runs = failure_runs(irl.records)
    max_failures = int(setting(settings, "IRL_HEALTH_MAX_FAILURES"))
    failed_hosts = {h for h, n in runs.items() if n >= max_failures}
    emit(
        BENCH_NAME,
        "stock_200_pages",
        len(stock_ok),
        "urls",
        round=round_,
        excluded_robots_policy=len(robots_diff),
        excluded_irl_trap_limits=len(traps),
        expected_of_irl=len(expected),
        irl_200_pages=len(irl_ok),
        irl_200_outside_stock=len(irl_ok - stock_ok),
    )
    coverage = len(expected & irl_ok) / max(len(expected), 1)
    not_given_up = missing - given_up
    emit(
        BENCH_NAME,
        "coverage",
        round(coverage, 5),
        "share",
        round=round_,
        missing=len(missing),
        missing_given_up=len(missing & given_up),
        missing_not_given_up=len(not_given_up),
        examples=[describe(web, runs, u) for u in sorted(not_given_up or missing)[:8]],
        coverage_with_trap_urls=round(
            len((stock_ok - robots_diff) & irl_ok) / max(len(stock_ok - robots_diff), 1), 5
        ),
    )
    coverage_met = ended and not not_given_up
    emit(BENCH_NAME, "bar_coverage", coverage_met, "met", round=round_)
    on_failed = {u for u in given_up if split_url(u)[0] in failed_hosts}
    hosts_of = Counter(split_url(u)[0] for u in given_up)
    limit = GIVEN_UP_MAX_SHARE * len(stock_ok)
    emit(
        BENCH_NAME,
        "given_up_urls",
        len(given_up),
        "urls",
        round=round_,
        share_of_stock_200=round(len(given_up) / max(len(stock_ok), 1), 5),
        limit=round(limit, 1),
        in_stock_200=len(given_up & stock_ok),
        stat_given_up=irl.stat("irl/frontier/given_up"),
        stat_parked_at_close=irl.stat("irl/frontier/parked_at_close"),
        stat_hosts_retired=irl.stat("irl/hosts/retired"),
        stat_origins_retired=irl.stat("irl/origins/retired"),
        on_hosts_failing_in_a_row=len(on_failed),
        not_on_such_hosts=len(given_up - on_failed),
        hosts={h: describe_host(web, runs, h) | {"urls": n} for h, n in hosts_of.most_common()},
    )
    given_up_met = len(given_up) <= limit and on_failed == given_up
    emit(
        BENCH_NAME,
        "bar_given_up",
        given_up_met,
        "met",
        round=round_,
        max_share=GIVEN_UP_MAX_SHARE,
        max_failures=max_failures,
    )

    # idle windows, BEAST's j
    idle = irl.stat("irl/scheduler/idle_with_work_windows")
    emit(
        BENCH_NAME,
        "idle_with_work_windows",
        idle,
        "windows",
        round=round_,
        stock=stock.stat("irl/scheduler/idle_with_work_windows"),
    )
    idle_met = idle == 0
    emit(BENCH_NAME, "bar_idle_with_work", idle_met, "met", round=round_)
    series = beast_series(irl)
    emit(
        BENCH_NAME,
        "beast_max_j",
        max((p[2] for p in series), default=None),
        "queues",
        round=round_,
        max_urls=max((p[1] for p in series), default=None),
        progress_lines=len(series),
        interval_s=setting(settings, "IRL_PROGRESS_INTERVAL"),
    )
    emit(BENCH_NAME, "beast_j_series", downsample(series), "[t_s, beast_urls, j]", round=round_)
    if irl.wall_s > stock.wall_s:
        tail(irl, web)
    return ended and wall_met and coverage_met and given_up_met and idle_met


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rounds", type=int, default=ROUNDS, help=f"stock/IRL pairs, alternately ({ROUNDS})"
    )
    args = parser.parse_args()
    settings = project_settings()
    web = InVitroWeb(TINY, SEED)
    truth = reachable(web, irl_policy(settings))
    rfc_all = reachable(web, CrawlPolicy(robots="rfc9309"))
    lb = lower_bound(web, truth, settings)
    emit(
        BENCH_NAME,
        "setup",
        args.rounds,
        "rounds",
        profile=PROFILE,
        seed=SEED,
        timeout_s=CRAWL_TIMEOUT_S,
        cores=os.cpu_count(),
        load_avg=os.getloadavg(),
        serve_settings=TEST_WEB_SETTINGS.get(PROFILE, {}),
        robotstxt_obey=settings.get("ROBOTSTXT_OBEY"),
        ground_truth_urls=len(truth),
    )
    emit(
        BENCH_NAME,
        "politeness_lower_bound_s",
        lb["value"],
        "s",
        **{k: v for k, v in lb.items() if k != "value"},
    )
    results, walls = [], defaultdict(list)
    for round_ in range(1, args.rounds + 1):
        stock = run_crawl("stock", round_, STOCK)
        crawl_figures(stock)
        irl = run_crawl("irl", round_, ())
        crawl_figures(irl)
        walls["stock"].append(stock.wall_s)
        walls["irl"].append(irl.wall_s)
        met = bar(stock, irl, web, truth, rfc_all, lb, settings)
        emit(BENCH_NAME, "bar_met", met, "met", round=round_)
        results.append(met)
    if args.rounds > 1:
        emit(
            BENCH_NAME,
            "median_wall_s",
            {k: round(median(v), 1) for k, v in walls.items()},
            "s",
            rounds=args.rounds,
        )
    emit(BENCH_NAME, "bar_met_all_rounds", all(results), "met", rounds=args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
