"""DRUM's disk cache as sorted runs (irlscrapy.storage.drumcache): written and read
back, found damaged at open, at a merge, by check and by repair, what a merge cut short
left deleted, and a format 1 DRUM (chunks in LevelDB) upgraded at open."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from irlscrapy.exceptions import DamagedState, DrumFormatError
from irlscrapy.storage import drumcache, drumfiles, drumupgrade
from irlscrapy.storage.cachedb import open_leveldb
from irlscrapy.storage.drum import DRUM
from irlscrapy.storage.recordfile import RecordWriter

KEYS_ONLY = drumcache.run_record(None)
VALUED = drumcache.run_record(np.dtype("<u8"))


def _write_run(path: Path, keys: np.ndarray, record: np.dtype = KEYS_ONLY) -> drumcache.RunFile:
    writer = drumcache.RunWriter(path, record)
    records = np.empty(len(keys), record)
    records["key"] = keys
    if "value" in (record.names or ()):
        records["value"] = keys * np.uint64(3)
    for start in range(0, len(keys), 700):  # appends that straddle index strides
        writer.append(records[start : start + 700])
    return drumcache.RunFile(path, record, writer.finish())


@settings(max_examples=30, deadline=None)
@given(
    keys=st.sets(st.integers(0, 2**64 - 1), max_size=3000),
    probes=st.lists(st.integers(0, 2**64 - 1), max_size=20),
    segment_keys=st.sampled_from([1, 7, 1024, 5000]),
)
def test_a_run_reads_back_what_was_written(
    tmp_path_factory: pytest.TempPathFactory, keys: set[int], probes: list[int], segment_keys: int
) -> None:
    path = tmp_path_factory.mktemp("run") / "0-1.run"
    written = np.array(sorted(keys), dtype=np.uint64)
    run = _write_run(path, written, VALUED)
    try:
        segments = list(drumcache.segments(run, segment_keys, VALUED))
        read = np.concatenate([s.records for s in segments])
        assert read["key"].tolist() == written.tolist()
        assert (read["value"] == written * np.uint64(3)).all()
        uppers = [s.upper for s in segments]
        assert uppers[-1] is None
        assert uppers[:-1] == [int(s.records["key"][0]) for s in segments[1:]]
        for key in [*probes, *written[:: max(1, len(written) // 20)].tolist()]:
            record = run.find(key)
            assert (record is not None) == (key in keys)
            if record is not None:
                assert int(record["value"]) == key * 3 % 2**64
    finally:
        run.close()


def _filled(path: Path, keys: int = 5000, buckets: int = 2) -> None:
    with DRUM(path, buckets=buckets, segment_keys=512) as drum:
        drum.submit(np.arange(keys, dtype=np.uint64) * np.uint64(2**51 + 7))
        drum.merge()
        drum.ack_merged()


def _runs(path: Path) -> list[Path]:
    return sorted((path / drumcache.RUNS).glob("*.run"))


def test_a_run_cut_short_is_damage_at_open_and_check(tmp_path: Path) -> None:
    _filled(tmp_path)
    run = _runs(tmp_path)[0]
    with open(run, "r+b") as file:
        file.truncate(run.stat().st_size - 1)
    with pytest.raises(DamagedState, match=run.name):
        DRUM(tmp_path, buckets=2).open()
    assert [d.path for d in drumfiles.inspect(tmp_path)] == [run]


def test_a_flipped_byte_is_found_by_check_and_by_the_next_merge(tmp_path: Path) -> None:
    _filled(tmp_path)
    run = _runs(tmp_path)[0]
    with open(run, "r+b") as file:
        file.seek(100)
        byte = file.read(1)
        file.seek(100)
        file.write(bytes([byte[0] ^ 1]))
    [damage] = drumfiles.inspect(tmp_path)
    assert damage.path == run and "checksum" in damage.problem
    with DRUM(tmp_path, buckets=2, segment_keys=512) as drum:  # the footer is whole
        drum.submit([0, 2**63 - 1])  # a tuple in each bucket
        with pytest.raises(DamagedState, match="checksum"):
            drum.merge()
    assert _runs(tmp_path)[0] == run, "the damaged run is still the bucket's"


def test_repair_drops_a_damaged_run_and_the_drum_opens(tmp_path: Path) -> None:
    _filled(tmp_path)
    damaged, whole = _runs(tmp_path)
    damaged.unlink()
    with pytest.raises(DamagedState, match="missing"):
        DRUM(tmp_path, buckets=2).open()
    done = drumfiles.mend(tmp_path)
    assert any(str(damaged) in line for line in done)
    assert drumfiles.inspect(tmp_path) == []
    with DRUM(tmp_path, buckets=2) as drum:
        kept = whole.stat().st_size
        assert 0 < drum.stored_keys < 5000 and kept > 0
        assert drum.contains(4999 * (2**51 + 7) % 2**64)  # bucket 1's keys are kept


def test_what_a_merge_cut_short_left_is_deleted_at_open(tmp_path: Path) -> None:
    _filled(tmp_path)
    runs = tmp_path / drumcache.RUNS
    (runs / "0-9.run").write_bytes(b"a run renamed in, never recorded")
    (runs / "1-9.run.tmp").write_bytes(b"a run being written")
    with DRUM(tmp_path, buckets=2) as drum:
        assert drum.stored_keys == 5000
    assert sorted(p.name for p in runs.iterdir()) == ["0-1.run", "1-1.run"]


def test_a_merge_replaces_each_run_it_changes_and_leaves_a_checked_one(tmp_path: Path) -> None:
    _filled(tmp_path)
    with DRUM(tmp_path, buckets=2, segment_keys=512) as drum:
        drum.submit([3], 1)  # CHECK only: the run stays as it was
        drum.merge()
        assert [p.name for p in _runs(tmp_path)] == ["0-1.run", "1-1.run"]
        drum.submit([5])  # an update in bucket 0
        drum.merge()
        assert [p.name for p in _runs(tmp_path)] == ["0-4.run", "1-1.run"]  # generation 3, merged
        assert drum.stored_keys == 5001 and drum.contains(5) and not drum.contains(6)


@pytest.mark.skipif(sys.platform != "linux", reason="/proc/self/maps: Linux")
def test_no_file_of_the_store_stays_mapped_after_a_merge_or_lookups(tmp_path: Path) -> None:
    """A merge reads the whole store, and lookups read its runs: none of it may stay
    in the process's RSS as mapped pages (format 1's LevelDB tables did)."""
    with DRUM(tmp_path, buckets=4) as drum:
        rng = np.random.default_rng(7)
        keys = rng.integers(0, 2**63, 1_000_000, dtype=np.uint64)
        for part in np.array_split(keys, 2):
            drum.submit(part)
            drum.merge()
            drum.ack_merged()
        assert all(drum.contains(int(k)) for k in keys[::10_007])
        maps = Path("/proc/self/maps").read_text()
        assert str(tmp_path) not in maps


# -- format 1 -------------------------------------------------------------------------------
def _format_1(path: Path, config: bytes, chunks: list[tuple[int, np.ndarray]]) -> None:
    """A format 1 DRUM's files, as that version wrote them: generation 0 merged and
    acknowledged, generation 1 open and empty, each bucket's keys in chunks (values: 3
    times the key)."""
    writer = RecordWriter(path / "journal-1.rec")
    writer.open()
    writer.close()
    db = open_leveldb(path / "cache", compression=None)
    db.put(b"Mformat", b"1")
    db.put(b"Mconfig", config)
    db.put(b"Mmerged", struct.pack(">Q", 1))
    db.put(b"Mopen", struct.pack(">Q", 1))
    db.put(b"Mkeys", struct.pack(">Q", sum(len(keys) for _, keys in chunks)))
    for bucket, keys in chunks:
        body = struct.pack("<I", len(keys)) + keys.astype("<u8").tobytes()
        body += (keys * np.uint64(3)).astype("<u8").tobytes()
        db.put(b"C" + struct.pack(">IQ", bucket, int(keys[0])), body)
    db.compact_range()  # the chunks in tables, as in a store that has run a while
    db.close()


VALUED_ADD = b'{"buckets": 2, "combine": "add", "value_dtype": "<u8"}'


def test_a_format_1_drum_is_upgraded_at_open(tmp_path: Path) -> None:
    low = np.arange(1, 3001, dtype=np.uint64)
    high = np.uint64(2**63) + np.arange(0, 10, dtype=np.uint64)
    _format_1(tmp_path, VALUED_ADD, [(0, low[:2000]), (0, low[2000:]), (1, high)])
    with DRUM(tmp_path, buckets=2, value_dtype="<u8", combine="add") as drum:
        assert drum.stored_keys == 3010
        assert drum.lookup(2500) == 7500 and drum.lookup(2**63 + 9) == (2**63 + 9) * 3 % 2**64
        assert drum.lookup(3001) is None
        drum.submit([2500, 4000], values=[1, 1])
        drum.merge()
        assert [b.values.tolist() for b in drum.results() if b.values is not None] == [[7501, 1]]
    db = open_leveldb(tmp_path / "cache", create=False)
    try:
        assert db.get(b"Mformat") == b"2"
        assert not list(db.iterator(prefix=b"C")) and db.get(b"Mkeys") is None
        assert db.get(drumupgrade.RECLAIM) is None, "the chunks' space is given back"
    finally:
        db.close()
    assert drumfiles.inspect(tmp_path) == []


def test_a_kill_in_the_upgrades_compaction_is_made_good_at_the_next_open(
    tmp_path: Path,
) -> None:
    keys = np.arange(1, 200_001, dtype=np.uint64)
    _format_1(tmp_path, VALUED_ADD, [(0, keys[i : i + 100_000]) for i in (0, 100_000)])
    db = open_leveldb(tmp_path / "cache", create=False)
    try:  # the upgrade's transaction, then a kill before its compaction
        drumupgrade.upgrade(db, tmp_path, tmp_path / drumcache.RUNS, VALUED, 1)
        assert db.get(drumupgrade.RECLAIM) is not None
        left = db.approximate_size(b"C", b"D")
        assert left > 1_000_000, "the chunks are still on disk"
    finally:
        db.close()
    with DRUM(tmp_path, buckets=2, value_dtype="<u8", combine="add") as drum:
        assert drum.stored_keys == 200_000 and drum.lookup(150_000) == 450_000
    db = open_leveldb(tmp_path / "cache", create=False)
    try:
        assert db.get(drumupgrade.RECLAIM) is None
        assert db.approximate_size(b"C", b"D") < max(left, 1) / 10
    finally:
        db.close()


def test_a_format_1_drum_with_a_merge_cut_short_is_refused(tmp_path: Path) -> None:
    _format_1(tmp_path, VALUED_ADD, [(0, np.arange(1, 10, dtype=np.uint64))])
    db = open_leveldb(tmp_path / "cache", create=False)
    db.put(b"A" + struct.pack(">QI", 1, 0), struct.pack(">Q", 5))  # applied below key 5
    db.close()
    with pytest.raises(DrumFormatError, match="cut short"):
        DRUM(tmp_path, buckets=2, value_dtype="<u8", combine="add").open()
