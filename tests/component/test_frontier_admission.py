"""Admission from BEAST into RAM on a real frontier (BEAST files, admitted journal,
workbench): a host holding host_cap URLs gets no more, and a run of deferrals pauses
admission until that host takes a URL, however few records BEAST holds and however
many admit() calls the run spans; with a horizon, RAM holds what the crawler fetches
within it, and a hungry crawler gets more."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.frontierfixture import open_test_frontier
from irlscrapy.scheduler.admission import ADMIT_CLOCK_EVERY, ADMIT_SLICE, DEFERRAL_RUN
from irlscrapy.scheduler.frontier.horizon import Horizon
from irlscrapy.scheduler.requestcodec import encode_link
from irlscrapy.scheduler.stages import Frontier

HOST_CAP = 5


@pytest.fixture
def frontier(tmp_path: Path) -> Iterator[Frontier]:
    front = open_test_frontier(tmp_path, capacity=10_000, host_cap=HOST_CAP, clock=lambda: 0.0)
    yield front
    front.close()


def _admit_until_paused(frontier: Frontier, calls: int) -> int:
    """admit() until admission pauses; fail after ``calls`` calls. Return the reads."""
    read = 0
    for _ in range(calls):
        if not frontier.admission.can_admit():
            return read
        read += frontier.admission.admit()
    assert not frontier.admission.can_admit(), f"admission still reads after {calls} calls"
    return read


@pytest.mark.parametrize("urls", [HOST_CAP + 1, 80, ADMIT_SLICE * 2 + 7, 1_000])
def test_records_of_a_full_host_pause_admission_within_one_run(
    frontier: Frontier, urls: int
) -> None:
    """With only a full host's records in BEAST, admission pauses once it has deferred
    them all, or DEFERRAL_RUN of them, even though each admit() reads ADMIT_SLICE at
    most (before, a run was counted per call and never reached DEFERRAL_RUN: admission
    read and gave back 64 records a call without end, and the crawl sat idle). A call
    stops after ADMIT_SECONDS too, but reads ADMIT_CLOCK_EVERY records first, so a
    loaded machine (CI) needs more calls, never endless ones."""
    for n in range(urls):
        frontier.push(encode_link(f"http://big.example/{n}", 1, None, None))
    waiting = urls - HOST_CAP
    run = min(DEFERRAL_RUN, waiting)
    calls = math.ceil((HOST_CAP + run) / ADMIT_CLOCK_EVERY) + 1
    read = _admit_until_paused(frontier, calls)
    assert frontier.admission.paused
    assert len(frontier.workbench) == HOST_CAP
    assert len(frontier.beast) == waiting
    assert read == HOST_CAP + run
    assert frontier.stats.values["irl/frontier/deferred"] == run


def test_a_full_host_that_takes_a_url_resumes_admission(frontier: Frontier) -> None:
    for n in range(40):
        frontier.push(encode_link(f"http://big.example/{n}", 1, None, None))
    _admit_until_paused(frontier, 4)
    got = frontier.take(0.0)
    assert got is not None
    state, item = got
    assert not frontier.admission.paused
    frontier.workbench.release(state, 0.0)
    frontier.finished(item)
    assert frontier.admission.admit() >= 1
    assert len(frontier.workbench) == HOST_CAP


def test_a_new_record_resumes_admission_and_is_admitted(frontier: Frontier) -> None:
    for n in range(40):
        frontier.push(encode_link(f"http://big.example/{n}", 1, None, None))
    _admit_until_paused(frontier, 4)
    frontier.push(encode_link("http://small.example/", 1, None, None))
    assert frontier.admission.can_admit()
    _admit_until_paused(frontier, 4)
    assert "small.example" in {state.host for state in frontier.workbench.hosts.values()}
    assert frontier.admission.paused


def test_ram_full_stops_admission_until_a_url_leaves(frontier: Frontier) -> None:
    """At ``capacity`` admitted URLs admission stops and ``ram_full`` says why (the
    no-idle watch does not count BEAST as waiting work then); a URL taken makes room."""
    frontier.admission.capacity = 12
    for n in range(30):
        frontier.push(encode_link(f"http://h{n % 6}.example/{n}", 1, None, None))
    _admit_until_paused(frontier, 4)
    assert frontier.admission.ram_full
    assert not frontier.admission.paused
    assert len(frontier.workbench) == 12
    assert len(frontier.beast) == 18
    got = frontier.take(0.0)
    assert got is not None
    assert not frontier.admission.ram_full
    assert frontier.admission.can_admit()


def test_the_horizon_stops_admission_at_its_target_unless_the_crawler_is_hungry(
    tmp_path: Path,
) -> None:
    """The overall target (here the floor, no rate yet) stops admission while the
    workbench is below its RAM cap; a hungry crawler (room for a fetch, nothing due)
    is admitted past it, and that is counted."""
    horizon = Horizon(30.0, lambda: 0.0, min_urls=20)
    frontier = open_test_frontier(
        tmp_path, capacity=10_000, host_cap=HOST_CAP, clock=lambda: 0.0, horizon=horizon
    )
    try:
        for n in range(200):
            frontier.push(encode_link(f"http://h{n}.example/", 1, None, None))
        _admit_until_paused(frontier, 4)
        assert len(frontier.workbench) == 20
        assert frontier.admission.horizon_full and not frontier.admission.ram_full
        assert frontier.admission.can_admit(hungry=True)
        read = frontier.admission.admit(hungry=True)  # up to ADMIT_SLICE, as time allows
        assert read >= 1
        assert len(frontier.workbench) == 20 + read
        assert frontier.stats.values["irl/frontier/past_horizon"] == read
    finally:
        frontier.close()


def test_a_host_and_an_ip_get_what_they_can_fetch_within_the_horizon(tmp_path: Path) -> None:
    """tau_h 4 s and tau_s 1 s with a 10 s horizon: a host takes ceil(10 / 4) = 3 URLs
    and its IP 10, whatever the host cap (64); a new host on a full IP still gets its
    first URL (its IP is known only once it is resolved). Hungry or not."""
    horizon = Horizon(10.0, lambda: 0.0, min_urls=10_000)
    frontier = open_test_frontier(
        tmp_path,
        capacity=10_000,
        host_cap=64,
        clock=lambda: 0.0,
        host_delay=lambda state: 4.0,
        ip_delay=lambda entry: 1.0,
        horizon=horizon,
    )
    try:
        for n in range(40):  # h0's five URLs first, then h1's, ...
            frontier.push(encode_link(f"http://h{n // 5}.example/{n}", 1, None, None))
        for _ in range(10):
            frontier.admission.admit(hungry=True)
            frontier.admission.resume()
        per_host = sorted(len(state.urls) for state in frontier.workbench.hosts.values())
        assert per_host == [1, 1, 1, 1, 1, 3, 3, 3]  # h0-h2 fill the IP to 9; h3-h7 join it
        assert frontier.workbench.ips["8.8.8.8"].urls == 14
        assert len(frontier.beast) == 40 - 14
    finally:
        frontier.close()
