"""PacedRelease fires a batch of Deferreds one per reactor turn (irlscrapy.warc.recorder)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from twisted.internet import defer

from irlscrapy.warc.recorder import PacedRelease


class Turns:
    """A reactor's turns, as Twisted's and asyncio's loops run them: a call scheduled
    for now during a turn runs in the next turn, not in this one. (twisted's task.Clock
    runs it in the same ``advance``.)"""

    def __init__(self) -> None:
        self.calls: list[Callable[[], Any]] = []

    def callLater(self, delay: float, f: Callable[[], Any]) -> object:
        assert delay == 0
        self.calls.append(f)
        return f

    def turn(self) -> None:
        calls, self.calls = self.calls, []
        for f in calls:
            f()


def _collect(results: list[Any], *ds: defer.Deferred[Any]) -> None:
    for d in ds:
        d.addCallback(results.append)


@given(st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=6))
def test_each_deferred_fires_once_in_order_one_per_turn(batches: list[int]) -> None:
    turns = Turns()
    release = PacedRelease(lambda: turns)
    results: list[int] = []
    expected: list[int] = []
    for size in batches:  # every batch handed over in the same turn
        ds: list[defer.Deferred[int]] = [defer.Deferred() for _ in range(size)]
        _collect(results, *ds)
        values = list(range(len(expected), len(expected) + size))
        for d, value in zip(ds, values, strict=True):
            release.fire(d, value)
        expected += values
        assert len(results) == 1  # the turn's one release: the very first
    while len(results) < len(expected):
        fired = len(results)
        turns.turn()
        assert len(results) == fired + 1  # one a turn
    turns.turn()  # the turn after the last: nothing left to fire
    assert results == expected
    assert not turns.calls


def test_after_a_turn_without_a_release_the_next_fires_at_once() -> None:
    turns = Turns()
    release = PacedRelease(lambda: turns)
    results: list[str] = []
    a, b, c = defer.Deferred(), defer.Deferred(), defer.Deferred()
    _collect(results, a, b, c)
    release.fire(a, "a")
    release.fire(b, "b")
    assert results == ["a"]
    turns.turn()
    assert results == ["a", "b"]
    turns.turn()  # nothing due: the turn passes without a release
    assert not turns.calls
    release.fire(c, "c")
    assert results == ["a", "b", "c"]
