"""The admitted journal: what left BEAST for RAM and is not done yet, on disk.

The workbench lives in RAM. So that a kill -9 loses no URL it held, every URL admitted
into it (taken from BEAST, or a retry or redirect sent straight to its host) is first
appended here with an id, and a record marks it done when its fetch ends or it is
dropped. On open, the URLs admitted and not done are handed back (to be admitted again:
they are downloaded again at most once more, as the contract allows for what was in
RAM), with the BEAST position of the last record taken, where BEAST's reading resumes.

Every record BEAST hands out moves that position, including one the frontier gives
back to a later queue (its host was full, :meth:`AdmittedJournal.returned`): its copy
is in the later queue, so a restart must not take the original again. (Were the
position that of the last record admitted, a restart would take every record deferred
after it twice, from its old place and from its copy: both fetched.)

RAM holds one small entry per live id (the segment its record is in), never the items:
the workbench holds those already.

Format: *segments* ``admitted-<n>.rec`` in the state directory, read in order of ``n``,
each an :mod:`irlscrapy.storage.recordfile` of::

    record := "A" id: u64be slot: i64be offset: i64be domain: u64be item   admitted
            | "D" id: u64be                                                done
            | "C" slot: i64be offset: i64be                                BEAST cursor
    slot = -1: the item did not come from BEAST (a retry or redirect)
    offset = -1 in "C": BEAST read slot - 1 to its end (:meth:`AdmittedJournal.slot_read`)
    offset >= 0 in "C": BEAST's record there went back to a later queue (``returned``)

An id's state is its last record in that order. Appends go to the newest segment; once
it holds :data:`SEGMENT_RATIO` records per live id (and at least :data:`SEGMENT_MIN`)
a new one starts, opening with a "C" record. The live "A" records of older segments are
copied forward a few at a time (:data:`COPY_STEP` records of the oldest segment read per
record appended), and the oldest segment is deleted once none of its "A" records is
the last word on a live id. Only the oldest: a newer segment may hold the "D" records
that shadow "A" records of an older one. So the files stay within a few times the live
set, and no call does more than a bounded amount of I/O (a rewrite in one go would stall
the reactor).

Invariant: *after open(), the items returned are exactly those admitted and not marked
done, whatever point of an earlier run a kill -9 stopped* (a copy is appended before its
old segment can be deleted; segments are deleted oldest first). So the segments' numbers
run without gaps, and every segment but the newest is whole: open() raises DamagedState
otherwise. Nor is the journal ever without a segment once BEAST's queues exist beside it
(the frontier's first open creates segment 0 before BEAST's state.json, and the newest
segment is never deleted): :func:`journal_lost`.
"""

from __future__ import annotations

import re
import struct
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from irlscrapy.exceptions import DamagedState
from irlscrapy.storage.recordfile import RecordWriter, first_gap, scan

_ADMIT = struct.Struct(">cQqqQ")
_DONE = struct.Struct(">cQ")
_CURSOR = struct.Struct(">cqq")
_SEGMENT = re.compile(r"admitted-(\d+)\.rec")
#: A new segment starts once the newest holds this many records per live id ...
SEGMENT_RATIO = 4
#: ... and at least this many records.
SEGMENT_MIN = 100_000
#: Records of the oldest segment read (and copied forward if live) per append.
COPY_STEP = 4


@dataclass(slots=True)
class Admitted:
    id: int
    slot: int
    offset: int
    domain: int
    item: bytes


class AdmittedJournal:
    def __init__(
        self, directory: Path, *, segment_ratio: int = SEGMENT_RATIO, segment_min: int = SEGMENT_MIN
    ) -> None:
        self.directory = directory
        self.segment_ratio = segment_ratio
        self.segment_min = segment_min
        self._writer: RecordWriter | None = None
        self._files: deque[int] = deque([0])  # segments on disk, oldest first
        self._segment_records = 0
        self._live: dict[int, int] = {}  # id -> the segment of its last "A" record
        self._live_in: dict[int, int] = {}  # segment -> live ids whose "A" is there
        self._copying: tuple[int, Iterator[tuple[int, bytes]]] | None = None
        self.next_id = 1
        self.cursor: tuple[int, int] | None = None  # BEAST position of the last record taken

    @property
    def _segment(self) -> int:
        """The newest segment: appends go there."""
        return self._files[-1]

    def _path(self, segment: int) -> Path:
        return self.directory / f"admitted-{segment}.rec"

    def open(self) -> list[Admitted]:
        """Open (or create) the journal; return the items admitted and not done."""
        self.directory.mkdir(parents=True, exist_ok=True)
        live: dict[int, Admitted] = {}
        segments = admitted_segments(self.directory)
        for segment in segments:
            # a segment older than the newest was closed whole: no torn tail
            for _, record in scan(self._path(segment), whole=segment != segments[-1]):
                kind = record[:1]
                if kind == b"A":
                    _, id_, slot, offset, domain = _ADMIT.unpack_from(record)
                    live[id_] = Admitted(id_, slot, offset, domain, record[_ADMIT.size :])
                    self._set_live(id_, segment)
                    self.next_id = max(self.next_id, id_ + 1)
                    if slot >= 0:
                        self._advance((slot, offset))
                elif kind == b"D":
                    id_ = _DONE.unpack(record)[1]
                    live.pop(id_, None)
                    self._unset_live(id_)
                elif kind == b"C":
                    _, slot, offset = _CURSOR.unpack(record)
                    self._advance((slot, offset))
                if segment == segments[-1]:
                    self._segment_records += 1
        self._files = deque(segments or [0])
        self._drop_finished()
        self._writer = RecordWriter(self._path(self._segment))
        self._writer.open()
        return list(live.values())

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        self._copying = None

    def __len__(self) -> int:
        return len(self._live)

    def admit(self, slot: int, offset: int, domain: int, item: bytes) -> int:
        """Journal one admitted item; return its id."""
        id_ = self.next_id
        self.next_id += 1
        self._append(_ADMIT.pack(b"A", id_, slot, offset, domain) + item)
        self._set_live(id_, self._segment)
        if slot >= 0:
            self._advance((slot, offset))
        self._copy_forward()
        return id_

    def slot_read(self, slot: int) -> None:
        """BEAST read ``slot`` to its end and is about to delete it: the cursor moves
        past it, to ``(slot + 1, -1)`` (see :mod:`irlscrapy.scheduler.frontier.beast`)."""
        self.cursor = (slot + 1, -1)
        self._append(_CURSOR.pack(b"C", *self.cursor))
        self._copy_forward()

    def returned(self, slot: int, offset: int) -> None:
        """BEAST's record at ``(slot, offset)`` was taken and given back to a later
        queue (its host was full): the cursor moves past it. Called after the copy is
        written, so a kill -9 in between leaves the record twice, never lost."""
        assert self.cursor is None or (slot, offset) > self.cursor, "BEAST reads forward"
        self.cursor = (slot, offset)
        self._append(_CURSOR.pack(b"C", slot, offset))
        self._copy_forward()

    def done(self, id_: int) -> None:
        if id_ not in self._live:
            return
        self._append(_DONE.pack(b"D", id_))
        self._unset_live(id_)
        self._copy_forward()

    # -- bookkeeping -----------------------------------------------------------------
    def _set_live(self, id_: int, segment: int) -> None:
        old = self._live.get(id_)
        if old is not None:
            self._live_in[old] -= 1
        self._live[id_] = segment
        self._live_in[segment] = self._live_in.get(segment, 0) + 1

    def _unset_live(self, id_: int) -> None:
        segment = self._live.pop(id_, None)
        if segment is not None:
            self._live_in[segment] -= 1

    def _advance(self, position: tuple[int, int]) -> None:
        """BEAST positions grow in reading order: the cursor is the largest seen."""
        if self.cursor is None or position > self.cursor:
            self.cursor = position

    # -- segments --------------------------------------------------------------------
    def _append(self, record: bytes) -> None:
        assert self._writer is not None, "open() first"
        if self._segment_records >= max(self.segment_min, self.segment_ratio * len(self._live)):
            self._start_segment()
        self._writer.append(record)
        self._segment_records += 1

    def _start_segment(self) -> None:
        assert self._writer is not None
        self._writer.close()
        self._files.append(self._segment + 1)
        self._segment_records = 0
        self._writer = RecordWriter(self._path(self._segment))
        self._writer.open()
        if self.cursor is not None:
            self._writer.append(_CURSOR.pack(b"C", *self.cursor))
            self._segment_records += 1
        self._drop_finished()

    def _copy_forward(self) -> None:
        """Read up to COPY_STEP records of the oldest segment (if it is not the newest);
        append its live "A" records to the newest."""
        self._drop_finished()
        if len(self._files) < 2:
            return
        oldest = self._files[0]
        if self._copying is None or self._copying[0] != oldest:
            self._copying = (oldest, scan(self._path(oldest)))
        records = self._copying[1]
        for _ in range(COPY_STEP):
            got = next(records, None)
            if got is None:
                assert not self._live_in.get(oldest), f"segment {oldest}: live ids not found"
                break
            record = got[1]
            if record[:1] == b"A":
                id_ = _ADMIT.unpack_from(record)[1]
                if self._live.get(id_) == oldest:
                    self._append(record)
                    self._set_live(id_, self._segment)
        self._drop_finished()

    def _drop_finished(self) -> None:
        """Delete the oldest segments while none of their records is the last word on a
        live id (never the newest)."""
        while len(self._files) > 1 and not self._live_in.get(self._files[0]):
            segment = self._files.popleft()
            if self._copying is not None and self._copying[0] == segment:
                self._copying = None
            self._live_in.pop(segment, None)
            self._path(segment).unlink(missing_ok=True)


def admitted_segments(directory: Path) -> list[int]:
    """The numbers of the admitted segments in ``directory``, in order; DamagedState if
    one is missing from their run (segments are deleted oldest first)."""
    found = (_SEGMENT.fullmatch(p.name) for p in directory.glob("admitted-*.rec"))
    segments = sorted(int(m.group(1)) for m in found if m)
    gap = first_gap(segments)
    if gap is not None:
        raise DamagedState(
            directory / f"admitted-{gap}.rec",
            f"missing: the segments run from {segments[0]} to {segments[-1]}, and the URLs "
            "admitted in the missing ones would be lost",
        )
    return segments


def read_cursor(directory: Path) -> tuple[int, int] | None:
    """The BEAST position of the last record taken, as :meth:`AdmittedJournal.open`
    finds it, read without changing a file (``irlscrapy check``)."""
    cursor: tuple[int, int] | None = None
    segments = admitted_segments(directory)
    for segment in segments:
        for _, record in scan(directory / f"admitted-{segment}.rec", whole=segment != segments[-1]):
            if record[:1] == b"A":
                _, _, slot, offset, _ = _ADMIT.unpack_from(record)
            elif record[:1] == b"C":
                _, slot, offset = _CURSOR.unpack(record)
            else:
                continue
            if slot >= 0 and (cursor is None or (slot, offset) > cursor):
                cursor = (slot, offset)
    return cursor


def journal_lost(directory: Path, queues_state: Path) -> DamagedState | None:
    """Damage if ``directory`` holds no segment though BEAST's ``queues_state`` (its
    state.json) exists (module docstring)."""
    if admitted_segments(directory) or not queues_state.exists():
        return None
    return DamagedState(
        directory / "admitted-0.rec",
        "missing: BEAST's queues are here but the admitted journal is not, and the URLs "
        "the last run had admitted to RAM would be lost",
    )
