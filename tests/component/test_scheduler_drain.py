"""The no-idle invariant at the end of a URLseen drain: URLs that links submitted while
the merge ran (``Intake.submitted`` does not start a second merge) are flushed when the drain
ends with nothing in flight, since no fetch will end to flush them. (They sat in
URLseen until the next host was due, and the real-web crawl's idle watch saw 1-second
windows of it.) And when the next flush of a starving crawler may come: a merge's
length after it ended."""

from __future__ import annotations

from typing import Any

from twisted.internet import defer, task

from irlscrapy.scheduler.intake import Intake
from irlscrapy.scheduler.peers import NoPeers


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
        self.clock = task.Clock()

    def wake(self) -> None:
        self.wakes += 1


def _intake(pending: int) -> Intake:
    """An intake over a URLseen with ``pending`` keys, and nothing else."""
    return Intake(
        _URLseen(pending),  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,
        _Waker(),  # type: ignore[arg-type]
        dedup=True,
        persistent=False,
        log_unserializable=False,
        peers=NoPeers(),
    )


def _after_a_merge(pending: int, in_flight: int) -> Intake:
    intake = _intake(pending)
    intake._in_flight = lambda: in_flight
    intake.merging = True
    intake._drain_task = object()
    intake.drained(None)
    return intake


def test_urls_submitted_during_a_merge_are_flushed_when_nothing_is_in_flight() -> None:
    intake = _after_a_merge(pending=4, in_flight=0)
    assert intake.urlseen.flushes == 1  # type: ignore[attr-defined]
    assert intake.merging


def test_a_fetch_in_flight_flushes_them_when_its_links_come() -> None:
    intake = _after_a_merge(pending=4, in_flight=1)
    assert intake.urlseen.flushes == 0  # type: ignore[attr-defined]
    assert not intake.merging


def test_nothing_pending_starts_no_merge() -> None:
    intake = _after_a_merge(pending=0, in_flight=0)
    assert intake.urlseen.flushes == 0  # type: ignore[attr-defined]
    assert not intake.merging


def test_a_starving_flush_waits_as_long_as_the_last_merge_took() -> None:
    """Flushes a starving crawler asks for take at most half the time: the next may
    come once as long as the last merge (and its drain) took has passed since its end."""
    intake = _after_a_merge(pending=0, in_flight=1)
    clock = intake.waker.clock  # type: ignore[attr-defined]
    clock.advance(100.0)
    intake.urlseen.pending = 4  # type: ignore[misc]
    intake.flush()
    assert intake.merging and intake.urlseen.flushes == 1  # type: ignore[attr-defined]
    clock.advance(0.25)  # the merge and its drain take 0.25 s
    intake._drain_task = object()
    intake.drained(None)
    assert intake.starving_flush_at == 100.5


def test_the_drain_tells_the_dispatcher_what_it_stored() -> None:
    """The records stored may be admitted at once (Dispatcher.ready decides when the
    engine asks: tests/component/test_dispatcher_ready.py)."""
    intake = _intake(pending=0)
    readied: list[int] = []
    intake._ready = lambda: readied.append(1)
    intake.merging = True
    intake.drained(None)
    assert readied == [1] and not intake.merging
