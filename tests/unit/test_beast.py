"""BEAST against a model that tracks every record in explicit per-slot lists."""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from irlscrapy.exceptions import ConfigurationError, DamagedState
from irlscrapy.scheduler.frontier import admitted
from irlscrapy.scheduler.frontier import beast as beast_module
from irlscrapy.scheduler.frontier.beast import Beast
from irlscrapy.star.budgets import UNLIMITED
from irlscrapy.state.check import check_state, repair_state

DOMAINS = st.integers(0, 5)


class Model:
    """Slots as lists; a record of x goes to the first slot of the window, not before x's
    last placement (per-domain FIFO), where x has fewer than B_x records."""

    def __init__(self, j: int, max_queues: int) -> None:
        self.j, self.max_queues = j, max_queues
        self.reading, self.cycle_end = 0, j
        self.slots: dict[int, list[tuple[int, bytes]]] = {}
        self.placed: dict[int, Counter[int]] = {}  # slot -> domain -> records placed
        self.last: dict[int, int] = {}  # domain -> slot of its last placement
        self.qf: list[tuple[int, bytes]] = []
        self.taken, self.budget_sum, self.placements = 0, 0, 0
        self.domains: set[int] = set()

    def next_j(self) -> int:
        """Doubled, but not past eq. 31 for the records taken (N), the distinct domains
        pushed (V) and the mean budget of the placements (E[B_x])."""
        mean_budget = self.budget_sum / self.placements if self.placements else 1.0
        alpha_n = self.taken / (mean_budget * max(1, len(self.domains)))
        eq31 = 2 ** (math.ceil(math.log2(alpha_n + 1)) - 1)
        return max(self.j, min(2 * self.j, self.max_queues, eq31))

    def push(self, domain: int, payload: bytes, budget: int) -> int | None:
        self.domains.add(domain)
        self.budget_sum += budget
        self.placements += 1
        first = max(self.reading + 1, self.last.get(domain, 0))
        for slot in range(first, self.reading + self.j):
            if self.placed.setdefault(slot, Counter())[domain] < budget:
                self.placed[slot][domain] += 1
                self.slots.setdefault(slot, []).append((domain, payload))
                self.last[domain] = slot
                return slot
        self.qf.append((domain, payload))
        return None

    def pop(self, budgets: dict[int, int]) -> tuple[int, bytes] | None:
        while self.slots_total() + len(self.qf):
            if self.slots.get(self.reading):
                self.taken += 1
                return self.slots[self.reading].pop(0)
            self.slots.pop(self.reading, None)
            self.reading += 1
            if self.reading >= self.cycle_end:
                self.j = self.next_j()
                self.cycle_end = self.reading + self.j
                old, self.qf = self.qf, []
                for domain, payload in old:
                    self.push(domain, payload, budgets.get(domain, 1))
        return None

    def slots_total(self) -> int:
        return sum(len(v) for v in self.slots.values())


def kill(beast: Beast) -> None:
    """What a kill -9 leaves: every append flushed, nothing else done (the files are
    closed without the work close() does)."""
    phase = beast._phase
    for writer in [*beast._writers.values(), beast._qf, phase and phase.pending]:
        if writer is not None:
            writer.close()
    if beast._reader is not None:
        beast._reader.close()


class BeastMachine(RuleBasedStateMachine):
    @initialize(j=st.integers(2, 4), extra=st.integers(0, 8))
    def setup(self, j: int, extra: int) -> None:
        self.dir = Path(tempfile.mkdtemp())
        self.budgets: dict[int, int] = {}
        self.beast = Beast(
            self.dir, lambda d: self.budgets.get(d, 1), initial_queues=j, max_queues=j + extra
        )
        self.beast.open()
        self.model = Model(j, j + extra)
        self.counter = 0

    def teardown(self) -> None:
        self.beast.close()
        shutil.rmtree(self.dir)

    @rule(domain=DOMAINS, budget=st.integers(1, 4))
    def set_budget(self, domain: int, budget: int) -> None:
        self.budgets[domain] = budget

    @rule(domain=DOMAINS)
    def push(self, domain: int) -> None:
        self.counter += 1
        payload = f"url-{self.counter}".encode()
        expected = self.model.push(domain, payload, self.budgets.get(domain, 1))
        assert self.beast.push(domain, payload) == expected

    @rule(domains=st.lists(DOMAINS, max_size=5))
    def push_many(self, domains: list[int]) -> None:
        """A URLseen batch's records: placed as one push each, written at once."""
        records = []
        for domain in domains:
            self.counter += 1
            records.append((domain, f"url-{self.counter}".encode()))
            self.model.push(domain, records[-1][1], self.budgets.get(domain, 1))
        self.beast.push_many(records)

    @rule()
    def pop(self) -> None:
        assert self.beast.pop() == self.model.pop(self.budgets)

    @rule(killed=st.booleans())
    def reopen(self, killed: bool) -> None:
        """A restart, after a close or a kill -9 (no close: state.json as it was last
        saved); the caller gives back the position of the last record it took."""
        position = self.beast.position
        if killed:
            kill(self.beast)
        else:
            self.beast.close()
        self.beast = Beast(
            self.dir,
            self.beast.budget_of,
            initial_queues=2,
            max_queues=self.beast.max_queues,
        )
        self.beast.open(read_past=position)
        if killed:
            # eq. 31's figures are saved with state.json, not at every pop or push: a
            # kill -9 forgets those since (j may then grow later, never sooner); nor is
            # a cycle end that re-split nothing (the cycle then ends sooner).
            model, beast = self.model, self.beast
            assert beast.taken <= model.taken
            assert beast.cycle_end <= model.cycle_end
            model.cycle_end = beast.cycle_end
            placement = beast.placement
            model.taken, model.budget_sum = beast.taken, placement.budget_sum
            model.placements, model.domains = placement.placed, set(beast.domains._exact or ())

    @invariant()
    def same_size(self) -> None:
        assert len(self.beast) == self.model.slots_total() + len(self.model.qf)
        assert self.beast.j == self.model.j

    @invariant()
    def records_are_the_queued_ones(self) -> None:
        """records() reads what is queued, none taken, and takes nothing (a handover)."""
        queued = [p for slot in self.model.slots.values() for _, p in slot]
        queued += [p for _, p in self.model.qf]
        assert Counter(self.beast.records()) == Counter(queued)


TestBeastStateful = BeastMachine.TestCase
TestBeastStateful.settings = settings(max_examples=150, stateful_step_count=60, deadline=None)


class SlicedBeastMachine(RuleBasedStateMachine):
    """A re-split in slices (``on_resplit``), driven by the caller between pushes and
    pops, across closes and kills -9 at any step: every record pushed is popped exactly
    once, and pop() returns None with records queued only while a re-split is in flight."""

    @initialize(j=st.integers(2, 3), extra=st.integers(0, 6), slice_=st.integers(1, 3))
    def setup(self, j: int, extra: int, slice_: int) -> None:
        # a slice of 1 to 3 records: pushes during a phase are a next phase's, or (at
        # most a slice) placed with it
        self.slice_before, beast_module.RESPLIT_SLICE = beast_module.RESPLIT_SLICE, slice_
        self.dir = Path(tempfile.mkdtemp())
        self.budgets: dict[int, int] = {}
        self.begun = 0  # phases begun (on_resplit calls)
        self.max_queues = j + extra
        self.beast = self._open(j)
        self.pushed: list[bytes] = []
        self.popped: set[bytes] = set()

    def _open(self, j: int = 2, position: tuple[int, int] | None = None) -> Beast:
        beast = Beast(
            self.dir,
            lambda d: self.budgets.get(d, 1),
            initial_queues=j,
            max_queues=self.max_queues,
            on_resplit=self._begun,
        )
        beast.open(read_past=position)
        return beast

    def _begun(self) -> None:
        self.begun += 1

    def teardown(self) -> None:
        beast_module.RESPLIT_SLICE = self.slice_before
        self.beast.close()
        shutil.rmtree(self.dir)

    @rule(domain=DOMAINS, budget=st.integers(1, 3))
    def set_budget(self, domain: int, budget: int) -> None:
        self.budgets[domain] = budget

    @rule(domain=DOMAINS, count=st.integers(1, 6), at_once=st.booleans())
    def push(self, domain: int, count: int, at_once: bool) -> None:
        records = []
        for _ in range(count):
            payload = f"url-{len(self.pushed)}".encode()
            self.pushed.append(payload)
            records.append((domain, payload))
        if at_once:
            self.beast.push_many(records)
        else:
            for record in records:
                self.beast.push(*record)

    @rule()
    def pop(self) -> None:
        available = self.beast.available()
        got = self.beast.pop()
        if got is None:
            assert not available or self.beast._phase is not None or not len(self.beast)
            return
        assert available
        assert got[1] not in self.popped, "popped twice"
        self.popped.add(got[1])

    @rule(records=st.integers(1, 5))
    def step(self, records: int) -> None:
        self.beast.resplit_step(records)

    @rule(killed=st.booleans())
    def reopen(self, killed: bool) -> None:
        position = self.beast.position
        if killed:
            kill(self.beast)
        else:
            self.beast.close()
        self.beast = self._open(position=position)

    @rule()
    def drain(self) -> None:
        """Pop everything, driving the re-splits as the scheduler does; what was pushed
        and not popped comes out, once (records() first: a handover reads the same)."""
        queued = Counter(self.beast.records())
        assert queued == Counter(set(self.pushed) - self.popped)
        while len(self.beast):
            got = self.beast.pop()
            if got is None:
                assert self.beast.resplit_step() or self.beast.available()
                continue
            assert got[1] not in self.popped, "popped twice"
            self.popped.add(got[1])
        assert self.popped == set(self.pushed)

    @invariant()
    def nothing_lost(self) -> None:
        assert len(self.beast) == len(self.pushed) - len(self.popped)


TestSlicedBeastStateful = SlicedBeastMachine.TestCase
TestSlicedBeastStateful.settings = settings(max_examples=200, stateful_step_count=80, deadline=None)


def test_a_resplit_in_slices_leaves_the_reader_on_its_slot_and_takes_pushes_after(
    tmp_path: Path,
) -> None:
    """QF re-split in slices of 3: the reader reads its slot on, pop() returns None
    once it is read, new pushes wait in the pending file, and a kill mid-phase is
    undone and the phase done again on open: each record comes out once."""
    begun: list[int] = []
    beast = Beast(tmp_path, lambda d: 1, initial_queues=2, on_resplit=lambda: begun.append(1))
    beast.open()
    pushed = [(d % 4, f"u{d}".encode()) for d in range(40)]  # 4 domains of budget 1
    for domain, payload in pushed:
        beast.push(domain, payload)
    assert beast.qf_records == 36 and len(beast) == 40
    popped = []
    while not begun:
        popped.append(beast.pop())  # slot 1 (4 records), then the cycle ends
    assert beast._phase is not None and beast.pop() is None and not beast.available()
    assert beast.resplit_step(3) and len(beast) == 36
    beast.push(9, b"late")
    assert (tmp_path / "pending-0.rec").stat().st_size > 8 and len(beast) == 37
    position = beast.position
    kill(beast)
    begun.clear()
    beast = Beast(tmp_path, lambda d: 1, initial_queues=2, on_resplit=lambda: begun.append(1))
    beast.open(read_past=position)
    assert begun and len(beast) == 37  # the phase begun again, with the late push
    while len(beast):
        got = beast.pop()
        if got is None:
            beast.resplit_step(3)
        else:
            popped.append(got)
    assert sorted(p for p in popped if p) == sorted([*pushed, (9, b"late")])
    assert not list(tmp_path.glob("pending-*")) and len(list(tmp_path.glob("qf-*"))) == 1


@pytest.mark.parametrize("journal_lost", [False, True])
@pytest.mark.parametrize("slices", [0, 1, 2, 5, 9, 14, 40])
def test_repair_rebuilds_a_lost_state_json_mid_resplit_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slices: int, journal_lost: bool
) -> None:
    """A kill -9 in a QF re-split of slices of 2 (``slices`` done, a push after each:
    pending files, later phases), then state.json lost (and the admitted journal too):
    one ``irlscrapy repair`` rebuilds it from the queue files, placing the pending files
    by a re-split begun on open, and every record pushed comes out (some may twice: the
    QF kept may share records with the slots)."""
    monkeypatch.setattr(beast_module, "RESPLIT_SLICE", 2)
    path = tmp_path / "beast"

    def opened() -> tuple[Beast, admitted.AdmittedJournal]:
        journal = admitted.AdmittedJournal(tmp_path)
        journal.open()
        beast = Beast(
            path,
            lambda d: 1,
            initial_queues=2,
            on_slot_read=journal.slot_read,
            on_resplit=lambda: None,
        )
        beast.open(read_past=journal.cursor)
        return beast, journal

    def take(beast: Beast, journal: admitted.AdmittedJournal) -> tuple[int, bytes] | None:
        got = beast.pop()
        if got is not None:
            journal.admit(*beast.position, *got)
        return got

    beast, journal = opened()
    pushed = [(d % 4, f"u{d}".encode()) for d in range(40)]
    beast.push_many(pushed)
    popped = []
    while (got := take(beast, journal)) is not None:  # slot 1; the cycle ends: a re-split
        popped.append(got)
    assert beast._phase is not None
    for i in range(slices):
        late = (9 + i % 3, f"late-{i}".encode())
        pushed.append(late)
        beast.push(*late)
        if not beast.resplit_step():
            break
    kill(beast)
    journal.close()
    (path / "state.json").unlink()
    if journal_lost:
        for segment in tmp_path.glob("admitted-*.rec"):
            segment.unlink()
    assert check_state(tmp_path), "a lost state.json is damage"
    assert any("state.json: rebuilt" in line for line in repair_state(tmp_path))
    assert check_state(tmp_path) == [], "one repair mends it all"
    beast, journal = opened()
    while len(beast):
        got = take(beast, journal)
        if got is None:
            assert beast.resplit_step() or beast.available()
            continue
        popped.append(got)
    beast.close()
    journal.close()
    assert set(popped) == set(pushed)
    assert not list(path.glob("pending-*")) and len(list(path.glob("qf-*"))) == 1


def test_everything_pushed_is_popped_once_and_spam_waits(tmp_path: Path) -> None:
    budgets = {1: 10, 2: 2}  # a popular domain and a low-budget one flooding the queues
    beast = Beast(tmp_path, lambda d: budgets[d], initial_queues=2, max_queues=16)
    beast.open()
    pushed = [(2, f"spam-{i}".encode()) for i in range(200)] + [
        (1, f"good-{i}".encode()) for i in range(20)
    ]
    for domain, payload in pushed:
        beast.push(domain, payload)
    popped = []
    while (item := beast.pop()) is not None:
        popped.append(item)
    beast.close()
    assert sorted(popped) == sorted(pushed)
    good_done = max(i for i, (d, _) in enumerate(popped) if d == 1)
    assert good_done < 40  # the good domain's 20 URLs are not stuck behind 200 spam URLs
    assert beast.qf_resplits >= 3


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 5), st.none()), max_size=300))
def test_unlimited_budgets_make_one_fifo_queue(steps: list[int | None]) -> None:
    """IRL_BUDGET_MODE = "off": records leave in the order they came, however pushes (a
    domain number) and pops (None) interleave."""
    with tempfile.TemporaryDirectory() as tmp:
        beast = Beast(tmp, lambda d: UNLIMITED, initial_queues=2, max_queues=16)
        beast.open()
        pushed, popped = [], []
        for n, step in enumerate(steps):
            if step is None:
                if (item := beast.pop()) is not None:
                    popped.append(item)
            else:
                pushed.append((step, str(n).encode()))
                beast.push(*pushed[-1])
        while (item := beast.pop()) is not None:
            popped.append(item)
        beast.close()
    assert popped == pushed
    assert beast.qf_records == 0


def test_bad_queue_counts_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="initial_queues"):
        Beast(tmp_path, lambda d: 1, initial_queues=1)


def _journaling(
    path: Path, journaled: list[tuple[int, int]], *, initial_queues: int, max_queues: int
) -> Beast:
    """A BEAST of budget 1 whose caller journals, as the scheduler does, the end of each
    slot read, ``(slot + 1, -1)``, in ``journaled`` (the caller's journal of positions)."""
    return Beast(
        path,
        lambda d: 1,
        initial_queues=initial_queues,
        max_queues=max_queues,
        on_slot_read=lambda slot: journaled.append((slot + 1, -1)),
    )


def test_a_resplit_cut_short_by_a_crash_is_undone_and_done_again(tmp_path: Path) -> None:
    journaled: list[tuple[int, int]] = []
    beast = _journaling(tmp_path, journaled, initial_queues=2, max_queues=64)
    beast.open()
    pushed = [(d % 3, f"u{d}".encode()) for d in range(60)]  # 3 domains: most go to QF
    for domain, payload in pushed:
        beast.push(domain, payload)
    assert beast.qf_records > 20
    popped = [beast.pop()]
    journaled.append(beast.position)
    real_store = beast._store  # what a re-split writes its placed records with
    stored = 0

    def crash_after_five(slot: int, records: list[bytes], *, flush: bool) -> None:
        nonlocal stored
        if stored >= 5:  # (some of the re-split's records written: a kill mid-slice)
            raise KeyboardInterrupt("kill -9")
        stored += len(records)
        real_store(slot, records, flush=flush)

    beast._store = crash_after_five  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        for _ in range(len(pushed)):
            popped.append(beast.pop())
            journaled.append(beast.position)
    kill(beast)
    resumed = Beast(tmp_path, lambda d: 1, initial_queues=2, max_queues=64)
    resumed.open(read_past=max(journaled))
    while (item := resumed.pop()) is not None:
        popped.append(item)
    resumed.close()
    assert sorted(x for x in popped if x is not None) == sorted(pushed)


def test_records_given_back_untaken_do_not_grow_j(tmp_path: Path) -> None:
    """Admission that pops the records of a full host and gives them back reads through
    queue after queue; j must not grow from that alone (it reached 1,024 within seconds,
    on a few hundred URLs, before eq. 31 bounded it)."""
    beast = Beast(tmp_path, lambda d: 10, initial_queues=2, max_queues=1024)
    beast.open()
    for i in range(300):
        beast.push(i % 3, f"u{i}".encode())
    for _ in range(20_000):
        popped = beast.pop()
        assert popped is not None
        beast.push(*popped, returned=True)
    assert beast.taken == 0
    assert beast.j == 2
    assert len(beast) == 300
    beast.close()


@pytest.mark.parametrize(("domains", "records"), [(1, 2_000), (8, 3_000), (50, 20_000)])
def test_j_stays_within_eq31_of_the_crawl(tmp_path: Path, domains: int, records: int) -> None:
    """j <= 2**(ceil(log2(alpha_N + 1)) - 1) with alpha_N = N / (E[B_x] V), N the records
    taken so far: the paper's eq. 31 for the crawl's own figures."""
    budget = 10
    beast = Beast(tmp_path, lambda d: budget, initial_queues=2, max_queues=1024)
    beast.open()
    for i in range(records):
        beast.push(i % domains, f"u{i}".encode())
    taken = 0
    while beast.pop() is not None:
        taken += 1
        bound = 2 ** (math.ceil(math.log2(taken / (budget * domains) + 1)) - 1)
        assert beast.j <= max(2, bound)
    assert taken == records
    beast.close()


def test_j_grown_at_a_cycle_end_with_an_empty_qf_survives_a_kill(tmp_path: Path) -> None:
    """A cycle end that re-splits nothing skips state.json, unless j grew: then j is
    saved, and a kill -9 right after does not take it back."""
    beast = Beast(tmp_path, lambda d: 1, initial_queues=2, max_queues=16)
    beast.open()
    for i in range(6):  # one domain, budget 1: each record in the next slot, QF empty
        beast.push(7, f"url-{i}".encode())
        assert beast.pop() == (7, f"url-{i}".encode())
    beast.push(7, b"last")
    assert beast.pop() == (7, b"last")  # the slot change ends a cycle: alpha_N = 6
    assert beast.qf_records == 0 and beast.qf_resplits == 0
    assert beast.j == 4
    position = beast.position
    kill(beast)
    reopened = Beast(tmp_path, lambda d: 1, initial_queues=2, max_queues=16)
    reopened.open(read_past=position)
    assert reopened.j == 4
    assert reopened.pop() is None
    reopened.close()


def _three_slots_and_qf(path: Path) -> Beast:
    """One domain of budget 1 in a window of 4: slots 1, 2 and 3 hold a record each,
    QF the rest; closed, so state.json lists the slots."""
    beast = Beast(path, lambda d: 1, initial_queues=4, max_queues=4)
    beast.open()
    for i in range(5):
        beast.push(7, f"u{i}".encode())
    assert sorted(p.name for p in path.glob("slot-*.rec")) == [
        "slot-1.rec",
        "slot-2.rec",
        "slot-3.rec",
    ]
    assert beast.qf_records == 2
    return beast


@pytest.mark.parametrize("missing", ["slot-1.rec", "slot-2.rec", "slot-3.rec", "qf-0.rec"])
def test_a_queue_file_deleted_while_its_urls_wait_is_damage(tmp_path: Path, missing: str) -> None:
    beast = _three_slots_and_qf(tmp_path)
    assert beast.pop() == (7, b"u0")  # slot 1 being read
    position = beast.position
    beast.close()
    (tmp_path / missing).unlink()
    with pytest.raises(DamagedState, match=f"{missing}: missing"):
        Beast(tmp_path, lambda d: 1, initial_queues=4, max_queues=4).open(read_past=position)


def test_slots_read_to_their_end_before_a_kill_are_not_damage(tmp_path: Path) -> None:
    """state.json is not saved at slot changes: after a kill -9 it still lists slots the
    reader had read to the end and deleted, whose ends the caller journaled."""
    beast = _three_slots_and_qf(tmp_path)
    beast.close()  # state.json lists slots 1, 2 and 3
    journaled: list[tuple[int, int]] = []
    beast = _journaling(tmp_path, journaled, initial_queues=4, max_queues=4)
    beast.open()
    for _ in range(2):
        beast.pop()
        journaled.append(beast.position)
    assert beast.pop() == (7, b"u2")  # slot 2 marked and deleted; killed before u2 was journaled
    assert not (tmp_path / "slot-2.rec").exists()
    assert journaled[-1] == (3, -1)
    kill(beast)
    reopened = Beast(tmp_path, lambda d: 1, initial_queues=4, max_queues=4)
    reopened.open(read_past=max(journaled))
    assert [reopened.pop() for _ in range(3)] == [(7, b"u2"), (7, b"u3"), (7, b"u4")]
    assert reopened.pop() is None
    reopened.close()


def test_a_slot_read_to_its_end_is_marked_before_its_file_goes(tmp_path: Path) -> None:
    """The caller hears of a slot read to its end while its file is still there, and
    the position moves past it; so does a slot whose records were all taken before a
    restart, when the reader leaves it."""
    marked: list[tuple[int, bool]] = []

    def on_slot_read(slot: int) -> None:
        marked.append((slot, (tmp_path / f"slot-{slot}.rec").exists()))

    beast = _three_slots_and_qf(tmp_path)
    beast.on_slot_read = on_slot_read
    assert beast.pop() == (7, b"u0")
    position = beast.position
    kill(beast)  # u0 taken, slot 1 not left yet
    reopened = Beast(tmp_path, lambda d: 1, initial_queues=4, max_queues=4)
    reopened.on_slot_read = on_slot_read
    reopened.open(read_past=position)
    assert reopened.pop() == (7, b"u1")
    assert marked == [(1, True)]
    assert reopened.position[0] == 2
    assert reopened.pop() == (7, b"u2")
    assert marked == [(1, True), (2, True)]
    reopened.close()


def test_a_read_slot_left_unmarked_by_an_older_irlscrapy_is_marked_on_open(tmp_path: Path) -> None:
    """A state.json written before slots' ends were marked: the slot of the caller's
    position may be gone, read to its end; open marks it instead of calling it damage."""
    beast = _three_slots_and_qf(tmp_path)
    assert beast.pop() == (7, b"u0")
    position = beast.position
    beast.close()
    state = json.loads((tmp_path / "state.json").read_text())
    del state["ends_marked"]
    (tmp_path / "state.json").write_text(json.dumps(state))
    (tmp_path / "slot-1.rec").unlink()
    marked: list[int] = []
    reopened = Beast(
        tmp_path, lambda d: 1, initial_queues=4, max_queues=4, on_slot_read=marked.append
    )
    reopened.open(read_past=position)
    assert marked == [1]
    assert [reopened.pop() for _ in range(4)] == [(7, b"u1"), (7, b"u2"), (7, b"u3"), (7, b"u4")]
    reopened.close()
    assert json.loads((tmp_path / "state.json").read_text())["ends_marked"] is True
