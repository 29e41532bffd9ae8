"""``irlscrapy check`` and ``irlscrapy repair``: a state directory verified, and mended.

:func:`check_state` reads every file of a state directory the way a crawl's open does,
and more strictly (every LevelDB block's checksum), and changes no data (it takes the
directory's lock, leaving its LOCK file as found, and a LevelDB it opens may replay its
log, as at any open): it returns what is damaged, each as a
:class:`~irlscrapy.exceptions.DamagedState` naming the file.
:func:`repair_state` makes the directory open again, keeping what can be kept, and says
what it did and what was lost, one line per file. Both refuse a directory a crawl holds,
and one that is no crawl's state directory (a ConfigurationError: ``irlscrapy`` exits 2),
writing nothing there.

What each kind of file is, what damage means and what repair does (the crash semantics
of each file are in its module's docstring; a kill -9 only ever leaves a torn tail on
the newest file of a sequence, which the crawl's open cuts and says so):

======================================  ===================================================
file                                    repair
======================================  ===================================================
``urlseen/``, ``contentseen/``,         a damaged journal is cut at its first damage (the
``star/edges/``, ``star/indegree/``     batches after it are lost: a prefix keeps the
(DRUM: journal-G.rec, results-G.bin,    arrivals of the rest); its bucket files are
buckets-G/, cache/)                     rebuilt; its results, if any, are rebuilt with each
                                        key new at its first tuple (a URL seen before may be
                                        fetched again); a missing journal becomes an empty
                                        one; a damaged LevelDB goes through LevelDB's repair
                                        (keys in damaged blocks are lost)
``admitted-N.rec``, ``parked-N.rec``,   every whole record is kept, the damaged spans
``agent/outbox-N.rec``                  dropped (the URLs in them are lost: URLseen holds
                                        them as seen); admitted segments missing from their
                                        run are skipped (renumbered); no segment at all
                                        beside BEAST's queues: an empty one (the URLs the
                                        last run had in RAM are lost); a missing parked
                                        file is taken off parked.json's list (its URLs
                                        are lost)
``parked.json``                         listed anew from the parked files there
``beast/slot-N.rec``,                   cut at the first damage (BEAST resumes reading at
``beast/qf-N.rec``                      a byte offset, which must not move); a missing QF
                                        becomes an empty one, a missing slot that
                                        state.json lists is taken off its list, a missing
                                        slot the reader was inside is marked read in the
                                        admitted journal (their URLs are lost)
``beast/state.json``                    rebuilt from the queue files (only counters lost;
                                        the oldest QF kept: a URL may be fetched twice)
``dns/cache/``, ``robots/cache/``       deleted: only caches
``star/names/``                         LevelDB's repair, else deleted (PLD names of past
                                        rankings are lost)
``report/stats.json``,                  deleted (rewritten at the next close)
``star/leaders.json``
``spider.state``                        deleted (the spider's own state is lost)
======================================  ===================================================
"""

from __future__ import annotations

import json
import math
import pickletools
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import plyvel

from irlscrapy.exceptions import ConfigurationError, DamagedState
from irlscrapy.scheduler.frontier.admitted import (
    AdmittedJournal,
    admitted_segments,
    journal_lost,
    read_cursor,
)
from irlscrapy.scheduler.frontier.beaststate import STATE_VERSION, missing_queue_files, read_state
from irlscrapy.scheduler.frontier.parking import LIST as PARKED_LIST
from irlscrapy.scheduler.frontier.parking import holding, missing_parked
from irlscrapy.state.directory import not_a_state_directory
from irlscrapy.storage import drumfiles
from irlscrapy.storage.cachedb import open_leveldb, read_through
from irlscrapy.storage.dirlock import DirectoryLock
from irlscrapy.storage.jsonfile import replace_json
from irlscrapy.storage.recordfile import RecordWriter, salvage, scan

DRUMS = ("urlseen", "contentseen", "star/edges", "star/indegree")
CACHES = ("dns/cache", "robots/cache")
NAMES = "star/names"
REBUILT_JSON = ("report/stats.json", "star/leaders.json")
SEQUENCES = ("admitted", "parked", "beast/slot", "beast/qf", "agent/outbox")


def check_state(directory: Path, say: Callable[[str], None] = lambda _: None) -> list[DamagedState]:
    """What is damaged under ``directory``; ``say`` hears of each part as it is read."""
    with _locked(directory, reading=True):
        return list(_damage(directory, say))


def repair_state(directory: Path, say: Callable[[str], None] = lambda _: None) -> list[str]:
    """Mend what is damaged under ``directory``; one line per file mended."""
    done: list[str] = []
    with _locked(directory, reading=False):
        for drum in DRUMS:
            if _is_drum(directory / drum):
                say(f"DRUM {drum}")
                done += drumfiles.mend(directory / drum)
        for prefix in SEQUENCES:
            for path, whole in _sequence(directory, prefix):
                try:
                    _read_through(path, whole)
                except DamagedState:
                    # BEAST's readers resume at a byte offset: keep the offsets, cut there
                    salvaged = salvage(path, resync=not prefix.startswith("beast/"))
                    done.append(
                        f"{path}: kept {salvaged.kept} records, dropped "
                        f"{salvaged.dropped_bytes} bytes (the URLs in them are lost)"
                    )
        done += _renumber_admitted(directory)
        done += _mend_beast_state(directory)  # (before: a lost journal is told by it)
        done += _mend_lost_journal(directory)
        done += _mend_missing_queues(directory)
        done += _mend_parked_list(directory)
        for cache in (*CACHES, NAMES):
            done += _mend_leveldb(directory / cache, deletable=cache in CACHES)
        for name in REBUILT_JSON:
            path = directory / name
            if path.exists() and _json_damage(path) is not None:
                path.unlink()
                done.append(f"{path}: deleted (it is written again)")
        state = directory / "spider.state"
        if state.exists() and _pickle_damage(state) is not None:
            state.unlink()
            done.append(f"{state}: deleted (the spider's own state is lost)")
    return done


class _locked:
    """Hold the state directory's lock: no crawl may run on it meanwhile. A directory
    that is no crawl's is refused before anything is written; ``reading``: the lock
    file is left as found (made only for the while, if there was none)."""

    def __init__(self, directory: Path, reading: bool) -> None:
        problem = not_a_state_directory(directory)
        if problem is not None:
            raise ConfigurationError(problem)
        self.lock = DirectoryLock(directory, "irlscrapy state")
        self.reading = reading
        self.made = False

    def __enter__(self) -> None:
        self.made = not self.lock.path.exists()
        self.lock.acquire(record_owner=not self.reading)

    def __exit__(self, *exc: object) -> None:
        self.lock.release()
        if self.reading and self.made:
            self.lock.path.unlink(missing_ok=True)


def _damage(directory: Path, say: Callable[[str], None]) -> Iterator[DamagedState]:
    for drum in DRUMS:
        if _is_drum(directory / drum):
            say(f"DRUM {drum}")
            yield from drumfiles.inspect(directory / drum)
    try:
        admitted_segments(directory)
    except DamagedState as damage:
        yield damage
    lost = journal_lost(directory, directory / "beast" / "state.json")
    if lost is not None:
        yield lost
    try:
        yield from missing_parked(directory)
    except DamagedState as damage:
        yield damage
    for prefix in SEQUENCES:
        say(prefix)
        for path, whole in _sequence(directory, prefix):
            try:
                _read_through(path, whole)
            except DamagedState as damage:
                yield damage
    beast = directory / "beast"
    if beast.is_dir() and (any(beast.glob("*.rec")) or (beast / "state.json").exists()):
        try:
            queues = read_state(beast / "state.json")
        except (DamagedState, FileNotFoundError):
            yield DamagedState(beast / "state.json", "missing or unreadable")
        else:
            yield from _missing_queue_files(directory, queues)
    for cache in (*CACHES, NAMES):
        if (directory / cache).is_dir():
            say(cache)
            found = _leveldb_damage(directory / cache)
            if found is not None:
                yield found
    for name in REBUILT_JSON:
        if (directory / name).exists() and (problem := _json_damage(directory / name)):
            yield DamagedState(directory / name, problem)
    state = directory / "spider.state"
    if state.exists() and (problem := _pickle_damage(state)):
        yield DamagedState(state, problem)


_NUMBERED = re.compile(r"(.*)-(\d+)\.rec")


def _numbered(directory: Path, prefix: str) -> list[Path]:
    """``<prefix>-<n>.rec`` files, by n."""
    folder, _, stem = prefix.rpartition("/")
    found = [
        p
        for p in (directory / folder).glob(f"{stem}-*.rec")
        if (m := _NUMBERED.fullmatch(p.name)) and m.group(1) == stem
    ]
    return sorted(found, key=_number)


def _sequence(directory: Path, prefix: str) -> list[tuple[Path, bool]]:
    """The files of a sequence, each with whether it was closed whole (an admitted
    segment older than the newest)."""
    files = _numbered(directory, prefix)
    return [(p, prefix == "admitted" and p != files[-1]) for p in files]


def _is_drum(path: Path) -> bool:
    return (path / "cache").is_dir() or any(path.glob("journal-*.rec"))


def _number(path: Path) -> int:
    return int(path.stem.rsplit("-", 1)[1])


def _read_through(path: Path, whole: bool) -> None:
    for _ in scan(path, whole=whole):
        pass


def _renumber_admitted(directory: Path) -> list[str]:
    segments = _numbered(directory, "admitted")
    if not segments:
        return []
    first = _number(segments[0])
    done = []
    for i, path in enumerate(segments):
        if _number(path) != first + i:
            path.rename(directory / f"admitted-{first + i}.rec")
            done.append(f"{path}: renumbered {first + i} (the segments before it are missing)")
    return done


def _mend_beast_state(directory: Path) -> list[str]:
    """Rebuild a damaged or missing state.json from the queue files: the lowest slot is
    read next, the oldest QF file is the QF, the cycle is the smallest power of two
    spanning the slots, pending files are placed by a re-split; the eq. 31 counters
    start again."""
    beast = directory / "beast"
    slots = [_number(p) for p in _numbered(directory, "beast/slot")]
    qfs = [_number(p) for p in _numbered(directory, "beast/qf")]
    path = beast / "state.json"
    if not (slots or qfs) or (path.exists() and _beast_state_whole(path)):
        return []
    reading = min(slots, default=0)
    j = max(2, 1 << math.ceil(math.log2(max(slots, default=0) - reading + 1)))
    state: dict[str, object] = {"version": STATE_VERSION, "reading": reading, "j": j}
    state |= {"cycle_end": reading + j}
    # The oldest QF: whole, where a newer one may be a re-split cut short (whose records
    # it also holds); a URL it shares with the slots may be fetched twice, none is lost.
    state |= {"qf": min(qfs, default=0), "resplit": None}
    # Pushes a re-split held back (pending files) are placed by a re-split begun on open.
    pending = _numbered(directory, "beast/pending")
    if pending:
        qf = beast / f"qf-{state['qf']}.rec"
        sizes = {str(_number(p)): p.stat().st_size for p in _numbered(directory, "beast/slot")}
        state["resplit"] = {
            "slot_sizes": sizes,
            "qf_size": qf.stat().st_size if qf.exists() else 0,
            "sources": [p.name for p in pending],
            "pending": f"pending-{_number(pending[-1]) + 1}.rec",
        }
    replace_json(path, state)
    for newer in qfs[1:]:
        (beast / f"qf-{newer}.rec").unlink()
    return [f"{path}: rebuilt from the queue files (BEAST's pacing counters start again)"]


def _missing_queue_files(directory: Path, state: dict[str, object]) -> list[DamagedState]:
    """The queue files BEAST's state.json says must be there and are not, with the
    reader's position from the admitted journal (or, if that is damaged, past every
    slot: only the QF is checked until it is repaired)."""
    try:
        read_past = read_cursor(directory)
    except DamagedState:
        read_past = (max(cast(list[int], state["slots"]), default=0) + 1, -1)
    return list(missing_queue_files(directory / "beast", state, read_past))


def _mend_lost_journal(directory: Path) -> list[str]:
    lost = journal_lost(directory, directory / "beast" / "state.json")
    if lost is None:
        return []
    _empty_record_file(directory / "admitted-0.rec")
    return [
        f"{lost.path}: created empty (the URLs the last run had admitted to RAM are lost, "
        "and those BEAST's current queue handed out may be fetched again)"
    ]


def _mend_parked_list(directory: Path) -> list[str]:
    """An unreadable parked.json listed anew from the files there; missing parked
    files taken off its list."""
    path = directory / PARKED_LIST
    try:
        missing = [Path(str(damage.path)) for damage in missing_parked(directory)]
    except DamagedState:
        found = sorted(_number(p) for p in _numbered(directory, "parked"))
        replace_json(path, {"holding": found})
        return [f"{path}: listed anew from the parked files there"]
    listed = [g for g in holding(directory) if directory / f"parked-{g}.rec" not in missing]
    if missing:
        replace_json(path, {"holding": listed})
    return [
        f"{file}: taken off {path.name}'s list (the URLs parked in it are lost)" for file in missing
    ]


def _mend_missing_queues(directory: Path) -> list[str]:
    """An empty QF for a missing one; missing slots taken off state.json's list, or
    marked read in the admitted journal if the reader was inside one."""
    path = directory / "beast" / "state.json"
    if not path.exists():
        return []
    state = read_state(path)
    missing = _missing_queue_files(directory, state)
    reader_in = (read_cursor(directory) or (-1, -1))[0]
    done = []
    for damage in missing:
        file = Path(str(damage.path))
        if file.name.startswith("qf-"):
            _empty_record_file(file)
            done.append(f"{file}: created empty (the URLs of BEAST's overflow queue are lost)")
        elif _number(file) == reader_in:
            journal = AdmittedJournal(directory)
            journal.open()
            journal.slot_read(_number(file))
            journal.close()
            done.append(f"{file}: marked read (the URLs queued in the rest of it are lost)")
        else:
            done.append(f"{file}: taken off state.json's list (the URLs queued in it are lost)")
    gone = {Path(str(damage.path)).name for damage in missing}
    if any(name.startswith("slot-") for name in gone):
        state["slots"] = [s for s in cast(list[int], state["slots"]) if f"slot-{s}.rec" not in gone]
        replace_json(path, state)
    return done


def _empty_record_file(path: Path) -> None:
    """A record file holding no record (its header only)."""
    writer = RecordWriter(path)
    writer.open()
    writer.close()


def _beast_state_whole(path: Path) -> bool:
    try:
        read_state(path)
    except DamagedState:
        return False
    return True


def _leveldb_damage(path: Path) -> DamagedState | None:
    """What is damaged in the LevelDB at ``path`` (never created here: one a kill cut
    short while it was being created holds nothing, and its crawl creates it again)."""
    try:
        db = open_leveldb(path, create=(path / "CURRENT").exists(), paranoid_checks=True)
    except DamagedState as damage:
        return None if damage.problem == "missing" else damage
    try:
        return read_through(db, path)
    finally:
        db.close()


def _mend_leveldb(path: Path, deletable: bool) -> list[str]:
    if not path.is_dir() or _leveldb_damage(path) is None:
        return []
    plyvel.repair_db(str(path))
    if _leveldb_damage(path) is None:
        return [f"{path}: LevelDB repaired (entries in damaged blocks are lost)"]
    shutil.rmtree(path)
    what = "only a cache" if deletable else "the names of PLDs ranked before are lost"
    return [f"{path}: deleted, LevelDB's repair could not mend it ({what})"]


def _json_damage(path: Path) -> str | None:
    try:
        json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        return f"unreadable ({exc})"
    return None


def _pickle_damage(path: Path) -> str | None:
    """Walk the pickle's opcodes to its STOP, building nothing (its classes are the
    spider's, which this process may not import)."""
    try:
        for _ in pickletools.genops(path.read_bytes()):
            pass
    except Exception as exc:  # a damaged pickle raises about anything
        return f"unreadable ({exc!r})"
    return None
