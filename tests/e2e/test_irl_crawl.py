"""The broad spider on the IRL scheduler (the project's preset) crawls the tiny web.

One crawl with politeness that binds (tau_h 0.2 s, tau_s 0.05 s: longer than the
in-vitro server's response times) is checked against the ground truth and, from the
server's own request log, against the politeness contract (DESIGN.md, Workbench).
"""

from __future__ import annotations

import itertools
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from irlscrapy import defaults
from irlscrapy.invitro.groundtruth import CrawlPolicy, reachable
from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.scheduler.traps import TrapLimits
from irlscrapy.spiders.broad import MAX_PAGE_BYTES

from .conftest import (
    QUICK_CRAWL_DELAY_CAP,
    QUICK_IRL,
    ROBOTS_PATHS,
    SEED,
    assert_repeats_are_retries,
    crawl_tiny,
    downloads,
    read_log,
)

DEFAULT_TRAP_LIMITS = TrapLimits(
    max_depth=defaults.BY_NAME["IRL_MAX_PATH_DEPTH"].default,
    max_repeats=defaults.BY_NAME["IRL_MAX_REPEATED_SEGMENTS"].default,
)
HOST_DELAY = 0.2  # QUICK_IRL's tau_h: every domain has the default budget
IP_DELAY = 0.05


@pytest.fixture(scope="module")
def crawl(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    log = tmp_path_factory.mktemp("irl-crawl") / "requests.jsonl"
    return crawl_tiny(log, *QUICK_IRL, "IRL_PROGRESS_INTERVAL=1"), log


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
    truth = reachable(web, CrawlPolicy(robots="rfc9309", traps=DEFAULT_TRAP_LIMITS))
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
    """Zero violations: a request to a host starts >= tau_h after the previous one to
    that host ended (robots.txt excepted: the paper limits it by the IP delay only), and
    a request to an IP >= tau_s after the previous one to that IP ended.

    One kind of "end" is the server's and not the crawler's: a page over DOWNLOAD_MAXSIZE
    that the crawler abandons as soon as its Content-Length arrives, and a hanging
    request the crawler gives up at DOWNLOAD_TIMEOUT. The server logs its end when it
    notices the client has gone, some ms after the crawler let go; those gaps are
    reported apart and held to 50 ms.
    """
    records = sorted(read_log(crawl[1]), key=lambda r: r["t_start"])
    by_host: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_ip: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_host[r["host"]].append(r)
        by_ip[r["ip"]].append(r)
    assert len(by_host) / len(by_ip) >= 3, "the test needs many hosts per IP"
    host_slack, ip_slack, abandoned = [], [], []
    for groups, delay in ((by_host, HOST_DELAY), (by_ip, IP_DELAY)):
        for rs in groups.values():
            for a, b in itertools.pairwise(rs):
                if delay == HOST_DELAY and a["path"] in ROBOTS_PATHS:
                    continue
                slack = b["t_start"] - (a["t_end"] + delay)
                if a["bytes"] > MAX_PAGE_BYTES or a["kind"] == "timeout":
                    abandoned.append(slack)
                else:
                    (host_slack if delay == HOST_DELAY else ip_slack).append(slack)
    print(
        f"politeness on tiny/{SEED}: {len(host_slack)} host gaps, min slack "
        f"{min(host_slack) * 1000:.1f} ms; {len(ip_slack)} IP gaps, min slack "
        f"{min(ip_slack) * 1000:.1f} ms; {len(abandoned)} gaps after an abandoned "
        f"oversized page or timeout, min slack {min(abandoned, default=0) * 1000:.1f} ms"
    )
    assert len(host_slack) > 1000 and len(ip_slack) > 2000
    assert min(host_slack) >= 0, [s for s in host_slack if s < 0][:10]
    assert min(ip_slack) >= 0, [s for s in ip_slack if s < 0][:10]
    assert min(abandoned, default=0) > -0.05


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
