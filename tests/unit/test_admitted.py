"""The admitted journal against a dict model, across segment changes, reopen and kill -9."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule

from irlscrapy.exceptions import DamagedState
from irlscrapy.scheduler.frontier.admitted import AdmittedJournal, journal_lost, read_cursor


class JournalMachine(RuleBasedStateMachine):
    ids = Bundle("ids")

    @initialize(ratio=st.integers(2, 4), minimum=st.integers(1, 6))
    def start(self, ratio: int, minimum: int) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="irlscrapy-admitted-"))
        self.ratio, self.minimum = ratio, minimum
        self.journal = self._journal()
        assert self.journal.open() == []
        self.live: dict[int, tuple[int, int, int, bytes]] = {}
        self.cursor: tuple[int, int] | None = None
        self.killed: list[AdmittedJournal] = []

    def _journal(self) -> AdmittedJournal:
        return AdmittedJournal(self.dir, segment_ratio=self.ratio, segment_min=self.minimum)

    @rule(
        target=ids,
        slot=st.integers(-1, 3),
        offset=st.integers(0, 1000),
        item=st.binary(max_size=12),
    )
    def admit(self, slot: int, offset: int, item: bytes) -> int:
        id_ = self.journal.admit(slot, offset if slot >= 0 else -1, 7, item)
        assert id_ not in self.live
        self.live[id_] = (slot, offset if slot >= 0 else -1, 7, item)
        if slot >= 0 and (self.cursor is None or (slot, offset) > self.cursor):
            self.cursor = (slot, offset)
        return id_

    @rule(later=st.integers(0, 1))
    def slot_read(self, later: int) -> None:
        """BEAST read the slot it is in (or a later one) to its end."""
        slot = (self.cursor[0] if self.cursor else 0) + later
        self.journal.slot_read(slot)
        self.cursor = (slot + 1, -1)

    @rule(step=st.integers(1, 50))
    def returned(self, step: int) -> None:
        """BEAST's next record went back to a later queue: the cursor moves past it."""
        slot, offset = self.cursor if self.cursor is not None else (0, -1)
        self.journal.returned(slot, offset + step)
        self.cursor = (slot, offset + step)

    @rule(id_=ids)
    def done(self, id_: int) -> None:
        self.journal.done(id_)  # twice for the same id: the second is a no-op
        self.live.pop(id_, None)

    @rule(killed=st.booleans())
    def reopen(self, killed: bool) -> None:
        if killed:  # a kill -9 closes nothing: every append was flushed already
            self.killed.append(self.journal)  # (its files are closed at teardown)
        else:
            self.journal.close()
        assert read_cursor(self.dir) == self.cursor  # (irlscrapy check's read, unchanged)
        self.journal = self._journal()
        got = {a.id: (a.slot, a.offset, a.domain, a.item) for a in self.journal.open()}
        assert got == self.live
        assert self.journal.cursor == self.cursor

    @invariant()
    def agrees(self) -> None:
        if hasattr(self, "journal"):
            assert len(self.journal) == len(self.live)
            assert len(list(self.dir.glob("admitted-*.rec"))) <= 4

    def teardown(self) -> None:
        if hasattr(self, "journal"):
            for journal in [*self.killed, self.journal]:
                journal.close()
            shutil.rmtree(self.dir, ignore_errors=True)


TestJournal = JournalMachine.TestCase
TestJournal.settings = settings(max_examples=300, stateful_step_count=80, deadline=None)


def test_files_stay_within_a_few_times_the_live_set(tmp_path: Path) -> None:
    """A long run with a steady live set: old segments are copied forward and deleted."""
    journal = AdmittedJournal(tmp_path, segment_ratio=4, segment_min=100)
    journal.open()
    live: list[int] = []
    for n in range(20_000):
        live.append(journal.admit(0, n, 1, b"x" * 40))
        if len(live) > 50:
            journal.done(live.pop(0))
    files = list(tmp_path.glob("admitted-*.rec"))
    assert len(files) <= 3
    assert sum(f.stat().st_size for f in files) < 3 * 4 * 100 * 70
    journal.close()
    reopened = AdmittedJournal(tmp_path, segment_ratio=4, segment_min=100)
    assert sorted(a.id for a in reopened.open()) == live
    assert reopened.cursor == (0, 19_999)
    reopened.close()


def test_a_journal_lost_beside_beasts_queues_is_damage(tmp_path: Path) -> None:
    """The frontier's first open creates segment 0 before BEAST's state.json, and the
    newest segment is never deleted: BEAST's queues without a segment lost the URLs
    that were in RAM."""
    queues = tmp_path / "beast" / "state.json"
    assert journal_lost(tmp_path, queues) is None  # a new state directory
    queues.parent.mkdir()
    queues.write_text("{}")
    lost = journal_lost(tmp_path, queues)
    assert isinstance(lost, DamagedState) and lost.path == tmp_path / "admitted-0.rec"
    journal = AdmittedJournal(tmp_path)
    journal.open()
    journal.close()
    assert journal_lost(tmp_path, queues) is None
