"""Parked URLs survive close, reopen and kill -9 until replayed, and a parked file
deleted is damage (against a list model); the bench holds an origin's URLs exactly
until its back-off ends (against a dict model)."""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from irlscrapy.exceptions import DamagedState
from irlscrapy.scheduler.frontier.parking import Bench, ParkedStore, missing_parked
from irlscrapy.storage.recordfile import scan

ORIGINS = st.sampled_from(["http://a.example", "https://a.example", "http://b.example:8080"])


def test_parked_records_are_replayed_once_after_a_restart(tmp_path: Path) -> None:
    store = ParkedStore(tmp_path)
    assert store.open() == []
    for n in range(5):
        store.park(f"record-{n}".encode())
    store.close()  # the crawl ends with URLs parked

    rerun = ParkedStore(tmp_path)
    older = rerun.open()
    pushed: list[bytes] = []
    assert rerun.replay(pushed.append, older) == 5
    assert pushed == [f"record-{n}".encode() for n in range(5)]
    rerun.close()
    third = ParkedStore(tmp_path)
    assert third.open() == []  # replayed files are gone: nothing is queued twice
    third.close()


def test_a_hold_defers_replays_to_its_end(tmp_path: Path) -> None:
    """An idle agent holds replays: a retirement that ends meanwhile pushes nothing, and
    the end of the hold says a replay waits; a hold with nothing asked for says not."""
    store = ParkedStore(tmp_path)
    store.open()
    store.park(b"one")
    pushed: list[bytes] = []
    assert not store.hold(True)
    assert store.replay(pushed.append) == 0 and pushed == [] and store.count == 1
    assert store.replay_waits
    assert store.hold(False) and not store.replay_waits  # the caller replays now
    assert store.replay(pushed.append) == 1 and pushed == [b"one"]
    store.hold(True)
    assert not store.hold(False)
    store.close()


def test_a_retirement_that_ends_replays_the_current_generation(tmp_path: Path) -> None:
    store = ParkedStore(tmp_path)
    store.open()
    store.park(b"one")
    pushed: list[bytes] = []
    assert store.replay(pushed.append) == 1 and store.count == 0
    store.park(b"two")  # parked after the replay: kept for the next one
    assert store.replay(pushed.append) == 1
    assert pushed == [b"one", b"two"]
    assert store.replay(pushed.append) == 0
    store.close()


def test_a_parked_record_cut_short_by_a_kill_is_ignored(tmp_path: Path) -> None:
    store = ParkedStore(tmp_path)
    store.open()
    store.park(b"whole")
    store.park(b"torn-record")
    store.close()
    (path,) = tmp_path.glob("parked-*.rec")
    path.write_bytes(path.read_bytes()[:-3])
    rerun = ParkedStore(tmp_path)
    pushed: list[bytes] = []
    rerun.replay(pushed.append, rerun.open())
    assert pushed == [b"whole"]
    rerun.close()


def test_a_parked_file_deleted_before_its_replay_is_damage(tmp_path: Path) -> None:
    store = ParkedStore(tmp_path)
    store.open()
    store.park(b"waits")
    store.close()
    (path,) = tmp_path.glob("parked-*.rec")
    path.unlink()
    with pytest.raises(DamagedState, match=f"{path.name}: missing"):
        ParkedStore(tmp_path).open()


def test_parked_files_of_an_irlscrapy_that_kept_no_list_are_replayed(tmp_path: Path) -> None:
    store = ParkedStore(tmp_path)
    store.open()
    store.park(b"old")
    store.close()
    (tmp_path / "parked.json").unlink()
    rerun = ParkedStore(tmp_path)
    pushed: list[bytes] = []
    rerun.replay(pushed.append, rerun.open())
    assert pushed == [b"old"]
    rerun.close()


class Killed(Exception):
    """A kill -9 inside a replay, after some of its records were pushed."""


class ParkedMachine(RuleBasedStateMachine):
    """Every record parked is replayed at least once, more than once only if a kill cut
    a replay short, and never before it was parked; a directory left by close or kill
    -9 at any point is never damage."""

    @initialize()
    def start(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="irlscrapy-parked-"))
        self.pushed: Counter[bytes] = Counter()
        self.parked: list[bytes] = []
        self.cut_short = False  # a replay was killed midway: some records pushed twice
        self.serial = 0
        self.killed: list[ParkedStore] = []  # (their files are closed at teardown)
        self.store = self._open()

    def _open(self) -> ParkedStore:
        assert list(missing_parked(self.dir)) == []
        store = ParkedStore(self.dir)
        store.replay(self._push, store.open())
        return store

    def _push(self, record: bytes) -> None:
        self.pushed[record] += 1

    @rule()
    def park(self) -> None:
        record = f"r{self.serial}".encode()
        self.serial += 1
        self.store.park(record)
        self.parked.append(record)

    @rule(kill_after=st.none() | st.integers(0, 3))
    def replay(self, kill_after: int | None) -> None:
        pushed = 0

        def push(record: bytes) -> None:
            nonlocal pushed
            if kill_after is not None and pushed == kill_after:
                raise Killed
            pushed += 1
            self._push(record)

        try:
            self.store.replay(push)
        except Killed:
            self.cut_short = True
            self.killed.append(self.store)  # every append was flushed already
            self.store = self._open()

    @rule(killed=st.booleans())
    def reopen(self, killed: bool) -> None:
        if killed:
            self.killed.append(self.store)
        else:
            self.store.close()
        self.store = self._open()

    @invariant()
    def nothing_lost(self) -> None:
        if not hasattr(self, "store"):
            return
        waiting = Counter(
            record for path in self.dir.glob("parked-*.rec") for record in _read(path)
        )
        for record in self.parked:
            assert self.pushed[record] or waiting[record], record
            if not self.cut_short:
                assert self.pushed[record] + waiting[record] == 1, record

    def teardown(self) -> None:
        if hasattr(self, "store"):
            for store in [*self.killed, self.store]:
                store.close()
            shutil.rmtree(self.dir, ignore_errors=True)


def _read(path: Path) -> list[bytes]:
    return [record for _, record in scan(path)]


TestParked = ParkedMachine.TestCase
TestParked.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)


class BenchMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.bench = Bench()
        self.model: dict[str, tuple[float, list[int]]] = {}
        self.retired: dict[str, float] = {}
        self.now = 0.0
        self.counter = 0

    @rule(origin=ORIGINS, wait=st.floats(0.5, 20), urls=st.integers(0, 3))
    def hold(self, origin: str, wait: float, urls: int) -> None:
        items = [(0, self._next()) for _ in range(urls)]
        self.bench.hold(origin, self.now + wait, items)
        until, held = self.model.get(origin, (0.0, []))
        self.model[origin] = (max(until, self.now + wait), held + [i for _, i in items])

    @rule(origin=ORIGINS)
    def add(self, origin: str) -> None:
        item = self._next()
        added = self.bench.add_held(origin, 0, item)
        assert added == (origin in self.model)
        if added:
            self.model[origin][1].append(item)

    @rule(origin=ORIGINS, wait=st.floats(0.5, 20))
    def retire(self, origin: str, wait: float) -> None:
        self.bench.retire(origin, self.now + wait)
        self.retired[origin] = self.now + wait

    @rule(step=st.floats(0, 10))
    def advance(self, step: float) -> None:
        self.now += step
        released, ended = self.bench.release_due(self.now)
        expected = {o: held for o, (until, held) in self.model.items() if until <= self.now}
        assert {o: [i for _, i in items] for o, items in released} == expected
        for origin in expected:
            del self.model[origin]
        gone = [o for o, until in self.retired.items() if until <= self.now]
        assert ended == bool(gone)
        for origin in gone:
            del self.retired[origin]

    @invariant()
    def agrees(self) -> None:
        assert len(self.bench) == sum(len(held) for _, held in self.model.values())
        times = [until for until, _ in self.model.values()] + list(self.retired.values())
        assert self.bench.next_time() == (min(times) if times else None)
        for origin in ("http://a.example", "https://a.example", "http://b.example:8080"):
            assert self.bench.retired(origin, self.now) == (origin in self.retired)

    def _next(self) -> int:
        self.counter += 1
        return self.counter


TestBench = BenchMachine.TestCase
TestBench.settings = settings(max_examples=100, stateful_step_count=40, deadline=None)
