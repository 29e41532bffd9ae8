"""Host health on a real frontier (BEAST files, admitted journal, workbench): back-off
postpones the host; retirement parks its stored URLs in BEAST, where none is lost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from twisted.internet import defer

from irlscrapy.scheduler.addressguard import AddressGuard
from irlscrapy.scheduler.admitted import AdmittedJournal
from irlscrapy.scheduler.beast import Beast
from irlscrapy.scheduler.frontier import Frontier, MemoryItem, item_url
from irlscrapy.scheduler.hosthealth import HostHealth
from irlscrapy.scheduler.requestcodec import encode_link
from irlscrapy.scheduler.workbench import VisitState, Workbench

HEALTH = HostHealth(backoff_base=2.0, backoff_max=30.0, max_failures=3, retire_delay=600.0)
HOST = "sick.example"


class _Stats:
    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] = self.values.get(key, 0) + count


@pytest.fixture
def frontier(tmp_path: Path) -> Any:
    beast = Beast(tmp_path / "beast", lambda _: 100)
    beast.open()
    journal = AdmittedJournal(tmp_path / "admitted")
    journal.open()
    front = Frontier(
        beast,
        Workbench(lambda state: 1.0, lambda entry: 0.0),
        journal,
        lambda host: defer.succeed("8.8.8.8"),
        lambda _: 100,
        _Stats(),
        capacity=1000,
        host_cap=100,
        user_agent="test",
        clock=lambda: 0.0,
        guard=AddressGuard(),
    )
    yield front
    front.close()


def test_backoff_postpones_the_host_then_retirement_parks_its_urls(frontier: Any) -> None:
    for n in range(10):
        frontier.push(encode_link(f"http://{HOST}/{n}", 1, None, None))
    frontier.admit()
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
    assert len(frontier.beast) == 9  # the stored URLs, back in BEAST
    assert [item for _, item in state.urls] == [memory]  # what cannot be stored stays
    assert frontier.workbench.next_due() == 607.0 and state.failures == 0
    # Nothing is lost: the journal's live URLs are exactly what RAM holds.
    frontier.journal.close()
    live = frontier.journal.open()
    assert live == []
    parked = sorted(item_url((record[12:], 0)) for _, record in iter(frontier.beast.pop, None))
    assert parked == sorted(f"http://{HOST}/{n}" for n in range(1, 10))


def test_an_answer_makes_the_host_healthy_again() -> None:
    state = VisitState(HOST, "8.8.8.8")
    state.failures, state.backoff = 2, 8.0
    HEALTH.answered(state)
    assert (state.failures, state.backoff) == (0, 0.0)
