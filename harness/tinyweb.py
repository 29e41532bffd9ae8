"""The tiny in-vitro web as the tests and the benchmarks crawl it: the command line of a
crawl (:func:`tiny_crawl_args`), the settings that make it quick (:data:`QUICK_IRL`),
the policy its ground truth follows (:data:`IRL_POLICY`), and what its server's log and
the crawl's stats say."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from irlscrapy import defaults
from irlscrapy.oracle.audit import ROBOTS_PATHS, request_url
from irlscrapy.oracle.groundtruth import CrawlPolicy
from irlscrapy.scheduler.frontier.traps import TrapLimits

SEED = 0
#: What the IRL scheduler with its defaults fetches: RFC 9309 and the trap limits.
IRL_POLICY = CrawlPolicy(
    robots="rfc9309",
    traps=TrapLimits(
        max_depth=defaults.BY_NAME["IRL_TRAPS_MAX_PATH_DEPTH"].default,
        max_repeats=defaults.BY_NAME["IRL_TRAPS_MAX_REPEATED_SEGMENTS"].default,
    ),
)
ROOT = Path(__file__).resolve().parents[1]


#: Settings that turn the project's add-on off: Scrapy's stock scheduler, as shipped.
STOCK = ("ADDONS={}",)
#: Politeness small enough for a quick complete crawl, yet longer than in-vitro
#: response times (so the delays bind), and quick DNS retries.
#: DOWNLOAD_TIMEOUT of the tiny crawls (its hanging servers hold a request 20 s).
TINY_DOWNLOAD_TIMEOUT = 6
#: QUICK_IRL's cap on robots.txt Crawl-delay (the tiny web asks for 1 to 30 s).
QUICK_CRAWL_DELAY_CAP = 0.5
#: The floors equal the delays, so STAR's budgets (which scale delays down towards the
#: floors) leave them as they are and the politeness audit knows the delay in force.
QUICK_IRL = (
    "IRL_HOST_DELAY=0.2",
    "IRL_HOST_DELAY_MIN=0.2",
    "IRL_IP_DELAY=0.05",
    "IRL_IP_DELAY_MIN=0.05",
    "IRL_DNS_RETRY_DELAY=0.2",
    "IRL_ROBOTS_RETRY_DELAY=0.2",
    f"IRL_ROBOTS_MAX_CRAWL_DELAY={QUICK_CRAWL_DELAY_CAP}",
    "IRL_HEALTH_BACKOFF_BASE=0.2",
    "IRL_HEALTH_BACKOFF_MAX=2",
    "IRL_HEALTH_RETIRE_DELAY=1",
)


def tiny_crawl_args(log: Path, *settings: str) -> list[str]:
    """The command line of ``scrapy crawl broad`` of the tiny web (its own in-vitro
    server), as the demo runs (the IRL components on unless ``STOCK`` is a setting)."""
    args = [
        sys.executable,
        "-m",
        "scrapy",
        "crawl",
        "broad",
        "-a",
        "seeds=invitro",
        "-a",
        "profile=tiny",
        "-a",
        f"seed={SEED}",
        "-a",
        f"invitro_log={log}",
        "-s",
        f"DOWNLOAD_TIMEOUT={TINY_DOWNLOAD_TIMEOUT}",
        "-s",
        "TELNETCONSOLE_ENABLED=0",
        "-s",
        "IRL_REPORT_DIR=",  # the demo's report at close: only where a test asks for it
    ]
    for setting in settings:
        args += ["-s", setting]
    return args


IDLE_WINDOWS = re.compile(r"'irl/scheduler/idle_with_work_windows': (\d+)")


def assert_never_idle_with_work(stderr: str) -> None:
    """The crawl's no-idle watch (irlscrapy.report.idlewatch, sampling every 100 ms)
    saw no second with nothing in flight while URLseen, BEAST or a due host held work."""
    found = IDLE_WINDOWS.findall(stderr)
    assert found, "the crawl's stats have no irl/scheduler/idle_with_work_windows"
    assert found[-1] == "0", [
        line for line in stderr.splitlines() if "idle for" in line and "while work waits" in line
    ][:5]


INVITRO_PID = re.compile(r"in-vitro web \(tiny, seed \d+, pid (\d+)\)")


def invitro_pid(stderr: str) -> int:
    """The pid of the in-vitro web the broad spider started (it logs it)."""
    found = INVITRO_PID.search(stderr)
    assert found, stderr[-3000:]
    return int(found.group(1))


def downloads(log: Path) -> list[str]:
    """URLs the server was asked for, robots.txt, unresolvable hosts and refused https
    connections (whose path the server never learns) left out."""
    return [
        url
        for r in read_log(log)
        if r["kind"] != "dns-error"
        and r["path"] not in ROBOTS_PATHS
        and (url := request_url(r)) is not None
    ]


def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


#: Statuses Scrapy retries (0: no answer).
RETRYABLE = {0, 500, 502, 503, 504, 522, 524, 408, 429}
