"""Host health on a real frontier (BEAST files, admitted journal, parked files, workbench):
back-off postpones the host; a connection failure holds only its origin's URLs;
retirement parks the stored URLs on disk, where none is lost, until it ends."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from harness.frontierfixture import open_test_frontier
from irlscrapy.scheduler.frontier.workbench import VisitState
from irlscrapy.scheduler.frontieritems import MemoryItem, item_url
from irlscrapy.scheduler.hosts.hosthealth import HostHealth
from irlscrapy.scheduler.requestcodec import encode_link

HEALTH = HostHealth(backoff_base=2.0, backoff_max=30.0, max_failures=3, retire_delay=600.0)
HOST = "sick.example"


@pytest.fixture
def frontier(tmp_path: Path) -> Any:
    clock = [0.0]
    front = open_test_frontier(
        tmp_path,
        capacity=1000,
        host_cap=100,
        clock=lambda: clock[0],
        host_delay=lambda state: 1.0,
    )
    front.now = clock
    yield front
    front.close()


def test_backoff_postpones_the_host_then_retirement_parks_its_urls(frontier: Any) -> None:
    for n in range(10):
        frontier.push(encode_link(f"http://{HOST}/{n}", 1, None, None))
    while frontier.admission.can_admit():  # each admit() works ADMIT_SECONDS at most
        frontier.admission.admit()
    assert len(frontier.workbench) == 10 and len(frontier.beast) == 0
    state, first = frontier.take(0.0)
    frontier.workbench.release(state, 0.0)
    frontier.finished(first)
    stats = frontier.stats

    HEALTH.failed(state, frontier, 1.0, None, stats)  # backoff_base
    assert frontier.workbench.next_due() == 3.0
    HEALTH.failed(state, frontier, 1.0, 5.0, stats)  # Retry-After wins
    assert state.backoff == 5.0 and frontier.workbench.next_due() == 6.0
    assert frontier.take(5.9) is None

    memory = MemoryItem(object(), f"http://{HOST}/memory")
    frontier.workbench.add(HOST, state.ip, memory)
    HEALTH.failed(state, frontier, 7.0, None, stats)  # the third in a row: retired
    assert stats.values["irl/hosts/retired"] == 1
    assert stats.values["irl/hosts/parked_urls"] == 9
    assert frontier.holds.parked.count == 9 and len(frontier.beast) == 0  # parked on disk
    assert [item for _, _, item in state.urls] == [memory]  # what cannot be stored stays
    assert frontier.workbench.next_due() == 607.0 and state.failures == 0
    # A URL of the retired host admitted meanwhile is parked too, not held in RAM.
    frontier.now[0] = 100.0
    frontier.push(encode_link(f"http://{HOST}/late", 1, None, None))
    frontier.admission.admit()
    assert frontier.holds.parked.count == 10 and len(frontier.workbench) == 1
    # Nothing is lost: the journal's live URLs are exactly what RAM holds.
    frontier.journal.close()
    live = frontier.journal.open()
    assert live == []
    # The retirement ends: every parked URL goes back to BEAST.
    assert frontier.take(607.0) is not None  # (the memory item)
    assert frontier.holds.parked.count == 0
    parked = sorted(item_url((record[12:], 0)) for _, record in iter(frontier.beast.pop, None))
    assert parked == sorted([*(f"http://{HOST}/{n}" for n in range(1, 10)), f"http://{HOST}/late"])


def test_a_refused_origin_is_held_and_retired_while_the_host_goes_on(frontier: Any) -> None:
    """Nothing listens on the host's https port: its https URLs wait, then are parked;
    its http URLs are fetched all along, at the host's own delay, never backed off."""
    for n in range(6):
        frontier.push(encode_link(f"http://{HOST}/{n}", 1, None, None))
        frontier.push(encode_link(f"https://{HOST}/{n}", 1, None, None))
    frontier.admission.admit()
    stats = frontier.stats
    fetched: list[str] = []
    now = 0.0
    while (got := frontier.take(now)) is not None or len(frontier):
        if got is None:
            due = frontier.next_due()
            assert due is not None and due > now, "work left, and nothing will come due"
            now = due
            continue
        state, item = got
        url = item_url(item)
        frontier.workbench.release(state, now)
        frontier.finished(item)
        if url.startswith("https:"):
            HEALTH.origin_failed(state, f"https://{HOST}", frontier, now, stats)
        else:
            HEALTH.answered(state, f"http://{HOST}", frontier)
            fetched.append(url)
        assert state.backoff == 0.0  # the host itself is never backed off
        now += 1.0
        if now > 10_000:
            break
    assert sorted(fetched) == sorted(f"http://{HOST}/{n}" for n in range(6))
    assert stats.values["irl/origins/backoffs"] == 2
    assert stats.values["irl/origins/retired"] == 1
    assert frontier.holds.parked.count == 3  # the https URLs not tried
    assert now < 20  # the http URLs did not wait for the https back-offs


def test_hosts_differing_in_case_trailing_dot_or_default_port_are_one(frontier: Any) -> None:
    for url in (f"http://{HOST}/a", f"http://{HOST.upper()}./b", f"http://{HOST}:80/c"):
        frontier.push(encode_link(url, 1, None, None))
    frontier.push(encode_link(f"https://{HOST}:443/d", 1, None, None))
    frontier.admission.admit()
    assert list(frontier.workbench.hosts) == [HOST]
    assert len(frontier.workbench.hosts[HOST].urls) == 4


def test_an_answer_makes_the_host_and_the_origin_healthy_again(frontier: Any) -> None:
    state = VisitState(HOST, "8.8.8.8")
    state.failures, state.backoff = 2, 8.0
    frontier.holds.bench.origin_failures[f"http://{HOST}"] = 2
    HEALTH.answered(state, f"http://{HOST}", frontier)
    assert (state.failures, state.backoff) == (0, 0.0)
    assert frontier.holds.bench.origin_failures == {}


def test_only_urls_waiting_on_failures_may_be_given_up(frontier: Any) -> None:
    """A finished crawl gives up URLs that wait on back-off or retirement, never URLs
    that wait on politeness alone (a Crawl-delay of 30 s is waited for)."""
    for n in range(2):
        frontier.push(encode_link(f"http://{HOST}/{n}", 1, None, None))
    frontier.admission.admit()
    state, first = frontier.take(0.0)
    frontier.workbench.release(state, 0.0)  # due again at 1.0: politeness
    frontier.finished(first)
    assert frontier.take(0.5) is None
    assert not frontier.waits_on_failures(0.5)
    HEALTH.failed(state, frontier, 0.5, None, frontier.stats)  # a 503: back-off
    assert frontier.waits_on_failures(0.5)
    assert frontier.give_up() == 1 and len(frontier) == 0
    assert frontier.holds.parked.count == 1


def test_a_give_up_ends_the_retirements_and_leaves_their_urls_parked(frontier: Any) -> None:
    """A finite crawl waits for a retired host's parked URLs while the retirement is in
    force (irlscrapy.scheduler.dispatch); once it gives up, none is, and they stay
    parked for a rerun."""
    for n in range(3):
        frontier.push(encode_link(f"http://{HOST}/{n}", 1, None, None))
    frontier.admission.admit()
    state, first = frontier.take(0.0)
    frontier.workbench.release(state, 0.0)
    frontier.finished(first)
    for _ in range(3):
        HEALTH.failed(state, frontier, 1.0, None, frontier.stats)
    bench = frontier.holds.bench
    assert bench.retiring() and frontier.holds.parked.count == 2 and len(frontier) == 0
    assert frontier.give_up() == 0
    assert not bench.retiring() and bench.next_time() is None
    assert frontier.holds.parked.count == 2


def test_retirements_are_each_counted_and_the_first_logged(
    frontier: Any, caplog: pytest.LogCaptureFixture
) -> None:
    health = HostHealth(backoff_base=2.0, backoff_max=30.0, max_failures=1, retire_delay=600.0)
    for host in ("a.example", "b.example"):
        frontier.push(encode_link(f"http://{host}/", 1, None, None))
    while frontier.admission.can_admit():
        frontier.admission.admit()
    with caplog.at_level(logging.INFO, logger="irlscrapy.scheduler.hosts.hosthealth"):
        for state in list(frontier.workbench.hosts.values()):
            health.failed(state, frontier, 1.0, None, frontier.stats)
    assert frontier.stats.values["irl/hosts/retired"] == 2
    [line] = [r.getMessage() for r in caplog.records]
    assert "retired for 600 s" in line and "counted in irl/hosts/retired" in line
