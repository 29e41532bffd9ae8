"""A real in-vitro web on ephemeral loopback ports, started once per session."""

from __future__ import annotations

import http.client
import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import pytest

from harness.childprocess import run_or_dump_stacks
from harness.tinyweb import (
    INVITRO_PID,
    IRL_POLICY,
    QUICK_CRAWL_DELAY_CAP,
    QUICK_IRL,
    RETRYABLE,
    ROOT,
    SEED,
    STOCK,
    TINY_DOWNLOAD_TIMEOUT,
    assert_never_idle_with_work,
    downloads,
    invitro_pid,
    read_log,
    tiny_crawl_args,
)
from irlscrapy.invitro.process import InVitroProcess
from irlscrapy.oracle.audit import ROBOTS_PATHS, request_url
from irlscrapy.spiders.broad import MAX_PAGE_BYTES

__all__ = [  # the tiny web's helpers, for the e2e tests (harness.tinyweb)
    "INVITRO_PID",
    "IRL_POLICY",
    "QUICK_CRAWL_DELAY_CAP",
    "QUICK_IRL",
    "RETRYABLE",
    "ROOT",
    "SEED",
    "STOCK",
    "TINY_DOWNLOAD_TIMEOUT",
    "downloads",
    "invitro_pid",
    "read_log",
    "tiny_crawl_args",
]


def crawl_tiny(log: Path, *settings: str) -> subprocess.CompletedProcess[str]:
    """Run :func:`tiny_crawl_args` to the end (at the niceness of the side-by-side job
    that runs it, if one does). Every crawl on the IRL scheduler that got as far as
    dumping its stats is checked for idle-with-work windows."""
    args = tiny_crawl_args(log, *settings)
    nice = getattr(_running_job, "nice", 0)
    if nice:
        args = ["nice", "-n", str(nice), *args]
    result = run_or_dump_stacks(args, cwd=ROOT, timeout=240)
    if "'irl/scheduler/dequeued'" in result.stderr:
        assert_never_idle_with_work(result.stderr)
    return result


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
