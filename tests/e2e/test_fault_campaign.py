"""A fault campaign: the tiny web crawled on one JOBDIR through at least ten kill -9s and a
SIGINT, drawn anew each run (the seed is printed; ``IRLSCRAPY_FAULT_SEED`` replays it).

The interruptions, shuffled:

- kill -9 while the state directory is being reopened (irlscrapy.faulthooks pauses the
  crawl at ``state-open``, so the test knows it died there);
- kill -9 during a URLseen merge (``merge:urlseen``, at the third to eighth merge of
  the run);
- kill -9 at random instants from 0.2 to 6 s after the start, so that some land in
  start-up (the first ~1.6 s: imports, the in-vitro web, the state's open);
- SIGINT after a random number of new pages.

Then a last run crawls to the end. Over all runs:

- nothing is lost: the pages downloaded are the ground truth;
- each restart fetches again at most what was in flight or admitted at the stop (at most
  ``CONCURRENT_REQUESTS + IRL_WORKBENCH_URLS`` URLs answered before, beyond retries);
- politeness holds across every restart with delays that bind: robots.txt Crawl-delay
  up to 5 s (a few hosts ask for more), longer than a restart takes, so a host's first
  request of a run comes at least its delay after its last of the run before
  (irlscrapy.scheduler.frontier.restarthold).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import random
import re
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.audit import ROBOTS_PATHS, request_url
from irlscrapy.oracle.groundtruth import reachable

from .conftest import (
    IRL_POLICY,
    QUICK_IRL,
    RETRYABLE,
    ROOT,
    SEED,
    downloads,
    read_log,
    tiny_crawl_args,
)

WORKBENCH_URLS = 100
IN_FLIGHT = 64  # CONCURRENT_REQUESTS in settings/broad.py
CRAWL_DELAY_CAP = 5.0
HOST_DELAY = 0.2  # QUICK_IRL's tau_h
SETTINGS = (
    *QUICK_IRL,
    f"IRL_ROBOTS_MAX_CRAWL_DELAY={CRAWL_DELAY_CAP}",  # (after QUICK_IRL's 0.5: it wins)
    f"IRL_WORKBENCH_URLS={WORKBENCH_URLS}",
    "IRL_DRUM_MEMORY=1048576",  # URLseen merges often: a kill finds one running
)
RANDOM_KILLS = 8
RUN_TIMEOUT_S = 240.0


@dataclass
class Run:
    what: str
    log: Path
    err: Path
    started: float = 0.0
    stopped: float = field(default=0.0)


def _start(run: Run, job: Path, pause: str | None, pause_file: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    if pause is not None:
        env |= {"IRLSCRAPY_PAUSE_AT": pause, "IRLSCRAPY_PAUSE_FILE": str(pause_file)}
    run.started = time.time()
    with run.err.open("w") as err:
        return subprocess.Popen(
            tiny_crawl_args(run.log, f"JOBDIR={job}", *SETTINGS),
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )


def _stop_web(run: Run) -> None:
    """The in-vitro server outlives a killed crawl: stop it (it flushes its log)."""
    found = re.search(r"in-vitro web \(tiny, seed \d+, pid (\d+)\)", run.err.read_text())
    if found:
        with contextlib.suppress(ProcessLookupError):  # (it may have ended with it)
            os.kill(int(found.group(1)), signal.SIGTERM)
        time.sleep(0.5)


def _wait_for(proc: subprocess.Popen[bytes], run: Run, ready: object) -> None:
    deadline = time.monotonic() + 60
    while not ready():  # type: ignore[operator]
        assert proc.poll() is None, f"{run.what}: the crawl ended: {run.err.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"{run.what}: never got there"
        time.sleep(0.05)


def _interrupt(run: Run, job: Path, rng: random.Random, work: Path) -> None:
    pause_file = work / f"{run.err.stem}.paused"
    kind = run.what.split(" ")[0]
    if kind == "start-up":
        proc = _start(run, job, "state-open", pause_file)
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
        run.stopped = time.time()
        return
    else:
        proc = _start(run, job, None, pause_file)
        time.sleep(float(run.what.split(" ")[1]))
    proc.kill()
    proc.wait(30)
    run.stopped = time.time()
    _stop_web(run)


def test_ten_kills_and_a_sigint_lose_nothing_refetch_little_and_stay_polite(
    tmp_path: Path,
) -> None:
    seed = int(os.environ.get("IRLSCRAPY_FAULT_SEED") or random.SystemRandom().randrange(10**9))
    print(f"fault campaign seed {seed} (IRLSCRAPY_FAULT_SEED={seed} replays it)")
    rng = random.Random(seed)
    plan = ["start-up", "merge", "sigint"] + [
        f"after {rng.uniform(0.2, 6.0):.2f}" for _ in range(RANDOM_KILLS)
    ]
    rng.shuffle(plan)
    job = tmp_path / "job"
    runs = [Run(what, tmp_path / f"run{i}.jsonl", tmp_path / f"run{i}.err") for i, what in
            enumerate(plan)]  # fmt: skip
    for run in runs:
        _interrupt(run, job, rng, tmp_path)
    last = Run("to the end", tmp_path / "last.jsonl", tmp_path / "last.err")
    proc = _start(last, job, None, tmp_path / "unused")
    assert proc.wait(RUN_TIMEOUT_S) == 0, last.err.read_text()[-3000:]
    err = last.err.read_text()
    assert "summary (finished)" in err and "Traceback" not in err, err[-3000:]
    runs.append(last)
    print("runs:", ", ".join(f"{r.what} ({len(_log(r))} requests)" for r in runs))
    assert_nothing_lost(runs, seed)
    assert_refetches_bounded(runs, seed)
    assert_polite_across_restarts(runs, seed)


def _log(run: Run) -> list[dict[str, object]]:
    return read_log(run.log) if run.log.exists() else []


def assert_nothing_lost(runs: list[Run], seed: int) -> None:
    truth = reachable(InVitroWeb(TINY, SEED), IRL_POLICY)
    fetched = {url for run in runs if run.log.exists() for url in downloads(run.log)}
    assert fetched == truth, {
        "seed": seed,
        "missing": sorted(truth - fetched)[:10],
        "extra": sorted(fetched - truth)[:10],
    }


def assert_refetches_bounded(runs: list[Run], seed: int) -> None:
    """A URL answered (not with a retryable status) before a restart comes back in the
    run after it only if it was in flight or admitted to RAM at the stop."""
    answered: set[str] = set()
    figures = []
    for before, after in itertools.pairwise(runs):
        for r in _log(before):
            url = request_url(r)
            if url is not None and r["path"] not in ROBOTS_PATHS and r["status"] not in RETRYABLE:
                answered.add(url)
        again = {request_url(r) for r in _log(after) if r["path"] not in ROBOTS_PATHS} & answered
        figures.append(len(again))
    bound = IN_FLIGHT + WORKBENCH_URLS
    print(f"answered URLs fetched again after each stop: {figures} (bound {bound} each)")
    assert max(figures) <= bound, (seed, figures)


def assert_polite_across_restarts(runs: list[Run], seed: int) -> None:
    """A host's first request in a run starts at least its delay after the start of its
    last request in the runs before."""
    web = InVitroWeb(TINY, SEED)

    def delay(host: str) -> float:
        described = web.host(host)
        asked = web.crawl_delay(described) if described is not None else None
        return max(HOST_DELAY, min(asked or 0.0, CRAWL_DELAY_CAP))

    last_start: dict[str, float] = {}
    slacks: list[tuple[float, str]] = []
    for run in runs:
        served = sorted(
            (r for r in _log(run) if r["kind"] != "dns-error"), key=lambda r: r["t_start"]
        )
        first: dict[str, float] = {}
        for r in served:
            first.setdefault(str(r["host"]), float(r["t_start"]))  # type: ignore[arg-type]
        for host, start in first.items():
            if host in last_start:
                slacks.append((start - last_start[host] - delay(host), host))
        for r in served:
            last_start[str(r["host"])] = float(r["t_start"])  # type: ignore[arg-type]
    binding = [s for s in slacks if delay(s[1]) >= CRAWL_DELAY_CAP]
    least = min(binding or slacks)[0]
    print(f"{len(slacks)} host gaps across restarts; {len(binding)} with a delay of "
          f"{CRAWL_DELAY_CAP} s, the least slack of those {least:.2f} s")  # fmt: skip
    assert binding, "no host with a binding delay was asked in two runs: the check is empty"
    assert min(slacks)[0] >= 0, (seed, sorted(slacks)[:5])
