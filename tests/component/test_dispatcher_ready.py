"""When the dispatcher wakes the engine for records BEAST can hand to RAM (the no-idle
invariant): at once when admission can take them (below the horizon's target, or past
it with nothing in flight), not at the next host due. A URLseen drain, a re-split's end
and a handoff call :meth:`Dispatcher.ready`; it waited for the next host due, so an
agent whose only hosts waited on an IP lease held records idle in BEAST for up to a
second after a handover (CI's e2e agents test, twice)."""

from __future__ import annotations

import pytest
from scrapy import Request

from irlscrapy.scheduler.irl import IRLScheduler
from irlscrapy.scheduler.requestcodec import encode_link

BACKOFF_S = 5.0  # an origin in back-off: the frontier's next due time is this far


@pytest.fixture
def scheduler(irl_scheduler: IRLScheduler) -> IRLScheduler:
    return irl_scheduler


def _asked(scheduler: IRLScheduler) -> int:
    return scheduler.crawler.engine._slot.asked  # type: ignore[union-attr]


def _ready_with_a_host_due_later(scheduler: IRLScheduler, stored: int) -> int:
    """Store ``stored`` URLs in BEAST while the frontier's next due time is BACKOFF_S
    away (an origin in back-off), and call ready(); how often the engine was woken."""
    frontier, dispatcher = scheduler.frontier, scheduler.dispatcher
    assert frontier is not None and dispatcher is not None
    now = scheduler.waker.clock.seconds()
    frontier.holds.bench.hold("http://slow.example", now + BACKOFF_S, [])
    assert frontier.next_due() == now + BACKOFF_S
    for n in range(stored):
        frontier.push(encode_link(f"http://h{n}.example/", 1, None, None))
    asked = _asked(scheduler)
    dispatcher.ready()
    return _asked(scheduler) - asked


def _reach_the_horizons_target(scheduler: IRLScheduler) -> None:
    """The workbench holds what the crawler fetches within the horizon (a crawl with
    no fetch rate yet and no floor: a target of 0 URLs)."""
    admission = scheduler.frontier.admission  # type: ignore[union-attr]
    assert admission.horizon is not None
    admission.horizon.min_urls = 0
    assert admission.horizon_full


def _one_fetch_in_flight(scheduler: IRLScheduler) -> None:
    dispatcher = scheduler.dispatcher
    assert dispatcher is not None
    dispatcher.ledger.hand_out(None, None, False, Request("http://busy.example/"))  # type: ignore[arg-type]


def test_records_below_the_horizons_target_wake_the_engine_at_once(
    scheduler: IRLScheduler,
) -> None:
    assert _ready_with_a_host_due_later(scheduler, stored=3) == 1


def test_records_past_the_target_with_nothing_in_flight_wake_the_engine_at_once(
    scheduler: IRLScheduler,
) -> None:
    """No fetch will end to wake the engine: its next call admits past the target."""
    _reach_the_horizons_target(scheduler)
    assert _ready_with_a_host_due_later(scheduler, stored=3) == 1


def test_records_past_the_target_wait_for_the_fetches_in_flight(scheduler: IRLScheduler) -> None:
    """A fetch in flight ends, and its end admits past the target if nothing is due."""
    _reach_the_horizons_target(scheduler)
    _one_fetch_in_flight(scheduler)
    assert _ready_with_a_host_due_later(scheduler, stored=3) == 0
    now = scheduler.waker.clock.seconds()
    assert scheduler.waker._when == pytest.approx(now + BACKOFF_S, abs=1.0)


def test_an_empty_beast_waits_for_the_host_due(scheduler: IRLScheduler) -> None:
    assert _ready_with_a_host_due_later(scheduler, stored=0) == 0
    now = scheduler.waker.clock.seconds()
    assert scheduler.waker._when == pytest.approx(now + BACKOFF_S, abs=1.0)
