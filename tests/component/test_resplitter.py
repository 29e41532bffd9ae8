"""BEAST's re-split run by the scheduler's Resplitter in slices between reactor turns:
pop() waits for it without blocking, pushes meanwhile are kept, the engine is woken at
its end, a full disk stops the crawl, a stop leaves it to be done again on open."""

from __future__ import annotations

import errno
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from twisted.internet import task
from twisted.python.failure import Failure

from irlscrapy.exceptions import disk_full
from irlscrapy.scheduler.frontier import beast as beast_module
from irlscrapy.scheduler.frontier.beast import Beast
from irlscrapy.scheduler.resplitter import Resplitter, begun_on_open


class Stats:
    def __init__(self) -> None:
        self.values: dict[str, float] = {}

    def inc_value(self, key: str, count: float = 1) -> None:
        self.values[key] = self.values.get(key, 0) + count


class Turns:
    """A cooperator whose ticks the test runs, one at a time (the reactor's turns), of
    one step each."""

    def __init__(self) -> None:
        self.due: deque[Callable[[], Any]] = deque()
        one_step = lambda: lambda: True  # noqa: E731 (each tick ends after one step)
        self.cooperator = task.Cooperator(
            terminationPredicateFactory=one_step, scheduler=self._schedule
        )

    def _schedule(self, call: Callable[[], Any]) -> Any:
        self.due.append(call)
        return _Delayed()

    def run_one(self) -> bool:
        if not self.due:
            return False
        self.due.popleft()()
        return True


class _Delayed:
    def cancel(self) -> None:
        pass


def open_beast(path: Path) -> Beast:
    beast = Beast(path, lambda d: 1, initial_queues=2, on_resplit=begun_on_open)
    beast.open()
    return beast


def fill_and_end_a_cycle(beast: Beast, records: int) -> list[tuple[int, bytes]]:
    """Push ``records`` of 4 domains (most go to QF), pop until a re-split begins."""
    for n in range(records):
        beast.push(n % 4, b"u%d" % n)
    popped = []
    while (got := beast.pop()) is not None:
        popped.append(got)
    assert beast.resplitting  # the pop that ended the cycle began it, and waits for it
    return popped


def test_a_resplit_runs_in_turns_and_wakes_the_engine_at_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(beast_module, "RESPLIT_SLICE", 5)
    beast, stats, turns, woken = open_beast(tmp_path), Stats(), Turns(), []
    failures: list[Failure] = []
    Resplitter(
        beast,
        stats,
        lambda: 0.0,
        failed=lambda f, what: failures.append(f),
        done=lambda: woken.append(1),
        cooperator=turns.cooperator,
    )
    popped = fill_and_end_a_cycle(beast, 400)
    assert beast.pop() is None and not beast.available()  # waits, does not block
    late = [(7, b"late%d" % n) for n in range(8)]  # more than a slice: a phase of their own
    for domain, payload in late:
        beast.push(domain, payload)  # kept in the pending file meanwhile
    ticks = 0
    while turns.run_one():
        ticks += 1
    assert ticks > 10 and woken == [1] and not failures and not beast.resplitting
    assert stats.values["irl/beast/resplit_phases"] == 2  # QF, then the late pushes
    while (got := beast.pop()) is not None or beast.resplitting:
        if got is not None:
            popped.append(got)
        turns.run_one()
    expected = [(n % 4, b"u%d" % n) for n in range(400)] + late
    assert sorted(popped) == sorted(expected)


def test_a_full_disk_in_a_resplit_stops_the_crawl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    beast, turns = open_beast(tmp_path), Turns()
    failures: list[tuple[Failure, str]] = []
    Resplitter(
        beast,
        Stats(),
        lambda: 0.0,
        failed=lambda f, what: failures.append((f, what)),
        done=lambda: None,
        cooperator=turns.cooperator,
    )

    def no_space(limit: int = 0) -> bool:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(beast, "resplit_step", no_space)
    fill_and_end_a_cycle(beast, 40)
    while turns.run_one():
        pass
    ((failure, what),) = failures
    assert disk_full(failure.value) and "re-splitting" in what


def test_a_stopped_resplit_is_done_again_on_open(tmp_path: Path) -> None:
    beast, turns, failures = open_beast(tmp_path), Turns(), []
    resplitter = Resplitter(
        beast,
        Stats(),
        lambda: 0.0,
        failed=lambda f, what: failures.append(f),
        done=lambda: None,
        cooperator=turns.cooperator,
    )
    popped = fill_and_end_a_cycle(beast, 40_000)
    turns.run_one()
    assert beast.resplitting
    resplitter.stop()
    while turns.run_one():
        pass
    assert not failures  # a stop is no failure
    position = beast.position
    beast.close()
    again = Beast(tmp_path, lambda d: 1, initial_queues=2, on_resplit=begun_on_open)
    again.open(read_past=position)
    assert again.resplitting  # begun again; the Resplitter of the next run runs it
    Resplitter(
        again,
        Stats(),
        lambda: 0.0,
        failed=lambda f, w: None,
        done=lambda: None,
        cooperator=turns.cooperator,
    )
    while turns.run_one():
        pass
    assert not again.resplitting
    while len(again):
        got = again.pop()
        if got is None:
            assert turns.run_one()  # a cycle ended: its re-split runs in turns
        else:
            popped.append(got)
    assert sorted(popped) == sorted((n % 4, b"u%d" % n) for n in range(40_000))
