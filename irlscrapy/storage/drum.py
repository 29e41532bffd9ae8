"""DRUM: Disk Repository with Update Management (IRLbot, seeds/003 section IV.C-D).

Theory of operation
-------------------
A store of 64-bit keys, optionally with a fixed-width numeric value each. Tuples
``<key, op, value, aux>`` arrive in batches (:meth:`DRUM.submit`); ``op`` is check,
update or check+update (:mod:`irlscrapy.storage.drummerge` defines their meaning).
Nothing is looked up at submit time: a batch is appended to the *journal* of the
current *generation* and the call returns its sequence number. When the fullest of the
``k`` buckets (keys spread by their top bits) holds ``bucket_bytes`` of tuples, or when
the consumer asks (:meth:`DRUM.merge`, also the early flush when a crawl would
starve), the generation is closed and merged:

1. its journal is read once and its tuples are partitioned into ``k`` bucket files (in
   RAM if at most ``spill_bytes``: creating and deleting ``k`` files took a third of
   the merges of a young crawl, which merges often);
2. bucket by bucket, the tuples are sorted by (key, arrival) and merged in one pass
   against that bucket's part of the disk cache, one sorted run of records in a flat
   file (:mod:`irlscrapy.storage.drumcache`), read ``segment_keys`` at a time; the
   merged run is written beside it in the same pass and renamed into place, and each
   tuple's result lands in a result file at its arrival position;
3. :meth:`DRUM.results` hands out the results batch by batch in arrival order, each
   with its aux data (read back from the journal) and its sequence number.

RAM holds one bucket's tuples and one segment of its run at a time, whatever the size
of the cache, and the runs' indexes (8 bytes per 1,024 keys) for point lookups.
Each merge reads and writes the whole cache of the buckets it has tuples for: the
paper's design, whose cost Theorem 2 gives. Nothing of the cache is memory-mapped, so
none of it stays in RSS.

Files under the DRUM directory
------------------------------
::

    LOCK                 exclusive flock; holds the owner's pid (irlscrapy.storage.dirlock)
    cache/               LevelDB: the metadata below
    runs/<i>-<G>.run     bucket i's sorted run, holding generations below G (drumcache)
    journal-<G>.rec      generation G's batches (irlscrapy.storage.recordfile), one per record
    buckets-<G>/<i>.bin  generation G's tuples of bucket i (raw records; derived data)
    results-<G>.bin      generation G's results, one slot per tuple in arrival order

Journal records hold one batch each; their payload grammar is in
:mod:`irlscrapy.storage.drumjournal`.

LevelDB keys (big-endian integers; DO NOT CHANGE: format version 2)::

    b"Mformat"            -> b"2" (version 1 kept the cache as chunks in this LevelDB)
    b"Mconfig"            -> JSON of buckets, value dtype, combine (checked on open)
    b"Mmerged"            -> u64: generations below it are merged and delivered
    b"Macked"             -> u64: highest acknowledged batch sequence number
    b"Mopen"              -> u64: the generation taking submissions (drumfiles)
    b"Mreclaim"           -> an upgrade from format 1 left chunks to compact (drumupgrade)
    b"G" G                -> u64: closed generation G's journal length (drumfiles)
    b"P" G                -> generation G's bucket files are complete
    b"A" G i              -> b"done": bucket i of generation G is merged
    b"R" i                -> bucket i's run: its generation and key count (drumcache)

Crash semantics (kill -9 at any instant; the OS survives)
---------------------------------------------------------
- :meth:`submit` returns once the batch is in the journal (handed to the OS): a batch
  whose submit returned is never lost.
- A merge is idempotent. Bucket files are rebuilt unless ``P G`` says they are whole
  (a generation partitioned in RAM is partitioned again).
  A bucket's new run is renamed into place once whole and once its tuples' results are
  in the result file (a MAP_SHARED mapping: the page cache keeps them across a kill);
  then its record ``R i`` and its marker ``A G i`` are one LevelDB transaction, and the
  old run is deleted. A bucket cut short before that transaction is merged again from
  its old run, which nothing changed; after it, never again. So no tuple is applied
  twice.
- Results are kept until acknowledged. The consumer calls :meth:`ack` once its own
  write of the results is durable; after a restart :meth:`results` yields again every
  merged batch above the acknowledged sequence number, and the consumer skips those it
  already holds. So nothing marked seen is lost to its consumer, and nothing is applied
  twice.
- Power loss is not covered: nothing is fsynced.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import struct
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from irlscrapy.exceptions import ConfigurationError, DamagedState, DrumFormatError
from irlscrapy.storage import drumfiles, drumjournal, drummerge, faulthooks
from irlscrapy.storage.cachedb import open_leveldb
from irlscrapy.storage.dirlock import DirectoryLock
from irlscrapy.storage.drumcache import RUNS, RunStore, run_record
from irlscrapy.storage.drummerge import CHECK, CHECK_UPDATE, COMBINES, UPDATE, apply_sorted
from irlscrapy.storage.drumupgrade import reclaim, upgrade
from irlscrapy.storage.recordfile import RecordWriter

logger = logging.getLogger(__name__)

FORMAT_VERSION = b"2"
_U64 = struct.Struct(">Q")
_U32 = struct.Struct(">I")
_DONE = b"done"  # the marker of a merged bucket

__all__ = ["CHECK", "CHECK_UPDATE", "DRUM", "UPDATE", "DrumFormatError", "ResultBatch"]


@dataclass(frozen=True)
class ResultBatch:
    """The results of one submitted batch, in the order its tuples were submitted."""

    seq: int
    keys: np.ndarray  # uint64
    unique: np.ndarray  # bool: the key was absent when the tuple arrived
    values: np.ndarray | None
    aux: list[bytes] | None


class DRUM:
    """A DRUM store in one directory. See the module docstring.

    Invariants:
    *Every submitted tuple is merged exactly once, in arrival order.*
    *A result batch is delivered after its generation is merged, and again after each
    restart until it is acknowledged.*
    """

    def __init__(
        self,
        path: Path | str,
        *,
        buckets: int = 64,
        bucket_bytes: int = 4 << 20,
        segment_keys: int = 1 << 16,
        value_dtype: str | None = None,
        combine: str = "overwrite",
        spill_bytes: int = 16 << 20,
    ) -> None:
        if buckets < 1 or buckets & (buckets - 1):
            raise ConfigurationError(f"DRUM buckets={buckets}: must be a power of two >= 1")
        if combine not in COMBINES:
            raise ConfigurationError(f"DRUM combine={combine!r}: choose one of {COMBINES}")
        if bucket_bytes < 1 or segment_keys < 1 or spill_bytes < 1:
            raise ConfigurationError("DRUM sizes must be positive")
        self.path = Path(path)
        self.buckets = buckets
        self.bucket_bytes = bucket_bytes
        self.segment_keys = segment_keys  # records of a run read at a time in a merge
        self.spill_bytes = spill_bytes
        self.value_dtype = np.dtype(value_dtype) if value_dtype else None
        self.combine = combine
        self._shift = 64 - (buckets.bit_length() - 1)
        fields = [("key", "<u8"), ("tag", "<u8")]
        if self.value_dtype is not None:
            fields.append(("value", self.value_dtype.str))
        self._record = np.dtype(fields)
        self._run_record = run_record(self.value_dtype)
        self._lock = DirectoryLock(self.path, "DRUM")
        self._db: Any = None
        self._intake_lock = threading.Lock()
        self._journal: RecordWriter | None = None
        self._gen = 0  # the generation now taking submissions
        self._fill = np.zeros(buckets, dtype=np.int64)  # tuples per bucket, this generation
        self._next_seq = 1
        self._merged = 0
        self._acked = 0
        self._delivered = 0  # highest sequence number handed out by results()
        self._keys = 0
        self._generations: dict[int, drumfiles.Generation] = {}  # journals on disk
        self._runs: RunStore | None = None

    # -- lifecycle -----------------------------------------------------------------------
    def open(self) -> None:
        self._lock.acquire()
        try:
            started = any(self.path.glob("journal-*.rec"))  # a DRUM that has run before
            self._db = open_leveldb(
                self.path / "cache",
                create=not started,
                paranoid_checks=True,
                compression=None,
            )
            self._check_format()
            self._runs = RunStore(self.path / RUNS, self._db, self._run_record, self.segment_keys)
            self._keys = self._runs.open()
            self._merged = self._meta_int(b"Mmerged")
            self._acked = self._meta_int(b"Macked")
            self._delivered = self._acked
            gens = drumfiles.journal_generations(self.path, self._db)
            drumfiles.check_present(self._db, self.path, gens)
            for gen in gens:
                summary = drumfiles.read_generation(self._db, self.path, gen)
                self._generations[gen] = summary
                self._check_derived(gen, summary.tuples)
            self._next_seq = (
                max([self._acked, *(g.last_seq for g in self._generations.values())]) + 1
            )
            self._gen = max([self._merged, *(g + 1 for g in self._generations)])
            self._start_generation(self._gen)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the journal, the runs, the LevelDB and the lock, in that order; each of
        them even when one before it fails (whose error is raised after)."""
        journal, runs, db = self._journal, self._runs, self._db
        self._journal, self._runs, self._db = None, None, None
        with contextlib.ExitStack() as closing:  # runs its callbacks last in, first out
            closing.callback(self._lock.release)
            for store in (db, runs, journal):
                if store is not None:
                    closing.callback(store.close)

    def __enter__(self) -> DRUM:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_format(self) -> None:
        config = json.dumps(
            {
                "buckets": self.buckets,
                "combine": self.combine,
                "value_dtype": self.value_dtype.str if self.value_dtype else None,
            },
            sort_keys=True,
        ).encode()
        found = self._db.get(b"Mformat")
        if found is None:
            with self._db.write_batch(transaction=True) as wb:
                wb.put(b"Mformat", FORMAT_VERSION)
                wb.put(b"Mconfig", config)
            return
        if found not in (b"1", FORMAT_VERSION):
            raise DrumFormatError(
                f"{self.path} holds DRUM format {found!r}; this version "
                f"reads {FORMAT_VERSION!r}. Use a new directory."
            )
        stored = self._db.get(b"Mconfig")
        if stored != config:
            raise DrumFormatError(
                f"{self.path} was created with {stored.decode()}, not "
                f"{config.decode()}; open it with the same settings"
            )
        if found == b"1":
            logger.info("upgrading %s from DRUM format 1 to 2 (its cache becomes runs)", self.path)
            merged = self._meta_int(b"Mmerged")
            upgrade(self._db, self.path, self.path / RUNS, self._run_record, merged)
        reclaim(self._db)

    def _meta_int(self, name: bytes) -> int:
        raw = self._db.get(name)
        return _U64.unpack(raw)[0] if raw else 0

    # -- intake --------------------------------------------------------------------------
    def submit(
        self,
        keys: np.ndarray | Sequence[int],
        ops: int | np.ndarray = CHECK_UPDATE,
        values: np.ndarray | Sequence[int] | None = None,
        aux: Sequence[bytes] | None = None,
    ) -> int:
        """Queue a batch of tuples; return its sequence number. Durable on return."""
        keys = np.ascontiguousarray(keys, dtype=np.uint64)
        n = len(keys)
        op_array = drummerge.op_array(ops, n)
        if (values is None) != (self.value_dtype is None):
            raise ValueError("values are required exactly when the DRUM has a value dtype")
        if aux is not None and len(aux) != n:
            raise ValueError(f"{len(aux)} aux items for {n} keys")
        value_array = None
        if values is not None:
            value_array = np.ascontiguousarray(values, dtype=self.value_dtype)
        body = drumjournal.encode_body(keys, op_array, value_array, aux)
        fill = np.bincount(keys >> np.uint64(self._shift), minlength=self.buckets)
        with self._intake_lock:
            seq = self._next_seq
            self._next_seq += 1
            head = drumjournal.encode_head(seq, n, values is not None, aux is not None)
            assert self._journal is not None, "open() first"
            self._journal.append(b"".join([head, *body]))
            self._fill += fill
            summary = self._generations[self._gen]
            summary.tuples += n
            summary.last_seq = seq
        return seq

    def should_merge(self) -> bool:
        """True when the fullest bucket has reached bucket_bytes, or a generation closed
        before a restart still waits to be merged."""
        if any(self._merged <= g < self._gen for g in self._generations):
            return True
        return int(self._fill.max()) * self._record.itemsize >= self.bucket_bytes

    @property
    def batch_tuples(self) -> int:
        """Tuples that fill every bucket: about one batch between merges."""
        return self.buckets * self.bucket_bytes // self._record.itemsize

    @property
    def pending(self) -> int:
        """Tuples submitted and not merged yet."""
        return sum(s.tuples for g, s in self._generations.items() if g >= self._merged)

    @property
    def next_seq(self) -> int:
        """The sequence number the next submitted batch will get."""
        return self._next_seq

    @property
    def stored_keys(self) -> int:
        return self._keys

    def _start_generation(self, gen: int) -> None:
        self._journal = RecordWriter(drumfiles.journal_path(self.path, gen))
        self._journal.open()
        self._generations.setdefault(gen, drumfiles.Generation())
        self._db.put(b"Mopen", _U64.pack(gen))
        self._gen = gen
        self._fill[:] = 0

    # -- merge ---------------------------------------------------------------------------
    def merge(self) -> int:
        """Close the open generation and merge every closed one; return tuples merged.

        Safe to call from a worker thread while another thread submits: submissions go
        to the next generation. Results are then read with :meth:`results`.
        """
        with self._intake_lock:
            if self._generations[self._gen].last_seq:  # the open generation has batches
                assert self._journal is not None
                self._journal.close()
                closed = drumfiles.journal_path(self.path, self._gen)
                self._db.put(drumfiles.closed_key(self._gen), _U64.pack(closed.stat().st_size))
                self._start_generation(self._gen + 1)
        merged = 0
        for gen in sorted(self._generations):
            if self._merged <= gen < self._gen:
                self._merge_generation(gen)
                merged += self._generations[gen].tuples
        return merged

    def results(self) -> Iterator[ResultBatch]:
        """Yield, in sequence order, every merged batch not yet handed out.

        After a restart this starts again above the acknowledged sequence number, so it
        redelivers what the consumer had not acknowledged. One batch is in RAM at a time.
        The consumer may :meth:`ack` while it iterates.
        """
        for gen in sorted(self._generations):
            summary = self._generations.get(gen)  # ack() inside the loop may drop it
            if summary is None or gen >= self._merged or summary.last_seq <= self._delivered:
                continue
            for batch in self._deliver(gen):
                if batch.seq > self._delivered:
                    self._delivered = batch.seq
                    yield batch

    def ack(self, seq: int) -> None:
        """Every batch up to ``seq`` has been durably consumed; its results may go."""
        if seq <= self._acked:
            return
        if seq > self._delivered:
            raise ValueError(f"cannot acknowledge batch {seq}: only {self._delivered} delivered")
        self._acked = seq
        self._db.put(b"Macked", _U64.pack(seq))
        for gen in sorted(self._generations):  # oldest first: no gap in the journals
            if gen >= self._merged or self._generations[gen].last_seq > seq:
                break
            del self._generations[gen]
            # its record first: a kill -9 between leaves a journal unrecorded (read again,
            # and found acknowledged), never a record of a journal that is gone
            self._db.delete(drumfiles.closed_key(gen))
            drumfiles.journal_path(self.path, gen).unlink()
            drumfiles.results_path(self.path, gen).unlink(missing_ok=True)

    def ack_merged(self) -> None:
        """Acknowledge every merged batch without reading its results."""
        last = max(
            (g.last_seq for n, g in self._generations.items() if n < self._merged), default=0
        )
        self._delivered = max(self._delivered, last)
        self.ack(last)

    def contains(self, key: int) -> bool:
        """True if ``key`` is in the merged cache (pending tuples are not looked at).

        One ``pread`` of a kilo-record stride of its bucket's run. Safe while another
        thread merges: it sees a bucket's run before or after the merge rewrites it, so
        keys of the generation being merged may be missed until that merge completes.
        """
        return self.lookup(key) is not None

    def lookup(self, key: int) -> int | None:
        """``key``'s value in the merged cache (0 in a keys-only DRUM), None if absent;
        as :meth:`contains`."""
        assert self._runs is not None, "open() first"
        record = self._runs.find(key >> self._shift, key)
        if record is None:
            return None
        return 0 if self.value_dtype is None else int(record["value"])

    def items(self) -> Iterator[tuple[np.ndarray, np.ndarray | None]]:
        """The merged cache, a segment at a time: (keys, values) arrays, in key order.
        Not while a merge runs. One segment is in RAM at a time."""
        assert self._runs is not None, "open() first"
        for records in self._runs.all_segments():
            keys = records["key"].astype(np.uint64)
            yield keys, (None if self.value_dtype is None else records["value"].copy())

    def _check_derived(self, gen: int, tuples: int) -> None:
        """At open: a generation's bucket files whole (else rebuilt), and its results
        file whole if a merge wrote to it (drumfiles)."""
        if not tuples:
            return
        drumfiles.check_buckets(self._db, self.path, gen, tuples, self._record.itemsize)
        started = any(self._db.iterator(prefix=b"A" + _U64.pack(gen), include_value=False))
        if gen < self._merged or started:
            drumfiles.check_results(self.path, gen, tuples, self._slot_dtype().itemsize)

    def _merge_generation(self, gen: int) -> None:
        total = self._generations[gen].tuples
        if total:
            held = self._partition(gen)
            slots = drumfiles.map_results(self.path, gen, total, self._slot_dtype())
            for bucket in range(self.buckets):
                self._merge_bucket(gen, bucket, slots, None if held is None else held[bucket])
                if bucket == 0:
                    faulthooks.reach(f"merge:{self.path.name}")
            # No msync (``slots.flush()``): the page cache keeps a MAP_SHARED mapping's
            # writes across a kill -9, which is all the crash semantics above promise;
            # and CPython's mmap.flush holds the GIL through msync(MS_SYNC), a disk
            # write of the whole results file, stalling the reactor thread meanwhile.
            del slots
        with self._db.write_batch(transaction=True) as wb:
            for key in self._db.iterator(prefix=b"A" + _U64.pack(gen), include_value=False):
                wb.delete(key)
            wb.delete(b"P" + _U64.pack(gen))
            wb.put(b"Mmerged", _U64.pack(gen + 1))
        self._merged = gen + 1
        shutil.rmtree(drumfiles.buckets_dir(self.path, gen), ignore_errors=True)

    def _partition(self, gen: int) -> list[np.ndarray] | None:
        """Spread generation ``gen``'s tuples over its buckets (idempotent): in RAM, each
        bucket's, if they fit in ``spill_bytes``; else over its bucket files (None)."""
        if self._db.get(b"P" + _U64.pack(gen)) is not None:
            return None
        if self._generations[gen].tuples * self._record.itemsize <= self.spill_bytes:
            return self._by_bucket(np.concatenate(list(self._journal_records(gen))))
        directory = drumfiles.buckets_dir(self.path, gen)
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir()
        with contextlib.ExitStack() as stack:
            files = [
                stack.enter_context(open(directory / f"{i}.bin", "wb")) for i in range(self.buckets)
            ]
            held: list[np.ndarray] = []
            held_bytes = 0
            for records in self._journal_records(gen):
                held.append(records)
                held_bytes += records.nbytes
                if held_bytes >= self.spill_bytes:
                    self._spill(np.concatenate(held), files)
                    held, held_bytes = [], 0
            if held:
                self._spill(np.concatenate(held), files)
        self._db.put(b"P" + _U64.pack(gen), b"")
        return None

    def _journal_records(self, gen: int) -> Iterator[np.ndarray]:
        """Generation ``gen``'s tuples as records, batch by batch in arrival order."""
        arrival = 0
        for payload in drumfiles.payloads(self.path, gen):
            batch = drumjournal.decode(payload, self.value_dtype, with_aux=False)
            n = len(batch.keys)
            records = np.empty(n, dtype=self._record)
            records["key"] = batch.keys
            arrivals = np.arange(arrival, arrival + n, dtype=np.uint64)
            records["tag"] = (arrivals << np.uint64(2)) | batch.ops.astype(np.uint64)
            if batch.values is not None:
                records["value"] = batch.values
            arrival += n
            yield records

    def _by_bucket(self, records: np.ndarray) -> list[np.ndarray]:
        """``records`` split by bucket, each in arrival order."""
        bucket = records["key"] >> np.uint64(self._shift)
        order = np.argsort(bucket, kind="stable")
        bounds = np.searchsorted(bucket[order], np.arange(self.buckets + 1))
        ordered = records[order]
        return [ordered[bounds[i] : bounds[i + 1]] for i in range(self.buckets)]

    def _spill(self, records: np.ndarray, files: list[Any]) -> None:
        for file, part in zip(files, self._by_bucket(records), strict=True):
            if len(part):
                # file.write, not ndarray.tofile: a short write (a full disk) raises
                # OSError with its errno (ENOSPC), which tofile does not give
                file.write(part.data)

    def _merge_bucket(self, gen: int, bucket: int, slots: np.memmap[Any, Any], held: Any) -> None:
        """Merge a bucket's tuples (``held``, or its file's) into its run, in one pass.

        The merged run is written to a new file; its record and the marker ``A G i``
        are one transaction once it is whole and its tuples' results are in ``slots``.
        Tuples that only check leave the run as it is. A bucket whose marker is there is
        merged already (a merge resumed after a kill).
        """
        marker = b"A" + _U64.pack(gen) + _U32.pack(bucket)
        if self._db.get(marker) == _DONE:
            return
        records = held
        if records is None:
            records = np.fromfile(
                drumfiles.buckets_dir(self.path, gen) / f"{bucket}.bin", dtype=self._record
            )
        if not len(records):
            return
        records = records[np.lexsort((records["tag"], records["key"]))]
        tkeys = records["key"]
        tops = (records["tag"] & np.uint64(3)).astype(np.uint8)
        arrival = (records["tag"] >> np.uint64(2)).astype(np.intp)
        tvalues = records["value"] if self.value_dtype is not None else None
        runs = self._runs
        assert runs is not None
        writer = runs.writer(bucket, gen + 1) if (tops & UPDATE).any() else None
        try:
            lo = 0
            for segment in runs.segments(bucket):  # each segment's tuples: [lo, hi)
                kept = segment.records
                hi = len(tkeys)
                if segment.upper is not None:
                    hi = int(np.searchsorted(tkeys, np.uint64(segment.upper)))
                if lo < hi:
                    applied = apply_sorted(
                        kept["key"],
                        None if tvalues is None else kept["value"],
                        tkeys[lo:hi],
                        tops[lo:hi],
                        None if tvalues is None else tvalues[lo:hi],
                        self.combine,
                    )
                    slots["unique"][arrival[lo:hi]] = applied.unique
                    if applied.values is not None:
                        slots["value"][arrival[lo:hi]] = applied.values
                    if applied.changed:
                        kept = np.empty(len(applied.keys), self._run_record)
                        kept["key"] = applied.keys
                        if applied.stored is not None:
                            kept["value"] = applied.stored
                    lo = hi
                if writer is not None:
                    writer.append(kept)
            if writer is None:
                self._db.put(marker, _DONE)
                return
            n = writer.finish()
        except BaseException:
            if writer is not None:
                writer.abort()
            raise
        self._keys += runs.install(bucket, gen + 1, n, {marker: _DONE})

    # -- delivery ------------------------------------------------------------------------
    def _deliver(self, gen: int) -> Iterator[ResultBatch]:
        """The results of generation ``gen``, batch by batch in arrival order. Slots are
        read with plain sequential reads, not a memory map: a map's pages read so far
        would stay resident (and count in the crawler's RSS) for the whole delivery."""
        total = self._generations[gen].tuples
        dtype = self._slot_dtype()
        with contextlib.ExitStack() as stack:
            results_file = drumfiles.results_path(self.path, gen)
            results = stack.enter_context(open(results_file, "rb")) if total else None
            for payload in drumfiles.payloads(self.path, gen):
                batch = drumjournal.decode(payload, self.value_dtype)
                n = len(batch.keys)
                if results is None or n == 0:
                    yield ResultBatch(batch.seq, batch.keys, np.zeros(0, bool), None, batch.aux)
                    continue
                part = np.fromfile(results, dtype=dtype, count=n)
                if len(part) != n:
                    raise DamagedState(results_file, "shorter than its journal")
                values = part["value"] if self.value_dtype is not None else None
                yield ResultBatch(
                    batch.seq, batch.keys, part["unique"].astype(bool), values, batch.aux
                )

    def _slot_dtype(self) -> np.dtype[Any]:
        fields: list[tuple[str, Any]] = [("unique", "u1")]
        if self.value_dtype is not None:
            fields.append(("value", self.value_dtype.str))
        return np.dtype(fields)
