"""The broad spider on the IRL scheduler (the project's preset) crawls the tiny web.

One crawl with politeness that binds (tau_h 0.2 s, tau_s 0.05 s: longer than the
in-vitro server's response times) is checked against the ground truth and, from the
server's own request log, against the politeness contract
(irlscrapy.scheduler.frontier.workbench).
"""

from __future__ import annotations

import itertools
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from irlscrapy import defaults
from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.audit import audit
from irlscrapy.oracle.groundtruth import CrawlPolicy, disallowed_prefixes, reachable
from irlscrapy.scheduler.frontier.loadgovernor import FLOOR
from irlscrapy.spiders.broad import MAX_PAGE_BYTES

from .conftest import (
    IRL_POLICY,
    QUICK_CRAWL_DELAY_CAP,
    QUICK_IRL,
    ROBOTS_PATHS,
    SEED,
    TINY_DOWNLOAD_TIMEOUT,
    assert_repeats_are_retries,
    crawl_tiny,
    downloads,
    read_log,
    side_by_side,
)

HOST_DELAY = 0.2  # QUICK_IRL's tau_h: every domain has the default budget
IP_DELAY = 0.05


@pytest.fixture(scope="module")
def crawl(
    irl_crawl: tuple[subprocess.CompletedProcess[str], Path, Path],
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The shared crawl (conftest.irl_crawl: WARC and content dedup on, which change
    nothing the server sees)."""
    result, log, _ = irl_crawl
    return result, log


def test_crawl_finishes_with_progress_and_summary(
    crawl: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, _ = crawl
    assert result.returncode == 0, result.stderr[-3000:]
    assert "summary (finished): " in result.stderr
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert "'irl/scheduler/dequeued'" in result.stderr


def test_downloaded_set_equals_the_rfc9309_ground_truth(
    crawl: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    _, log = crawl
    web = InVitroWeb(TINY, SEED)
    truth = reachable(web, IRL_POLICY)
    downloaded = set(downloads(log))
    assert downloaded == truth, {
        "extra": sorted(downloaded - truth)[:10],
        "missing": sorted(truth - downloaded)[:10],
    }
    # DNS is resolved before a host joins the workbench: the server never sees a
    # request for a host that does not resolve.
    assert not [r for r in read_log(log) if r["kind"] == "dns-error"]


def test_no_url_is_downloaded_twice_except_retries(
    crawl: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    assert_repeats_are_retries(read_log(crawl[1]))


def test_politeness_holds_at_the_server(
    crawl: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """Zero violations in the server's log (:mod:`irlscrapy.oracle.audit`): a request
    to a host starts >= tau_h after the previous one to that host ended (robots.txt
    excepted: the paper limits it by the IP delay only), a request to an IP >= tau_s
    after the previous one to that IP ended; no page is requested before its host's
    robots.txt, none that robots.txt disallows. Gaps after a page the crawler abandoned
    (too big, or timed out) are measured from the server's end, which comes some ms
    after the crawler let go: they are held to 50 ms."""
    result = audit(
        read_log(crawl[1]),
        InVitroWeb(TINY, SEED),
        host_delay=lambda host: HOST_DELAY,
        ip_delay=IP_DELAY,
        max_bytes=MAX_PAGE_BYTES,
    )
    print(f"politeness on tiny/{SEED}: {result.summary()}")
    assert result.hosts / result.ips >= 3, "the test needs many hosts per IP"
    assert result.host.count > 1000 and result.ip.count > 2000
    assert result.host.min_slack >= 0, sorted(result.host.slack)[:10]
    assert result.ip.min_slack >= 0, sorted(result.ip.slack)[:10]
    assert result.abandoned.min_slack > -0.05
    assert not result.robots_violations and not result.before_robots


def _host_gaps(log: Path, hosts: set[str]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Consecutive page requests (robots.txt left out) to each of ``hosts``."""
    by_host: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in sorted(read_log(log), key=lambda r: r["t_start"]):
        if r["host"] in hosts and r["path"] not in ROBOTS_PATHS:
            by_host[r["host"]].append(r)
    return [pair for rs in by_host.values() for pair in itertools.pairwise(rs)]


def test_crawl_delay_raises_the_host_delay_up_to_the_cap(
    crawl: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """Hosts whose robots.txt asks for a Crawl-delay of 1 to 30 s are crawled at
    IRL_ROBOTS_MAX_CRAWL_DELAY (0.5 s here), not at tau_h (0.2 s)."""
    web = InVitroWeb(TINY, SEED)
    met = {r["host"] for r in read_log(crawl[1])}
    hosts = {
        name for name in met if (h := web.host(name)) is not None and h.robots == "crawl-delay"
    }
    gaps = _host_gaps(crawl[1], hosts)
    slack = [b["t_start"] - a["t_end"] - QUICK_CRAWL_DELAY_CAP for a, b in gaps]
    print(f"crawl-delay: {len(gaps)} gaps on {len(hosts)} hosts, min slack {min(slack):.3f} s")
    assert len(gaps) >= 20
    assert min(slack) >= 0, sorted(slack)[:5]
    assert "'irl/robots/crawl_delay_capped'" in crawl[0].stderr


def test_retry_after_is_honoured(crawl: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    """After a 429 or 503 with Retry-After, the host's next request comes no earlier
    than asked."""
    records = read_log(crawl[1])
    busy = {r["host"] for r in records if r["status"] in (429, 503) and r["kind"] == "error"}
    waits = [
        b["t_start"] - a["t_end"]
        for a, b in _host_gaps(crawl[1], busy)
        if a["status"] in (429, 503)
    ]
    print(f"Retry-After {TINY.retry_after} s: {len(waits)} waits, shortest {min(waits):.3f} s")
    assert len(waits) >= 10
    assert min(waits) >= TINY.retry_after


def test_every_robots_variant_gets_its_rfc9309_outcome(
    crawl: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """From the server log, per robots.txt variant of the tiny web: nothing its rules
    disallow is requested; a 5xx or unreachable robots.txt is fetched again
    (IRL_ROBOTS_RETRIES times) and then no page of its host is; a redirected one is
    followed; a 404 allows all (the hosts' /private/ pages are fetched)."""
    web = InVitroWeb(TINY, SEED)
    policy = CrawlPolicy(robots="rfc9309")
    records = read_log(crawl[1])
    by_host: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r["kind"] not in ("dns-error", "refused"):  # a refused https connection: no path
            by_host[r["host"]].append(r)
    seen: dict[str, int] = defaultdict(int)
    retries = defaults.BY_NAME["IRL_ROBOTS_RETRIES"].default
    for name, rs in by_host.items():
        host = web.host(name)
        assert host is not None
        seen[host.robots] += 1
        blocked = disallowed_prefixes(host, policy)
        pages = [r["path"] for r in rs if r["path"] not in ROBOTS_PATHS]
        assert not [p for p in pages if p.startswith(blocked)], (name, host.robots)
        robots_fetches = [r for r in rs if r["path"] == "/robots.txt"]
        assert robots_fetches, f"{name}: no robots.txt fetched"
        assert robots_fetches[0]["t_start"] <= min(r["t_start"] for r in rs)
        if host.robots in ("error", "unreachable"):
            rounds = 1 + sum(
                b["t_start"] - a["t_end"] >= 0.2 for a, b in itertools.pairwise(robots_fetches)
            )
            assert rounds >= retries and not pages, (name, rounds, pages)
        if host.robots == "redirect":
            assert any(r["path"] == "/robots-real.txt" for r in rs), name
    assert set(seen) == set(dict(TINY.robots)), f"variants met: {dict(seen)}"
    missing_private = [
        r
        for name, rs in by_host.items()
        if web.host(name).robots == "missing"  # type: ignore[union-attr]
        for r in rs
        if r["path"].startswith("/private/")
    ]
    assert missing_private, "a 404 robots.txt allows all, /private/ included"


def test_a_hanging_host_holds_one_slot_and_is_backed_off(
    crawl: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """A host that holds requests without answering (a delay attack) never has two
    requests open, the crawl goes on meanwhile, and after the timeout the host waits
    its back-off (IRL_HEALTH_BACKOFF_BASE, 0.2 s here) before its next request."""
    records = sorted(read_log(crawl[1]), key=lambda r: r["t_start"])
    hung = [r for r in records if r["kind"] == "timeout"]
    assert len(hung) >= 3
    for a in hung:
        same = [r for r in records if r["host"] == a["host"] and r is not a]
        overlapping = [r for r in same if a["t_start"] < r["t_start"] < a["t_end"]]
        assert not overlapping, (a, overlapping[:3])
        meanwhile = [r for r in records if a["t_start"] < r["t_start"] < a["t_end"]]
        assert len(meanwhile) > 10, "the crawl stalled behind a hanging host"
        later = [r for r in same if r["t_start"] > a["t_start"]]
        if later:  # the crawler gave up at DOWNLOAD_TIMEOUT, then backed off
            gap = later[0]["t_start"] - (a["t_start"] + TINY_DOWNLOAD_TIMEOUT)
            assert gap >= 0.2 - 0.05, (a, later[0])


@side_by_side(seconds=55)
def governed_crawl(work: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    """A crawl whose load governor has a lag target no reactor meets (side by side
    with the other crawls: conftest.side_by_side)."""
    log = work / "requests.jsonl"
    result = crawl_tiny(
        log, *QUICK_IRL, "IRL_REACTOR_LAG_TARGET=0.000001", f"CONCURRENT_REQUESTS={FLOOR + 1}"
    )
    return result, log


def test_a_load_governor_at_its_floor_loses_nothing(
    governed_crawl: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """A lag target no reactor meets cuts the cap on fetches in flight to its floor at
    the first busy quarter second; held-back fetches wait for one in flight to end, so
    the crawl still downloads exactly the ground truth and ends."""
    result, log = governed_crawl
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"'irl/governor/cap': {FLOOR}," in result.stderr, result.stderr[-3000:]
    truth = reachable(InVitroWeb(TINY, SEED), IRL_POLICY)
    downloaded = set(downloads(log))
    assert downloaded == truth, {
        "extra": sorted(downloaded - truth)[:10],
        "missing": sorted(truth - downloaded)[:10],
    }
