"""DRUM's disk cache: each bucket's keys as one sorted run in a flat file.

Theory of operation
-------------------
A bucket's cache is one file of fixed-size records sorted by key, no key twice, as in
IRLbot (seeds/003 section IV.C): a merge reads the bucket's run once, in segments of
``segment_keys`` records, and writes the merged run beside it in the same pass
(:class:`RunWriter`); the new run is renamed into place, then recorded in DRUM's
LevelDB. Nothing is rewritten in place, so a merge cut short leaves the old run whole
and is done again from it. Reads are plain ``read``/``pread`` calls, never a memory map:
no page of the store stays in the process's RSS after a merge or a lookup.

A point lookup (:meth:`RunStore.find`) needs the run's *index*: the key of every
:data:`INDEX_STRIDE`-th record, written at the run's end and held in RAM (8 bytes per
1,024 keys, 8 MB for a billion keys). It reads one stride of records with one ``pread``.
Lookups may run in one thread while a merge runs in another: each sees a bucket's old
run or its new one, whole (an old run's file stays open until its last reader is done).

Layout of ``runs/<bucket>-<gen>.run`` (little-endian; DO NOT CHANGE: part of DRUM
format version 2)::

    run     := records, index, footer
    records := n * (key: u64, [value])         sorted by key, unique
    index   := ceil(n / stride) * u64          the key of record 0, stride, 2 * stride ...
    footer  := n: u64, stride: u32, records_crc32: u32, index_crc32: u32, magic: b"DRUMRUN2"

``<gen>`` is the generation count the run holds: the merges of every generation below
it (a bucket's file keeps its name through the merges of generations it had no tuple
in). Which file is a bucket's run is recorded in the LevelDB (:data:`RUN_KEY`); any
other ``.run`` file is what a merge cut short left, deleted at open.

Damage: open checks each run's size, footer and index (checksummed), not its records,
which would mean reading the whole store; the records' checksum is checked by every
merge, which reads the run whole anyway, and by ``irlscrapy check``. A lookup may
therefore read a damaged record before the next merge or check finds it.
"""

from __future__ import annotations

import os
import struct
import weakref
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import numpy as np

from irlscrapy.exceptions import DamagedState

#: The runs' directory in a DRUM's.
RUNS = "runs"
#: One index entry per this many records.
INDEX_STRIDE = 1024
FOOTER = struct.Struct("<QIII8s")
MAGIC = b"DRUMRUN2"
#: LevelDB key prefix of a bucket's run: b"R" bucket: u32 (big-endian) -> gen: u64, n: u64
RUN_KEY = b"R"
_RUN = struct.Struct(">QQ")
_U32 = struct.Struct(">I")
_CHECK_BYTES = 1 << 24  # bytes read at a time when a run is checked whole


def run_record(value_dtype: np.dtype[Any] | None) -> np.dtype[Any]:
    """A run's record: the key, and the value if the DRUM keeps one."""
    fields = [("key", "<u8")]
    if value_dtype is not None:
        fields.append(("value", value_dtype.str))
    return np.dtype(fields)


def run_key(bucket: int) -> bytes:
    return RUN_KEY + _U32.pack(bucket)


def encode_run(gen: int, n: int) -> bytes:
    return _RUN.pack(gen, n)


def recorded_runs(directory: Path, db: Any) -> dict[int, tuple[Path, int]]:
    """Each bucket's run as the LevelDB ``db`` records it: its path and record count."""
    found = {}
    for key, raw in db.iterator(prefix=RUN_KEY):
        gen, n = _RUN.unpack(raw)
        bucket = _U32.unpack(key[1:])[0]
        found[bucket] = (run_path(directory, bucket, gen), n)
    return found


def run_path(directory: Path, bucket: int, gen: int) -> Path:
    return directory / f"{bucket}-{gen}.run"


class Footer(NamedTuple):
    n: int
    stride: int
    records_crc: int
    index_crc: int


class RunFile:
    """An open run: its file descriptor, record count and index. The descriptor is
    closed when the last reference goes (a lookup in another thread may still hold the
    run a merge has just replaced)."""

    def __init__(self, path: Path, record: np.dtype[Any], n: int) -> None:
        self.path = path
        self.record = record
        try:
            self.fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise DamagedState(path, f"missing: the {n} keys of its bucket are lost") from None
        self._closer = weakref.finalize(self, os.close, self.fd)
        try:
            self.footer = read_footer(path, self.fd, record, n)
            index_bytes = _index_length(n) * 8
            raw = os.pread(self.fd, index_bytes, n * record.itemsize)
            if len(raw) != index_bytes or zlib.crc32(raw) != self.footer.index_crc:
                raise DamagedState(path, "its index is damaged: the keys in it are lost")
            self.index = np.frombuffer(raw, "<u8").astype(np.uint64)
        except BaseException:
            self.close()
            raise

    @property
    def n(self) -> int:
        return self.footer.n

    def close(self) -> None:
        self._closer()

    def find(self, key: int) -> np.void | None:
        """``key``'s record, None if the run has no such key. One ``pread``."""
        at = int(np.searchsorted(self.index, np.uint64(key), side="right")) - 1
        if at < 0:
            return None
        first = at * INDEX_STRIDE
        count = min(INDEX_STRIDE, self.n - first)
        size = self.record.itemsize
        raw = os.pread(self.fd, count * size, first * size)
        if len(raw) != count * size:
            raise DamagedState(self.path, "shorter than its footer says")
        records = np.frombuffer(raw, self.record)
        pos = int(np.searchsorted(records["key"], np.uint64(key)))
        if pos < count and int(records["key"][pos]) == key:
            return records[pos]
        return None


def _index_length(n: int) -> int:
    return -(-n // INDEX_STRIDE)


def run_size(n: int, record: np.dtype[Any]) -> int:
    """The bytes of a whole run of ``n`` records."""
    return n * record.itemsize + _index_length(n) * 8 + FOOTER.size


def read_footer(path: Path, fd: int, record: np.dtype[Any], n: int) -> Footer:
    """A run's footer, checked against its file's size and the ``n`` it was recorded
    with; DamagedState if they disagree."""
    size = os.fstat(fd).st_size
    if size != run_size(n, record):
        raise DamagedState(
            path,
            f"{size} bytes, but a run of {n} keys has {run_size(n, record)}: its keys are lost",
        )
    raw = os.pread(fd, FOOTER.size, size - FOOTER.size)
    found_n, stride, records_crc, index_crc, magic = FOOTER.unpack(raw)
    if magic != MAGIC or found_n != n or stride != INDEX_STRIDE:
        raise DamagedState(path, "its footer is damaged: its keys are lost")
    return Footer(found_n, stride, records_crc, index_crc)


class Segment(NamedTuple):
    records: np.ndarray  # sorted records of the run
    upper: int | None  # the first key of the next segment (None: the run's last)


def segments(run: RunFile | None, segment_keys: int, record: np.dtype[Any]) -> Iterator[Segment]:
    """A run's records, ``segment_keys`` at a time, read sequentially and checked
    against the run's checksum at the end (DamagedState then: nothing read is trusted
    until the caller has seen the whole run). An absent run is one empty segment."""
    if run is None or run.n == 0:
        yield Segment(np.empty(0, record), None)
        return
    crc = 0
    with open(run.path, "rb", buffering=0) as file:
        current = _read_records(file, run, min(segment_keys, run.n))
        crc = zlib.crc32(current.data, crc)
        left = run.n - len(current)
        while left:
            following = _read_records(file, run, min(segment_keys, left))
            crc = zlib.crc32(following.data, crc)
            left -= len(following)
            yield Segment(current, int(following["key"][0]))
            current = following
        if crc != run.footer.records_crc:
            raise DamagedState(run.path, "its checksum does not match: its keys are damaged")
        yield Segment(current, None)


def _read_records(file: BinaryIO, run: RunFile, count: int) -> np.ndarray:
    records = np.fromfile(file, run.record, count=count)
    if len(records) != count:
        raise DamagedState(run.path, "shorter than its footer says")
    return records


def damaged_runs(directory: Path, db: Any, record: np.dtype[Any]) -> dict[int, DamagedState]:
    """The recorded runs that are missing or damaged, by bucket: each read whole and
    checked (irlscrapy check and repair)."""
    found: dict[int, DamagedState] = {}
    for bucket, (path, n) in recorded_runs(directory, db).items():
        try:
            run = RunFile(path, record, n)
            try:
                for _ in segments(run, max(1, _CHECK_BYTES // record.itemsize), record):
                    pass  # (segments checks the checksum once it has read the run)
            finally:
                run.close()
        except DamagedState as damage:
            found[bucket] = damage
    return found


class RunWriter:
    """Writes a run in key order to ``<final>.tmp``; :meth:`finish` adds its index and
    footer and renames it to ``final``. Closed without finish, the temporary goes."""

    def __init__(self, final: Path, record: np.dtype[Any]) -> None:
        self.final = final
        self.record = record
        self.tmp = final.with_name(final.name + ".tmp")
        self._file: BinaryIO | None = open(self.tmp, "wb")  # noqa: SIM115 (closed by finish/abort)
        self.n = 0
        self._crc = 0
        self._index: list[np.ndarray] = []

    def append(self, records: np.ndarray) -> None:
        assert self._file is not None
        if not len(records):
            return
        self._index.append(records["key"][(-self.n) % INDEX_STRIDE :: INDEX_STRIDE].copy())
        self._crc = zlib.crc32(records.data, self._crc)
        # file.write, not ndarray.tofile: a short write (a full disk) raises OSError
        self._file.write(records.data)
        self.n += len(records)

    def finish(self) -> int:
        """Index, footer, rename; return the run's record count."""
        assert self._file is not None
        index = np.concatenate(self._index) if self._index else np.empty(0, np.uint64)
        raw = index.astype("<u8").tobytes()
        self._file.write(raw)
        self._file.write(FOOTER.pack(self.n, INDEX_STRIDE, self._crc, zlib.crc32(raw), MAGIC))
        self._file.close()
        self._file = None
        os.replace(self.tmp, self.final)
        return self.n

    def abort(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            self.tmp.unlink(missing_ok=True)


class RunStore:
    """The runs of a DRUM's buckets, as its LevelDB records them (see the module
    docstring). :meth:`install` is the one way a run changes."""

    def __init__(self, directory: Path, db: Any, record: np.dtype[Any], segment_keys: int) -> None:
        self.directory = directory
        self.db = db
        self.record = record
        self.segment_keys = segment_keys
        self._runs: dict[int, RunFile] = {}

    def open(self) -> int:
        """Open every recorded run (checking its size, footer and index) and delete what
        a merge cut short left; return the number of keys stored."""
        self.directory.mkdir(exist_ok=True)
        recorded = recorded_runs(self.directory, self.db)
        for bucket, (path, n) in recorded.items():
            self._runs[bucket] = RunFile(path, self.record, n)
        names = {path.name for path, _ in recorded.values()}
        for path in self.directory.iterdir():
            if path.name not in names and path.is_file():
                path.unlink()
        return sum(run.n for run in self._runs.values())

    def close(self) -> None:
        for run in self._runs.values():
            run.close()
        self._runs.clear()

    def segments(self, bucket: int) -> Iterator[Segment]:
        return segments(self._runs.get(bucket), self.segment_keys, self.record)

    def writer(self, bucket: int, gen: int) -> RunWriter:
        return RunWriter(run_path(self.directory, bucket, gen), self.record)

    def install(self, bucket: int, gen: int, n: int, also: dict[bytes, bytes]) -> int:
        """Make the run a writer has just finished (``gen``, ``n`` records) ``bucket``'s:
        record it, with ``also``, in one LevelDB transaction, then delete the run it
        replaces (a kill -9 between leaves that one unrecorded: deleted at open). Return
        the change in the number of keys."""
        new = RunFile(run_path(self.directory, bucket, gen), self.record, n)
        with self.db.write_batch(transaction=True) as wb:
            wb.put(run_key(bucket), encode_run(gen, n))
            for key, value in also.items():
                wb.put(key, value)
        old = self._runs.get(bucket)
        self._runs[bucket] = new
        if old is None:
            return n
        old.path.unlink()
        return n - old.n

    def find(self, bucket: int, key: int) -> np.void | None:
        run = self._runs.get(bucket)  # one read: a merge may replace it meanwhile
        return None if run is None else run.find(key)

    def all_segments(self) -> Iterator[np.ndarray]:
        """Every bucket's records, in key order, a segment at a time."""
        for bucket in sorted(self._runs):
            for segment in self.segments(bucket):
                if len(segment.records):
                    yield segment.records
