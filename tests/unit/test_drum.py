"""The DRUM engine against a trivially correct model (a dict applied in arrival order)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from irlscrapy.exceptions import ConfigurationError, DirectoryLocked, DrumFormatError
from irlscrapy.storage.drum import CHECK, CHECK_UPDATE, DRUM, UPDATE
from irlscrapy.storage.recordfile import MAGIC
from tests.strategies import combined

KEYS = st.integers(0, 2**64 - 1) | st.sampled_from([0, 1, 2, 2**63, 2**64 - 1, 12345])
OPS = st.sampled_from([CHECK, UPDATE, CHECK_UPDATE])


class DrumMachine(RuleBasedStateMachine):
    """Submit, merge, read results, acknowledge, close and reopen, in any order."""

    @initialize(
        buckets=st.sampled_from([1, 2, 8]),
        bucket_bytes=st.sampled_from([1, 64, 10**6]),
        segment_keys=st.sampled_from([1, 3, 1000]),
        valued=st.booleans(),
        combine=st.sampled_from(["add", "overwrite", "first"]),
    )
    def setup(
        self, buckets: int, bucket_bytes: int, segment_keys: int, valued: bool, combine: str
    ) -> None:
        self.dir = Path(tempfile.mkdtemp())
        self.kwargs = {
            "buckets": buckets,
            "bucket_bytes": bucket_bytes,
            "segment_keys": segment_keys,
            "spill_bytes": 64,
            "value_dtype": "<i8" if valued else None,
            "combine": combine,
        }
        self.valued, self.combine = valued, combine
        self.drum = DRUM(self.dir, **self.kwargs)  # type: ignore[arg-type]
        self.drum.open()
        self.model: dict[int, int] = {}
        self.submitted: list[tuple[int, list[tuple[int, int, int, bytes]]]] = []
        self.expected: dict[int, tuple[list[bool], list[int], list[bytes]]] = {}
        self.received: dict[int, tuple[list[bool], list[int], list[bytes]]] = {}
        self.acked = 0
        self.next_seq = 1

    def teardown(self) -> None:
        self.drum.close()
        shutil.rmtree(self.dir)

    @rule(
        batch=st.lists(st.tuples(KEYS, OPS, st.integers(-9, 9), st.binary(max_size=5)), max_size=12)
    )
    def submit(self, batch: list[tuple[int, int, int, bytes]]) -> None:
        seq = self.drum.submit(
            [k for k, _, _, _ in batch],
            np.array([o for _, o, _, _ in batch], np.uint8),
            [v for _, _, v, _ in batch] if self.valued else None,
            [a for _, _, _, a in batch],
        )
        assert seq == self.next_seq
        self.next_seq += 1
        self.submitted.append((seq, batch))

    @rule()
    def merge(self) -> None:
        self.drum.merge()
        for seq, batch in self.submitted:  # everything submitted is now merged
            unique, values = [], []
            for key, op, v, _ in batch:
                unique.append(key not in self.model)
                if op & UPDATE:
                    old = self.model.get(key)
                    self.model[key] = combined(old, v, self.combine) if self.valued else 0
                values.append(self.model.get(key, 0))
            self.expected[seq] = (unique, values, [a for _, _, _, a in batch])
        self.submitted.clear()
        self.read_results()

    def read_results(self) -> None:
        for result in self.drum.results():
            assert result.seq > self.acked and result.seq in self.expected
            self.received[result.seq] = (
                result.unique.tolist(),
                result.values.tolist() if result.values is not None else [],
                list(result.aux or []),
            )

    @precondition(lambda self: self.received)
    @rule(data=st.data())
    def ack(self, data: st.DataObject) -> None:
        seq = data.draw(st.sampled_from(sorted(self.received)))
        self.drum.ack(seq)
        self.acked = max(self.acked, seq)
        for s in [s for s in self.received if s <= seq]:
            del self.received[s]

    @rule()
    def reopen(self) -> None:
        self.drum.close()
        self.drum = DRUM(self.dir, **self.kwargs)  # type: ignore[arg-type]
        self.drum.open()
        self.received.clear()
        self.read_results()  # unacknowledged batches come back
        assert set(self.received) == {s for s in self.expected if s > self.acked}

    @invariant()
    def results_match_the_model(self) -> None:
        for seq, (unique, values, aux) in self.received.items():
            exp_unique, exp_values, exp_aux = self.expected[seq]
            assert unique == exp_unique, seq
            assert aux == exp_aux, seq
            if self.valued:
                assert values == exp_values, seq

    @precondition(lambda self: not self.submitted)  # everything submitted is merged
    @rule(data=st.data())
    def lookup(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from([*self.model, 0, 2**64 - 1]))
        found = self.drum.lookup(key)
        assert self.drum.contains(key) == (key in self.model)
        if key not in self.model:
            assert found is None
        else:
            assert found == (self.model[key] if self.valued else 0)

    @invariant()
    def stored_key_count_matches(self) -> None:
        if not self.submitted:
            assert self.drum.stored_keys == len(self.model)


TestDrumStateful = DrumMachine.TestCase
TestDrumStateful.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)


class TestFiles:
    def test_a_second_process_gets_a_clear_lock_error(self, tmp_path: Path) -> None:
        first = DRUM(tmp_path)
        first.open()
        try:
            with pytest.raises(DirectoryLocked, match=f"{tmp_path} is locked by process"):
                DRUM(tmp_path).open()
        finally:
            first.close()
        with DRUM(tmp_path):  # free again after close
            pass

    def test_reopening_with_other_settings_is_refused(self, tmp_path: Path) -> None:
        drum = DRUM(tmp_path, buckets=4)
        drum.open()
        drum.close()
        with pytest.raises(DrumFormatError, match="open it with the same settings"):
            DRUM(tmp_path, buckets=8).open()

    def test_truncated_trailing_journal_record_is_ignored(self, tmp_path: Path) -> None:
        drum = DRUM(tmp_path)
        drum.open()
        drum.submit([1, 2, 3], aux=[b"a", b"b", b"c"])
        drum.submit([4], aux=[b"d"])
        drum.close()
        journal = next(tmp_path.glob("journal-*.rec"))
        with open(journal, "r+b") as f:
            f.truncate(journal.stat().st_size - 3)  # a crash in the middle of the append
        drum = DRUM(tmp_path)
        drum.open()
        drum.merge()
        (batch,) = list(drum.results())
        assert batch.seq == 1 and batch.unique.tolist() == [True, True, True]
        assert drum.submit([4]) == 2  # the torn batch's number is free again
        drum.close()
        assert journal.read_bytes().startswith(MAGIC)

    @pytest.mark.parametrize("kwargs", [{"buckets": 3}, {"combine": "max"}, {"segment_keys": 0}])
    def test_bad_configuration_is_explained(
        self, tmp_path: Path, kwargs: dict[str, object]
    ) -> None:
        with pytest.raises(ConfigurationError):
            DRUM(tmp_path, **kwargs)  # type: ignore[arg-type]

    def test_acknowledged_generations_leave_no_files(self, tmp_path: Path) -> None:
        drum = DRUM(tmp_path, buckets=2)
        drum.open()
        seq = drum.submit(np.arange(1000, dtype=np.uint64) * 7919)
        drum.merge()
        assert [b.seq for b in drum.results()] == [seq]
        drum.ack(seq)
        assert not list(tmp_path.glob("results-*")) and not list(tmp_path.glob("buckets-*"))
        assert [p.name for p in tmp_path.glob("journal-*")] == [f"journal-{1}.rec"]  # open one
        drum.close()
