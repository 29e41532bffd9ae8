"""A fault campaign on the tiny web (tests/e2e/test_fault_campaign.py, bench/faults.py):
one JOBDIR crawled through a seeded plan of interruptions, then to the end, and the
figures the crash contract is held to.

The interruptions:

- ``start-up``: kill -9 while the state directory is being reopened
  (irlscrapy.storage.faulthooks pauses the crawl at ``state-open``, so it is known to die there);
- ``merge``: kill -9 during a URLseen merge (``merge:urlseen``, the 3rd to 8th of the run);
- ``resplit``: kill -9 during a BEAST re-split (``beast-resplit``, the first or second;
  always the first step: a new crawl's BEAST re-splits in its first seconds);
- ``after S``: kill -9 S seconds after the start (0.2 to 6 s: some land in start-up,
  the first ~1.6 s of imports, the in-vitro web and the state's open);
- ``sigint``: SIGINT after 50 to 300 new pages.

Figures (:class:`Figures`): the ground truth's pages never downloaded; per stop, the URLs
answered before it (not with a retryable status) fetched again in the run after it,
against the bound of what can be in flight or admitted at a stop; and per host asked in
two consecutive runs, the slack of its first request of a run after the start of its last
request before, over its delay (Crawl-delay up to :data:`CRAWL_DELAY_CAP`, longer than
a restart takes: irlscrapy.scheduler.frontier.restarthold keeps it).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.tinyweb import (
    INVITRO_PID,
    IRL_POLICY,
    QUICK_IRL,
    RETRYABLE,
    ROOT,
    SEED,
    downloads,
    invitro_pid,
    read_log,
    tiny_crawl_args,
)
from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.audit import ROBOTS_PATHS, request_url
from irlscrapy.oracle.groundtruth import reachable

WORKBENCH_URLS = 100
IN_FLIGHT = 64  # CONCURRENT_REQUESTS in settings/broad.py
#: the most URLs answered before a stop that the run after it may fetch again
REFETCH_BOUND = IN_FLIGHT + WORKBENCH_URLS
CRAWL_DELAY_CAP = 5.0
HOST_DELAY = 0.2  # QUICK_IRL's tau_h
SETTINGS = (
    *QUICK_IRL,
    f"IRL_ROBOTS_MAX_CRAWL_DELAY={CRAWL_DELAY_CAP}",  # (after QUICK_IRL's 0.5: it wins)
    f"IRL_WORKBENCH_URLS={WORKBENCH_URLS}",
    "IRL_URLSEEN_MEMORY=1048576",  # URLseen merges often: a kill finds one running
)
RUN_TIMEOUT_S = 300.0


@dataclass
class Run:
    what: str
    log: Path
    err: Path

    def records(self) -> list[dict[str, Any]]:
        return read_log(self.log) if self.log.exists() else []


def plan(rng: random.Random, random_kills: int) -> list[str]:
    """The interruptions, in a seeded order: one of each kind, ``random_kills`` kills
    at random instants."""
    steps = ["start-up", "merge", "sigint"]
    steps += [f"after {rng.uniform(0.2, 6.0):.2f}" for _ in range(random_kills)]
    rng.shuffle(steps)
    return ["resplit", *steps]  # first: a new crawl's BEAST re-splits in its first seconds


def run_campaign(work: Path, seed: int, random_kills: int) -> list[Run]:
    """Crawl one JOBDIR under ``work`` through the plan, then to the end; the runs."""
    rng = random.Random(seed)
    job = work / "job"
    runs = []
    for i, what in enumerate(plan(rng, random_kills)):
        run = Run(what, work / f"run{i}.jsonl", work / f"run{i}.err")
        _interrupt(run, job, rng, work / f"run{i}.paused")
        runs.append(run)
    last = Run("to the end", work / "last.jsonl", work / "last.err")
    proc = _start(last, job, None, work / "unused")
    assert proc.wait(RUN_TIMEOUT_S) == 0, last.err.read_text()[-3000:]
    err = last.err.read_text()
    assert "summary (finished)" in err and "Traceback" not in err, err[-3000:]
    return [*runs, last]


def _start(run: Run, job: Path, pause: str | None, pause_file: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    if pause is not None:
        env |= {"IRLSCRAPY_PAUSE_AT": pause, "IRLSCRAPY_PAUSE_FILE": str(pause_file)}
    with run.err.open("w") as err:
        return subprocess.Popen(
            tiny_crawl_args(run.log, f"JOBDIR={job}", *SETTINGS),
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )


def _wait_for(proc: subprocess.Popen[bytes], run: Run, ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 60
    while not ready():
        assert proc.poll() is None, f"{run.what}: the crawl ended: {run.err.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"{run.what}: never got there"
        time.sleep(0.05)


def _interrupt(run: Run, job: Path, rng: random.Random, pause_file: Path) -> None:
    kind = run.what.split(" ")[0]
    if kind == "start-up":
        proc = _start(run, job, "state-open", pause_file)
        _wait_for(proc, run, pause_file.exists)
    elif kind == "resplit":
        proc = _start(run, job, f"beast-resplit@{rng.randint(1, 2)}", pause_file)
        _wait_for(proc, run, pause_file.exists)
    elif kind == "merge":
        proc = _start(run, job, f"merge:urlseen@{rng.randint(3, 8)}", pause_file)
        _wait_for(proc, run, pause_file.exists)
    elif kind == "sigint":
        proc = _start(run, job, None, pause_file)
        pages = rng.randint(50, 300)
        _wait_for(proc, run, lambda: run.log.exists() and len(downloads(run.log)) >= pages)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(120) == 0, run.err.read_text()[-3000:]
        return
    else:
        proc = _start(run, job, None, pause_file)
        time.sleep(float(run.what.split(" ")[1]))
    proc.kill()
    proc.wait(30)
    # the in-vitro server outlives a killed crawl: stop it (it flushes its log); a crawl
    # killed in its first second may not have started one
    if INVITRO_PID.search(run.err.read_text()):
        with contextlib.suppress(ProcessLookupError):  # (it may have ended with it)
            os.kill(invitro_pid(run.err.read_text()), signal.SIGTERM)
        time.sleep(0.5)


@dataclass
class Figures:
    missing: list[str]  # ground-truth pages never downloaded
    extra: list[str]  # pages downloaded outside the ground truth
    refetched: list[int]  # per stop: URLs answered before it, fetched again after it
    twice: list[int]  # per run: URLs answered twice in it (a double fetch; retries aside)
    slacks: list[tuple[float, str]]  # (slack s, host) of each host's first request of a run
    binding: list[tuple[float, str]]  # those of hosts whose delay is CRAWL_DELAY_CAP

    def summary(self) -> str:
        least = min(self.binding or self.slacks)[0] if self.slacks else float("nan")
        return (
            f"{len(self.missing)} missing, {len(self.extra)} extra; answered URLs fetched "
            f"again after each stop: {self.refetched} (bound {REFETCH_BOUND} each); "
            f"answered twice within a run: {self.twice}; "
            f"{len(self.slacks)} host gaps across restarts, {len(self.binding)} with a "
            f"delay of {CRAWL_DELAY_CAP} s, least slack of those {least:.2f} s"
        )


def figures(runs: list[Run]) -> Figures:
    web = InVitroWeb(TINY, SEED)
    truth = reachable(web, IRL_POLICY)
    fetched = {url for run in runs if run.log.exists() for url in downloads(run.log)}
    logs = [run.records() for run in runs]
    twice = [len(answered_twice(log)) for log in logs]
    refetched = []
    answered: set[str] = set()
    for before, after in itertools.pairwise(logs):
        for r in before:
            url = request_url(r)
            if url is not None and r["path"] not in ROBOTS_PATHS and r["status"] not in RETRYABLE:
                answered.add(url)
        again = {request_url(r) for r in after if r["path"] not in ROBOTS_PATHS} & answered
        refetched.append(len(again))

    def delay(host: str) -> float:
        described = web.host(host)
        asked = web.crawl_delay(described) if described is not None else None
        return max(HOST_DELAY, min(asked or 0.0, CRAWL_DELAY_CAP))

    last_start: dict[str, float] = {}
    slacks: list[tuple[float, str]] = []
    for log in logs:
        served = sorted((r for r in log if r["kind"] != "dns-error"), key=lambda r: r["t_start"])
        first: dict[str, float] = {}
        for r in served:
            first.setdefault(r["host"], r["t_start"])
        slacks += [(t - last_start[h] - delay(h), h) for h, t in first.items() if h in last_start]
        last_start |= {r["host"]: r["t_start"] for r in served}
    binding = [s for s in slacks if delay(s[1]) >= CRAWL_DELAY_CAP]
    return Figures(
        sorted(truth - fetched), sorted(fetched - truth), refetched, twice, slacks, binding
    )


def answered_twice(records: list[dict[str, Any]]) -> list[str]:
    """The URLs given two answers that are not retried (a double fetch) in one run's
    requests: a URL queued twice, say from the admitted journal and from BEAST."""
    final: dict[str, int] = {}
    for r in records:
        url = request_url(r)
        if (
            url is not None
            and r["kind"] != "dns-error"
            and r["path"] not in ROBOTS_PATHS
            and r["status"] not in RETRYABLE
        ):
            final[url] = final.get(url, 0) + 1
    return sorted(url for url, count in final.items() if count > 1)
