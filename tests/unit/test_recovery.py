"""What opening state mends after a kill -9 is counted and told once per kind
(irlscrapy.storage.recovery): a DRUM's torn journal is ``irl/recovered/torn_tail/<store>`` = 1
and one log line; two kinds are two stats and two lines; the same kind twice is one
line with its count. Collections nest, and outside one a recovery is logged at once."""

from __future__ import annotations

import json
import logging
import struct
from pathlib import Path

import numpy as np
import pytest

from harness.frontierfixture import Stats
from irlscrapy.scheduler.frontier.beast import Beast
from irlscrapy.storage import drumfiles
from irlscrapy.storage.cachedb import open_leveldb
from irlscrapy.storage.drum import DRUM
from irlscrapy.storage.recordfile import RecordWriter, repair
from irlscrapy.storage.recovery import Recoveries

#: a record's head that claims 100 bytes, and 3 of them: what a kill -9 mid-append leaves
TORN = struct.pack(">II", 100, 0) + b"abc"


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "irlscrapy.storage.recovery"]


def _torn_drum(path: Path) -> None:
    """A DRUM whose run was killed in the middle of appending a batch."""
    with DRUM(path, buckets=2) as drum:
        drum.submit(np.arange(1, 6, dtype=np.uint64))
    with drumfiles.journal_path(path, 0).open("ab") as journal:
        journal.write(TORN)


def _torn_record_file(path: Path) -> None:
    writer = RecordWriter(path)
    writer.open()
    writer.append(b"whole")
    writer.close()
    with path.open("ab") as f:
        f.write(TORN)


def _reopen(path: Path) -> None:
    """Open ``path`` for appends (its header only, if it is new), as a writer does."""
    writer = RecordWriter(path)
    writer.open()
    writer.close()


def _open_collecting(root: Path, *opens: object) -> Stats:
    """Run each ``open`` inside one collection, and publish it for the state dir ``root``."""
    recoveries = Recoveries()
    with recoveries.collect():
        for open_ in opens:
            open_()  # type: ignore[operator]
    stats = Stats()
    recoveries.publish(stats, root)
    return stats


def test_a_torn_journal_opened_by_a_drum_is_one_stat_and_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _torn_drum(tmp_path / "urlseen")
    drum = DRUM(tmp_path / "urlseen", buckets=2)
    with caplog.at_level(logging.INFO):
        stats = _open_collecting(tmp_path, drum.open)
    drum.close()
    assert stats.values == {"irl/recovered/torn_tail/urlseen": 1}
    [line] = _lines(caplog)
    assert "irl/recovered/torn_tail/urlseen = 1" in line
    assert "journal-0.rec (11 bytes)" in line


def test_two_kinds_are_two_stats_and_two_lines(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _torn_drum(tmp_path / "urlseen")
    (tmp_path / "beast").mkdir()
    _reopen(tmp_path / "beast" / "qf-0.rec")  # a first open killed before state.json
    drum = DRUM(tmp_path / "urlseen", buckets=2)
    beast = Beast(tmp_path / "beast", lambda domain: 1)
    with caplog.at_level(logging.INFO):
        stats = _open_collecting(tmp_path, drum.open, beast.open)
    drum.close()
    beast.close()
    assert stats.values == {
        "irl/recovered/torn_tail/urlseen": 1,
        "irl/recovered/first_open/beast": 1,
    }
    lines = _lines(caplog)
    assert len(lines) == 2
    assert "torn_tail/urlseen = 1" in lines[0] and "first_open/beast = 1" in lines[1]


def test_the_same_kind_twice_is_one_line_with_its_count(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first, second = tmp_path / "beast" / "slot-1.rec", tmp_path / "beast" / "slot-2.rec"
    first.parent.mkdir()
    _torn_record_file(first)
    _torn_record_file(second)
    with caplog.at_level(logging.INFO):
        stats = _open_collecting(tmp_path, lambda: _reopen(first), lambda: _reopen(second))
    assert stats.values == {"irl/recovered/torn_tail/beast": 2}
    [line] = _lines(caplog)
    assert "irl/recovered/torn_tail/beast = 2" in line and str(first) in line
    assert first.stat().st_size == second.stat().st_size  # both cut after "whole"


def test_short_bucket_files_are_a_recovery(tmp_path: Path) -> None:
    drum_dir = tmp_path / "star" / "edges"
    with DRUM(drum_dir, buckets=2) as drum:
        drum.submit(np.arange(1, 9, dtype=np.uint64))
        drum.merge()
        drum.submit(np.arange(5, 12, dtype=np.uint64))
    with DRUM(drum_dir, buckets=2, spill_bytes=1) as drum:  # (through bucket files)
        drum._partition(1)  # what a merge killed after its partition leaves
    buckets = drumfiles.buckets_dir(drum_dir, 1)
    bucket = next(p for p in buckets.glob("*.bin") if p.stat().st_size)
    bucket.write_bytes(bucket.read_bytes()[:-1])
    drum = DRUM(drum_dir, buckets=2)
    stats = _open_collecting(tmp_path, drum.open)
    drum.close()
    assert stats.values == {"irl/recovered/buckets_rebuilt/star": 1}
    assert not buckets.exists()  # (the next merge builds them again)


def test_a_numbered_file_of_the_state_directory_is_its_own_store(tmp_path: Path) -> None:
    _torn_record_file(tmp_path / "admitted-3.rec")
    stats = _open_collecting(tmp_path, lambda: repair(tmp_path / "admitted-3.rec"))
    assert stats.values == {"irl/recovered/torn_tail/admitted": 1}


def test_a_file_outside_the_state_directory_counts_under_its_kind_alone(tmp_path: Path) -> None:
    _torn_record_file(tmp_path / "elsewhere.rec")
    stats = _open_collecting(tmp_path / "job", lambda: repair(tmp_path / "elsewhere.rec"))
    assert stats.values == {"irl/recovered/torn_tail": 1}


def test_a_leveldb_whose_creation_was_cut_short_is_made_again(tmp_path: Path) -> None:
    cache = tmp_path / "dns" / "cache"
    cache.mkdir(parents=True)
    (cache / "LOCK").touch()  # what LevelDB writes first
    (cache / "MANIFEST-000001").touch()
    opened: list[object] = []
    stats = _open_collecting(tmp_path, lambda: opened.append(open_leveldb(cache)))
    opened[0].close()  # type: ignore[attr-defined]
    assert stats.values == {"irl/recovered/first_open/dns": 1}
    stats = _open_collecting(tmp_path, lambda: open_leveldb(cache).close())
    assert stats.values == {}  # whole now


def test_a_beast_resplit_cut_short_is_a_recovery(tmp_path: Path) -> None:
    first = Beast(tmp_path / "beast", lambda domain: 1)
    first.open()
    first.close()
    state_file = tmp_path / "beast" / "state.json"
    state = json.loads(state_file.read_text())
    state_file.write_text(json.dumps({**state, "resplit": {"slot_sizes": {}}}))
    beast = Beast(tmp_path / "beast", lambda domain: 1)
    stats = _open_collecting(tmp_path, beast.open)
    beast.close()
    assert stats.values == {"irl/recovered/resplit/beast": 1}


def test_a_first_open_is_no_recovery(tmp_path: Path) -> None:
    drum = DRUM(tmp_path / "urlseen", buckets=2)
    beast = Beast(tmp_path / "beast", lambda domain: 1)
    stats = _open_collecting(tmp_path, drum.open, beast.open)
    drum.close()
    beast.close()
    assert stats.values == {}


def test_collections_nest_and_the_outermost_publishes(tmp_path: Path) -> None:
    _torn_record_file(tmp_path / "parked-0.rec")
    outer, inner = Recoveries(), Recoveries()
    with outer.collect(), inner.collect():
        repair(tmp_path / "parked-0.rec")
    stats = Stats()
    inner.publish(stats, tmp_path)
    assert stats.values == {}
    outer.publish(stats, tmp_path)
    outer.publish(stats, tmp_path)  # (published once: the collection is then empty)
    assert stats.values == {"irl/recovered/torn_tail/parked": 1}


def test_outside_a_collection_a_recovery_is_logged_as_it_happens(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _torn_record_file(tmp_path / "parked-0.rec")
    with caplog.at_level(logging.INFO):
        repair(tmp_path / "parked-0.rec")
    [line] = _lines(caplog)
    assert line.startswith(f"{tmp_path / 'parked-0.rec'}: cut a torn last record")
    assert line.endswith("(11 bytes)")
