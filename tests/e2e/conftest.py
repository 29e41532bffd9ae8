"""A real in-vitro web on ephemeral loopback ports, started once per session."""

from __future__ import annotations

import http.client
import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import pytest

from irlscrapy import defaults
from irlscrapy.invitro.process import InVitroProcess
from irlscrapy.oracle.audit import ROBOTS_PATHS, request_url
from irlscrapy.oracle.groundtruth import CrawlPolicy
from irlscrapy.scheduler.frontier.traps import TrapLimits
from irlscrapy.spiders.broad import MAX_PAGE_BYTES

SEED = 0
#: What the IRL scheduler with its defaults fetches: RFC 9309 and the trap limits.
IRL_POLICY = CrawlPolicy(
    robots="rfc9309",
    traps=TrapLimits(
        max_depth=defaults.BY_NAME["IRL_TRAPS_MAX_PATH_DEPTH"].default,
        max_repeats=defaults.BY_NAME["IRL_TRAPS_MAX_REPEATED_SEGMENTS"].default,
    ),
)
ROOT = Path(__file__).resolve().parents[2]


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


def crawl_tiny(log: Path, *settings: str) -> subprocess.CompletedProcess[str]:
    """Run :func:`tiny_crawl_args` to the end (at the niceness of the side-by-side job
    that runs it, if one does). Every crawl on the IRL scheduler that got as far as
    dumping its stats is checked for idle-with-work windows."""
    args = tiny_crawl_args(log, *settings)
    nice = getattr(_running_job, "nice", 0)
    if nice:
        args = ["nice", "-n", str(nice), *args]
    result = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=240)
    if "'irl/scheduler/dequeued'" in result.stderr:
        assert_never_idle_with_work(result.stderr)
    return result


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


# -- crawls side by side ---------------------------------------------------------------
#
# A crawl of the tiny web spends most of its wall time waiting on politeness (its last
# tens of seconds go to a few hosts at tau_h, or at their Crawl-delay), with a core or
# less busy, so crawls that do not depend on each other run side by side: the first
# fixture that asks for one of them starts every one that a selected test will need
# (SIDE_BY_SIDE at a time, the longest first) and waits for all, so that no crawl runs
# on in the background while other tests run. Each crawl keeps its own in-vitro server,
# settings and checks; running beside others only makes it take longer.

#: How many side-by-side jobs run at once.
SIDE_BY_SIDE = 4
#: The niceness of a job's crawls, unless the job says otherwise: a job whose checks
#: time the server's replies (the shared IRL crawl's politeness audit holds the server's
#: end of an abandoned request to 50 ms after the crawler let go) runs at 0, and gets
#: the CPU before the others.
NICE = 10
#: The pytest timeout of the test whose setup runs them (pyproject.toml's 300 s is for
#: one test; each crawl has its own time limit: crawl_tiny's 240 s).
SIDE_BY_SIDE_TIMEOUT = 900

T = TypeVar("T")


@dataclass(frozen=True)
class Job:
    """A crawl (or a few in a row) to run side by side: ``run(work)``, ``work`` a new
    directory, returns what the fixture of the same name gives the tests."""

    run: Callable[[Path], Any]
    seconds: float  # about how long it takes alone (the longest start first)
    nice: int  # of its crawls (crawl_tiny)

    @property
    def name(self) -> str:
        return f"{self.run.__module__}.{self.run.__name__}"

    def wanted_by(self, item: pytest.Item) -> bool:
        """Whether ``item`` uses the job's fixture: in any module for a job of this
        conftest, else in the module that defines it."""
        module = getattr(item, "module", None)
        return (
            self.run.__name__ in getattr(item, "fixturenames", ())
            and module is not None
            and self.run.__module__ in (__name__, module.__name__)
        )


JOBS: dict[str, Job] = {}
#: ``nice``: the niceness of the job that the current thread runs.
_running_job = threading.local()


def side_by_side(
    seconds: float, *, scope: Literal["session", "module"] = "module", nice: int = NICE
) -> Callable[[Callable[[Path], T]], Any]:
    """Make ``run(work)`` a job that runs side by side with the others, and a fixture of
    its name (and ``scope``) that gives its result (raising what it raised)."""

    def register(run: Callable[[Path], T]) -> Any:
        job = Job(run, seconds, nice)
        JOBS[job.name] = job

        def fixture(side_by_side_jobs: SideBySide) -> T:
            result: T = side_by_side_jobs.result(job)
            return result

        fixture.__doc__ = run.__doc__
        return pytest.fixture(scope=scope, name=run.__name__)(fixture)

    return register


class SideBySide:
    """The session's side-by-side jobs: :meth:`result` runs, at its first call for a
    job, that job and every other not yet run that a selected test wants."""

    def __init__(self, items: list[pytest.Item], tmp_path_factory: pytest.TempPathFactory):
        self.items, self.tmp_path_factory = items, tmp_path_factory
        self.done: dict[str, Future[Any]] = {}

    def result(self, job: Job) -> Any:
        if job.name not in self.done:
            self._run(job)
        return self.done[job.name].result()

    def _run(self, first: Job) -> None:
        batch = [
            job
            for job in JOBS.values()
            if job.name not in self.done
            and (job is first or any(job.wanted_by(item) for item in self.items))
        ]
        batch.sort(key=lambda job: -job.seconds)
        with ThreadPoolExecutor(SIDE_BY_SIDE, thread_name_prefix="side-by-side") as pool:
            for job in batch:
                module = job.run.__module__.rsplit(".", 1)[-1].removeprefix("test_")
                work = self.tmp_path_factory.mktemp(f"{module}-{job.run.__name__}")
                self.done[job.name] = pool.submit(self._job, job, work)
        # (leaving the with block waits for every job)

    @staticmethod
    def _job(job: Job, work: Path) -> Any:
        _running_job.nice = job.nice
        try:
            return job.run(work)
        finally:
            _running_job.nice = 0


@pytest.fixture(scope="session")
def side_by_side_jobs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> SideBySide:
    return SideBySide(request.session.items, tmp_path_factory)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The first test that wants a side-by-side job runs them all in its setup, and
    which one that is depends on the selection: each gets :data:`SIDE_BY_SIDE_TIMEOUT`."""
    for item in items:
        if any(job.wanted_by(item) for job in JOBS.values()):
            item.add_marker(pytest.mark.timeout(SIDE_BY_SIDE_TIMEOUT), append=False)


#: WARC files of the shared IRL crawl fill several files at this size.
WARC_MAX_SIZE = 400_000


@side_by_side(seconds=55, scope="session", nice=0)
def irl_crawl(work: Path) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    """One complete crawl of the tiny web on the IRL scheduler with every recording
    feature on (WARC files with CDXJ, content dedup, a JOBDIR), shared by the crawl's
    tests (tests/e2e/test_irl_crawl.py) and the archive's (tests/e2e/test_warc.py):
    (the finished process, the server's request log, the WARC directory)."""
    from settings.broad import EXTENSIONS

    log = work / "requests.jsonl"
    extensions = {**EXTENSIONS, "tests.e2e.dedup_probe.DuplicateProbe": 0}
    result = crawl_tiny(
        log,
        *QUICK_IRL,
        "IRL_PROGRESS_INTERVAL=1",
        f"IRL_WARC_DIR={work / 'warc'}",
        f"IRL_WARC_MAX_SIZE={WARC_MAX_SIZE}",
        "IRL_WARC_CDXJ=1",
        "IRL_CONTENTSEEN_ENABLED=1",
        f"JOBDIR={work / 'job'}",
        f"EXTENSIONS={json.dumps(extensions)}",
    )
    return result, log, work / "warc"


@pytest.fixture(scope="session")
def invitro(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    log = tmp_path_factory.mktemp("invitro") / "requests.jsonl"
    with InVitroProcess("tiny", SEED, log=log) as server:
        yield {**server.info, "log_path": log, "process": server}


def proxy_address(info: dict[str, Any]) -> tuple[str, int]:
    host, port = info["proxy"].removeprefix("http://").split(":")
    return host, int(port)


def fetch(
    info: dict[str, Any], url: str, headers: dict[str, str] | None = None, timeout: float = 10.0
) -> tuple[int, dict[str, str], bytes]:
    """GET an absolute URL through the in-vitro proxy; chunked bodies are decoded."""
    conn = http.client.HTTPConnection(*proxy_address(info), timeout=timeout)
    try:
        conn.request("GET", url, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


#: Statuses Scrapy retries (0: no answer).
RETRYABLE = {0, 500, 502, 503, 504, 522, 524, 408, 429}


def assert_repeats_are_retries(
    records: list[dict[str, Any]], timeout: float = TINY_DOWNLOAD_TIMEOUT
) -> None:
    """Every URL gets at most one final answer; repeats are retries of failures only.

    Scrapy tries a request 3 times (RETRY_TIMES=2), and Twisted's connection pool re-sends
    a GET once more when a reused keep-alive connection is reset, so a URL that always
    resets is seen up to 6 times. The server logs the status a reply began with, so two
    replies are no answer to the crawler, which cuts them and may retry: one still being
    sent when the crawl's DOWNLOAD_TIMEOUT (``timeout``) ran out, and one larger than the
    broad spider's DOWNLOAD_MAXSIZE (Scrapy cancels it; the cancel can surface as a lost
    connection, which RetryMiddleware retries).
    """
    attempts: dict[str, list[int]] = {}
    for r in records:
        url = request_url(r)
        if r["path"] not in ROBOTS_PATHS and r["kind"] != "dns-error" and url is not None:
            timed_out = r["t_end"] is not None and r["t_end"] - r["t_start"] >= timeout
            cut = timed_out or r["bytes"] > MAX_PAGE_BYTES
            attempts.setdefault(url, []).append(0 if cut else r["status"])
    repeated = 0
    for url, statuses in attempts.items():
        final = [s for s in statuses if s not in RETRYABLE]
        assert len(final) <= 1, (url, statuses)
        assert len(statuses) <= 6, (url, statuses)
        if len(statuses) > 1:
            repeated += 1
            assert set(statuses[:-1]) <= RETRYABLE, (url, statuses)
    assert repeated > 0  # the tiny web has resetting and erroring servers
