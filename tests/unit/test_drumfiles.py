"""A DRUM's generation files checked on open, and mended (irlscrapy.storage.drumfiles):
a closed journal cut short, a journal missing from the run or the newest one deleted are
DamagedState naming the file; short bucket files are rebuilt; after ``mend`` the DRUM
opens and delivers the batches it kept."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from irlscrapy.exceptions import DamagedState
from irlscrapy.storage import drumfiles
from irlscrapy.storage.drum import DRUM


def _two_closed_generations(path: Path) -> None:
    """Generations 0 and 1 closed by merges (merged, not acknowledged), 2 open with a
    batch: what a crawl stopped between a merge and its delivery leaves."""
    with DRUM(path, buckets=2) as drum:
        drum.submit(np.arange(1, 6, dtype=np.uint64), aux=[b"a"] * 5)
        drum.submit(np.arange(6, 11, dtype=np.uint64), aux=[b"b"] * 5)
        drum.merge()
        drum.submit(np.arange(3, 9, dtype=np.uint64), aux=[b"c"] * 6)
        drum.merge()
        drum.submit(np.arange(20, 22, dtype=np.uint64), aux=[b"d"] * 2)


def _delivered(path: Path) -> list[tuple[int, list[int]]]:
    """(seq, keys marked new) of every batch the DRUM delivers after a merge."""
    with DRUM(path, buckets=2) as drum:
        drum.merge()
        return [(b.seq, b.keys[b.unique].tolist()) for b in drum.results()]


def test_an_undamaged_directory_reopens_and_delivers_everything(tmp_path: Path) -> None:
    _two_closed_generations(tmp_path)
    assert drumfiles.inspect(tmp_path) == []
    assert _delivered(tmp_path) == [
        (1, [1, 2, 3, 4, 5]),
        (2, [6, 7, 8, 9, 10]),
        (3, []),
        (4, [20, 21]),
    ]


def test_a_closed_journal_cut_short_is_damage(tmp_path: Path) -> None:
    _two_closed_generations(tmp_path)
    journal = drumfiles.journal_path(tmp_path, 0)
    os.truncate(journal, journal.stat().st_size - 10)
    with pytest.raises(DamagedState, match=r"journal-0\.rec: \d+ bytes, but it held \d+"):
        DRUM(tmp_path, buckets=2).open()
    assert [str(d.path) for d in drumfiles.inspect(tmp_path)] == [str(journal)]


def test_the_newest_journal_cut_short_is_a_crash_and_its_tail_is_cut(tmp_path: Path) -> None:
    _two_closed_generations(tmp_path)
    journal = drumfiles.journal_path(tmp_path, 2)
    os.truncate(journal, journal.stat().st_size - 3)
    assert drumfiles.inspect(tmp_path) == []
    assert [seq for seq, _ in _delivered(tmp_path)] == [1, 2, 3]  # batch 4 was torn


@pytest.mark.parametrize("gen", [1, 2])
def test_a_missing_journal_is_damage(tmp_path: Path, gen: int) -> None:
    """Generation 1 leaves a gap; 2, the newest, is known from Mopen."""
    _two_closed_generations(tmp_path)
    drumfiles.journal_path(tmp_path, gen).unlink()
    with pytest.raises(DamagedState, match=rf"journal-{gen}\.rec: missing"):
        DRUM(tmp_path, buckets=2).open()


def test_short_bucket_files_are_rebuilt(tmp_path: Path) -> None:
    """A merge killed after its partition: bucket files cut short are derived data."""
    _two_closed_generations(tmp_path)
    expected = _delivered(tmp_path)
    shutil.rmtree(tmp_path)
    _two_closed_generations(tmp_path)
    with DRUM(tmp_path, buckets=2, spill_bytes=1) as drum:  # (through bucket files)
        drum._partition(2)  # what a kill after the partition leaves
    bucket = next(p for p in drumfiles.buckets_dir(tmp_path, 2).glob("*.bin") if p.stat().st_size)
    os.truncate(bucket, bucket.stat().st_size - 1)
    assert _delivered(tmp_path) == expected


def test_mend_keeps_what_is_whole_and_the_drum_opens_again(tmp_path: Path) -> None:
    _two_closed_generations(tmp_path)
    journal = drumfiles.journal_path(tmp_path, 0)
    data = bytearray(journal.read_bytes())
    data[-5] ^= 0xFF  # the second batch of generation 0: its checksum fails
    journal.write_bytes(bytes(data))
    drumfiles.journal_path(tmp_path, 1).unlink()
    done = drumfiles.mend(tmp_path)
    assert any("journal-0.rec: kept its first 1 batches" in line for line in done), done
    assert any("journal-1.rec: missing" in line for line in done), done
    assert drumfiles.inspect(tmp_path) == []
    delivered = _delivered(tmp_path)
    # batch 1 again (its results rebuilt: new at first sight), then the open one's batch
    assert delivered == [(1, [1, 2, 3, 4, 5]), (4, [20, 21])]


def test_mend_passes_an_empty_generation_merged_and_not_acknowledged(tmp_path: Path) -> None:
    """A restart's empty generation, merged past by a later merge that the crawl's kill
    left unacknowledged, has no results file: nothing to mend there."""
    with DRUM(tmp_path, buckets=2) as drum:
        drum.submit([1, 2])
        drum.merge()
        drum.ack_merged()
    with DRUM(tmp_path, buckets=2) as drum:  # generation 1 closed empty by this open
        drum.submit([3])
        drum.merge()
    assert drumfiles.inspect(tmp_path) == []
    assert drumfiles.mend(tmp_path) == []
    with DRUM(tmp_path, buckets=2) as drum:
        assert [b.keys[b.unique].tolist() for b in drum.results()] == [[3]]
