"""The no-idle invariant at the end of a URLseen drain: URLs that links submitted while
the merge ran (``_submitted`` does not start a second merge) are flushed when the drain
ends with nothing in flight, since no fetch will end to flush them. (They sat in
URLseen until the next host was due, and the real-web crawl's idle watch saw 1-second
windows of it.)"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from irlscrapy.scheduler.irl import IRLScheduler
from irlscrapy.scheduler.ledger import FetchLedger


class _URLseen:
    """What the drain's end reads of DRUMDupeFilter: pending keys, and flush()."""

    def __init__(self, pending: int) -> None:
        self.pending = pending
        self.flushes = 0

    def flush(self) -> defer.Deferred[Any]:
        self.flushes += 1
        return defer.Deferred()  # the merge runs on


class _Waker:
    def __init__(self) -> None:
        self.wakes = 0

    def wake(self) -> None:
        self.wakes += 1


def _after_a_merge(pending: int, in_flight: int) -> IRLScheduler:
    scheduler = IRLScheduler.__new__(IRLScheduler)
    scheduler.df = _URLseen(pending)  # type: ignore[assignment]
    scheduler.waker = _Waker()  # type: ignore[assignment]
    scheduler.frontier = None
    scheduler.ledger = FetchLedger()
    for _ in range(in_flight):
        scheduler.ledger.hand_out(object(), object(), robots=False)
    scheduler._merging = True
    scheduler._drain_task = object()
    scheduler._drained(None)
    return scheduler


def test_urls_submitted_during_a_merge_are_flushed_when_nothing_is_in_flight() -> None:
    scheduler = _after_a_merge(pending=4, in_flight=0)
    assert scheduler.df.flushes == 1  # type: ignore[attr-defined]
    assert scheduler._merging


def test_a_fetch_in_flight_flushes_them_when_its_links_come() -> None:
    scheduler = _after_a_merge(pending=4, in_flight=1)
    assert scheduler.df.flushes == 0  # type: ignore[attr-defined]
    assert not scheduler._merging


def test_nothing_pending_starts_no_merge() -> None:
    scheduler = _after_a_merge(pending=0, in_flight=0)
    assert scheduler.df.flushes == 0  # type: ignore[attr-defined]
    assert not scheduler._merging
