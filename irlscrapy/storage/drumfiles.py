"""The files of a DRUM's generations, and the checks that they are whole.

A generation's journal (``journal-<G>.rec``) takes batches until the generation is
closed: by a merge, or by the end of the run that wrote it (a restart starts a new
generation). Once closed it never changes until it is deleted, acknowledged, so its
length is recorded in the DRUM's LevelDB (``b"G" G -> u64``): at the merge that closes
it, or at the first open after the run that wrote it (whose torn tail, if a kill -9
left one, is cut first: the batch in it had not been submitted). On every open:

- the journals' numbers are a run without gaps (acknowledgement deletes the oldest
  first, so a gap is a file lost), and it includes every closed generation recorded and
  the one the last run had open (``b"Mopen" -> u64``);
- a closed journal holds exactly its recorded length of whole records;
- the bucket files of a generation whose partition is marked complete hold all its
  tuples (they are derived data: short ones are rebuilt from the journal, a recovery
  counted in ``irl/recovered/buckets_rebuilt/<store>``);
- the results file of a generation being merged, or merged and not yet delivered,
  has a slot for every tuple.

Anything else is :class:`~irlscrapy.exceptions.DamagedState`, naming the file.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import plyvel

from irlscrapy.exceptions import DamagedState
from irlscrapy.storage import drumjournal
from irlscrapy.storage.cachedb import open_leveldb, read_through
from irlscrapy.storage.drumcache import RUNS, damaged_runs, run_key, run_record
from irlscrapy.storage.recordfile import (
    MAGIC,
    RECORD_OVERHEAD,
    RecordWriter,
    cut_torn_tail,
    first_gap,
    salvage,
    scan,
)
from irlscrapy.storage.recovery import recovered

_U64 = struct.Struct(">Q")


@dataclass
class Generation:
    tuples: int = 0
    last_seq: int = 0


def journal_path(directory: Path, gen: int) -> Path:
    return directory / f"journal-{gen}.rec"


def results_path(directory: Path, gen: int) -> Path:
    return directory / f"results-{gen}.bin"


def map_results(directory: Path, gen: int, total: int, dtype: np.dtype[Any]) -> np.memmap[Any, Any]:
    """Generation ``gen``'s result file of ``total`` slots, mapped (created zeroed if it
    is not there: a merge resumed after a kill finds it).

    Its blocks are allocated before it is mapped: a store through a shared mapping into
    a hole the file system cannot fill (a full disk) is a SIGBUS that kills the crawl,
    where an allocation that fails is an ENOSPC that stops it cleanly
    (:mod:`irlscrapy.scheduler.diskfull`). A file a kill left sparse is filled in the
    same way."""
    path = results_path(directory, gen)
    with open(path, "r+b" if path.exists() else "w+b") as f:
        os.posix_fallocate(f.fileno(), 0, total * dtype.itemsize)
    return np.memmap(path, dtype=dtype, mode="r+", shape=(total,))


def buckets_dir(directory: Path, gen: int) -> Path:
    return directory / f"buckets-{gen}"


def closed_key(gen: int) -> bytes:
    """The LevelDB key of a closed generation's journal length."""
    return b"G" + _U64.pack(gen)


def journal_generations(directory: Path, db: Any) -> list[int]:
    """The generations with a journal, in order; DamagedState if one in their run is
    missing. (A directory an earlier version wrote, without ``Mopen``, may have gaps:
    its acknowledgement could delete an empty generation before an older one.)"""
    gens = sorted(
        int(stem)
        for p in directory.glob("journal-*.rec")
        if (stem := p.stem.removeprefix("journal-")).isdigit()
    )
    if db.get(b"Mopen") is None:
        return gens
    gap = first_gap(gens)
    if gap is not None:
        raise DamagedState(
            journal_path(directory, gap),
            f"missing: the journals run from {gens[0]} to {gens[-1]}, and the URLs "
            "submitted in the missing ones would be lost",
        )
    return gens


def known_generations(db: Any) -> set[int]:
    """The generations a DRUM's LevelDB says have journals."""
    known = {_U64.unpack(key[1:])[0] for key in db.iterator(prefix=b"G", include_value=False)}
    opened = db.get(b"Mopen")
    if opened is not None:
        known.add(_U64.unpack(opened)[0])
    return known


def check_present(db: Any, directory: Path, gens: list[int]) -> None:
    """Every generation the LevelDB knows of (closed and not acknowledged, or open when
    the last run stopped: ``Mopen``) has its journal; DamagedState if one is missing."""
    missing = sorted(known_generations(db) - set(gens))
    if missing:
        raise DamagedState(
            journal_path(directory, missing[0]),
            "missing, and the URLs submitted in it would be lost",
        )


def payloads(directory: Path, gen: int) -> Iterator[bytes]:
    """A closed generation's batches."""
    for _, payload in scan(journal_path(directory, gen), whole=True):
        yield payload


def read_generation(db: Any, directory: Path, gen: int) -> Generation:
    """Count a journal's tuples, checking it against its recorded length; record the
    length of one closed by the end of its run (cutting its torn tail first)."""
    path = journal_path(directory, gen)
    recorded = db.get(closed_key(gen))
    _check_closed_length(path, recorded)
    summary = Generation()
    end = len(MAGIC)
    for offset, payload in scan(path, whole=recorded is not None):
        seq, n = drumjournal.peek(payload)
        summary.tuples += n
        summary.last_seq = seq
        end = offset + RECORD_OVERHEAD + len(payload)
    if recorded is None:  # (one read of the journal: it may hold a whole generation)
        db.put(closed_key(gen), _U64.pack(cut_torn_tail(path, end)))
    return summary


def _check_closed_length(path: Path, recorded: bytes | None) -> None:
    """A closed journal (``recorded``: its length when it closed) still has that length."""
    if recorded is None:
        return
    length, size = _U64.unpack(recorded)[0], path.stat().st_size
    if size != length:
        raise DamagedState(
            path,
            f"{size} bytes, but it held {length} when its generation closed"
            + (": the URLs of the batches cut off would be lost" if size < length else ""),
        )


def check_buckets(db: Any, directory: Path, gen: int, tuples: int, record_size: int) -> None:
    """Generation ``gen``'s bucket files, if its partition is marked complete, are
    whole; if not, they are removed with the mark (a recovery: the merge rebuilds them
    from the journal)."""
    mark = b"P" + _U64.pack(gen)
    if db.get(mark) is None:
        return
    folder = buckets_dir(directory, gen)
    held = sum(p.stat().st_size for p in folder.glob("*.bin")) if folder.is_dir() else -1
    if held == tuples * record_size:
        return
    shutil.rmtree(folder, ignore_errors=True)
    db.delete(mark)
    recovered("buckets_rebuilt", folder, detail=f"{max(held, 0)} of {tuples * record_size} bytes")


def check_results(directory: Path, gen: int, tuples: int, slot_size: int) -> None:
    """A generation being merged or awaiting delivery has a slot for each tuple."""
    path = results_path(directory, gen)
    size = path.stat().st_size if path.exists() else None
    if size != tuples * slot_size:
        what = "missing" if size is None else f"{size} bytes"
        raise DamagedState(
            path,
            f"{what}, but its generation's {tuples} URLs need {tuples * slot_size}: whether "
            "each was new is lost",
        )


# -- irlscrapy check and repair ------------------------------------------------------------
def _value_dtype(db: Any) -> np.dtype[Any] | None:
    """The value dtype of the DRUM whose LevelDB is ``db`` (None: keys only)."""
    config = json.loads(db.get(b"Mconfig") or b"{}")
    return np.dtype(config["value_dtype"]) if config.get("value_dtype") else None


def _slot_size(db: Any) -> int:
    """Bytes of a result slot of the DRUM whose LevelDB is ``db``."""
    value_dtype = _value_dtype(db)
    return 1 + (value_dtype.itemsize if value_dtype is not None else 0)


def inspect(directory: Path) -> list[DamagedState]:
    """What is damaged in the DRUM at ``directory``, without changing it (its LevelDB
    is read whole, its checksums verified)."""
    try:
        db = open_leveldb(directory / "cache", create=False, paranoid_checks=True)
    except DamagedState as damage:
        # a DRUM killed in its first open, before its first journal: created again
        fresh = damage.problem == "missing" and not any(directory.glob("journal-*.rec"))
        return [] if fresh else [damage]
    found: list[DamagedState] = []
    try:
        unreadable = read_through(db, directory / "cache")
        if unreadable is not None:
            return [unreadable]
        found.extend(damaged_runs(directory / RUNS, db, run_record(_value_dtype(db))).values())
        slot_size = _slot_size(db)
        merged = _U64.unpack(db.get(b"Mmerged"))[0] if db.get(b"Mmerged") else 0
        gens = journal_generations(directory, db)
        check_present(db, directory, gens)
        for gen in gens:
            path = journal_path(directory, gen)
            recorded = db.get(closed_key(gen))
            try:
                _check_closed_length(path, recorded)
            except DamagedState as damage:
                found.append(damage)
                continue
            tuples = sum(drumjournal.peek(p)[1] for _, p in scan(path, whole=recorded is not None))
            started = any(db.iterator(prefix=b"A" + _U64.pack(gen), include_value=False))
            if tuples and (gen < merged or started):
                check_results(directory, gen, tuples, slot_size)
    except DamagedState as damage:
        found.append(damage)
    except plyvel.Error as exc:
        found.append(DamagedState(directory / "cache", f"a damaged LevelDB ({exc})"))
    finally:
        db.close()
    return found


def mend(directory: Path) -> list[str]:
    """Make the DRUM at ``directory`` open again, dropping what is damaged; what was
    done and lost, one line each."""
    done: list[str] = []
    cache = directory / "cache"
    try:
        db = open_leveldb(cache)
    except DamagedState:
        plyvel.repair_db(str(cache))
        done.append(f"{cache}: LevelDB repaired (keys in damaged blocks are lost)")
        db = open_leveldb(cache)
    try:
        for bucket, damage in damaged_runs(
            directory / RUNS, db, run_record(_value_dtype(db))
        ).items():
            db.delete(run_key(bucket))
            Path(str(damage.path)).unlink(missing_ok=True)
            done.append(
                f"{damage.path}: {damage.problem} (dropped: what its bucket held may be "
                "taken for new again)"
            )
        slot_size = _slot_size(db)
        gens = {
            int(stem)
            for p in directory.glob("journal-*.rec")
            if (stem := p.stem.removeprefix("journal-")).isdigit()
        } | known_generations(db)
        for gen in range(min(gens), max(gens) + 1) if gens else ():
            done += _mend_generation(db, directory, gen, slot_size)
    finally:
        db.close()
    return done


def _mend_generation(db: Any, directory: Path, gen: int, slot_size: int) -> list[str]:
    path = journal_path(directory, gen)
    if not path.exists():
        writer = RecordWriter(path)
        writer.open()
        writer.close()
        db.put(closed_key(gen), _U64.pack(path.stat().st_size))
        return [f"{path}: missing; an empty one stands in (its URLs are lost)"]
    done = []
    recorded = db.get(closed_key(gen))
    try:
        for _ in scan(path, whole=recorded is not None):
            pass
        cut = recorded is not None and path.stat().st_size != _U64.unpack(recorded)[0]
    except DamagedState:
        cut = True
    if cut:
        salvaged = salvage(path, resync=False)  # a prefix: the tuples' arrivals stay
        db.put(closed_key(gen), _U64.pack(path.stat().st_size))
        done.append(
            f"{path}: kept its first {salvaged.kept} batches, dropped "
            f"{salvaged.dropped_bytes} bytes (the URLs in them are lost)"
        )
        shutil.rmtree(buckets_dir(directory, gen), ignore_errors=True)
        db.delete(b"P" + _U64.pack(gen))
    tuples = sum(drumjournal.peek(p)[1] for _, p in scan(path, whole=recorded is not None))
    results = results_path(directory, gen)
    started = any(db.iterator(prefix=b"A" + _U64.pack(gen), include_value=False))
    merged = _U64.unpack(db.get(b"Mmerged") or _U64.pack(0))[0]
    if not (results.exists() or started or gen < merged):
        return done
    size = results.stat().st_size if results.exists() else 0
    if results.exists() and size >= tuples * slot_size and (cut or size == tuples * slot_size):
        os.truncate(results, tuples * slot_size)  # the prefix's slots are right
    elif tuples:
        _first_occurrences(path, results, tuples, slot_size)
        done.append(f"{results}: rebuilt (a URL seen before may be stored and fetched again)")
    return done


def _first_occurrences(journal: Path, results: Path, tuples: int, slot_size: int) -> None:
    """A results file where each key's first tuple in the generation is new: nothing
    is lost, and a URL seen in an earlier generation may be stored again."""
    keys = np.concatenate(
        [drumjournal.decode(p, None, with_aux=False).keys for _, p in scan(journal, whole=True)]
        or [np.zeros(0, np.uint64)]
    )
    slots = np.zeros(tuples * slot_size, np.uint8)
    first = np.unique(keys, return_index=True)[1]
    slots[first * slot_size] = 1
    fresh = results.with_name(results.name + ".tmp")
    fresh.write_bytes(slots.tobytes())
    os.replace(fresh, results)  # (a repair killed here leaves the old file)
