"""The admitted journal: what left BEAST for RAM and is not done yet, on disk.

The workbench lives in RAM. So that a kill -9 loses no URL it held, every URL admitted
into it (taken from BEAST, or a retry or redirect sent straight to its host) is first
appended here with an id, and a line marks it done when its fetch ends or it is dropped.
On open, the URLs admitted and not done are handed back (to be admitted again: they
are downloaded again at most once more, as the contract allows for what was in RAM),
with the BEAST position of the last record taken, where BEAST's reading resumes.

Format: an :mod:`irlscrapy.recordfile` ``admitted.rec`` whose records are::

    record := "A" id: u64be slot: i64be offset: i64be domain: u64be item   admitted
            | "D" id: u64be                                                done
            | "C" slot: i64be offset: i64be                                BEAST cursor
    slot = -1: the item did not come from BEAST (a retry or redirect)

When the file holds many more done records than live ones it is rewritten (a new file
with a "C" record and the live "A" records, fsynced, then renamed over the old one).

Invariant: *after open(), live() is exactly the items admitted and not marked done,
whatever point of an earlier run a kill -9 stopped.*
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from irlscrapy.recordfile import RecordWriter, scan

_ADMIT = struct.Struct(">cQqqQ")
_DONE = struct.Struct(">cQ")
_CURSOR = struct.Struct(">cqq")
#: Rewrite the file once it holds this many records per live one (and at least
#: COMPACT_MIN records).
COMPACT_RATIO = 4
COMPACT_MIN = 100_000


@dataclass(slots=True)
class Admitted:
    id: int
    slot: int
    offset: int
    domain: int
    item: bytes


class AdmittedJournal:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._writer: RecordWriter | None = None
        self._live: dict[int, Admitted] = {}
        self._records = 0
        self.next_id = 1
        self.cursor: tuple[int, int] | None = None  # BEAST position of the last record taken

    def open(self) -> list[Admitted]:
        """Open (or create) the journal; return the items admitted and not done."""
        if self.path.exists():
            for _, record in scan(self.path):
                self._records += 1
                kind = record[:1]
                if kind == b"A":
                    _, id_, slot, offset, domain = _ADMIT.unpack_from(record)
                    self._live[id_] = Admitted(id_, slot, offset, domain, record[_ADMIT.size :])
                    self.next_id = max(self.next_id, id_ + 1)
                    if slot >= 0:
                        self._advance((slot, offset))
                elif kind == b"D":
                    self._live.pop(_DONE.unpack(record)[1], None)
                elif kind == b"C":
                    _, slot, offset = _CURSOR.unpack(record)
                    self._advance((slot, offset))
        self._writer = RecordWriter(self.path)
        self._writer.open()
        return list(self._live.values())

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __len__(self) -> int:
        return len(self._live)

    def admit(self, slot: int, offset: int, domain: int, item: bytes) -> int:
        """Journal one admitted item; return its id."""
        id_ = self.next_id
        self.next_id += 1
        self._live[id_] = Admitted(id_, slot, offset, domain, item)
        self._append(_ADMIT.pack(b"A", id_, slot, offset, domain) + item)
        if slot >= 0:
            self._advance((slot, offset))
        return id_

    def _advance(self, position: tuple[int, int]) -> None:
        """BEAST positions grow in reading order: the cursor is the largest seen."""
        if self.cursor is None or position > self.cursor:
            self.cursor = position

    def done(self, id_: int) -> None:
        if self._live.pop(id_, None) is None:
            return
        self._append(_DONE.pack(b"D", id_))
        if self._records >= COMPACT_MIN and self._records > COMPACT_RATIO * len(self._live):
            self._compact()

    def _append(self, record: bytes) -> None:
        assert self._writer is not None, "open() first"
        self._writer.append(record)
        self._records += 1

    def _compact(self) -> None:
        assert self._writer is not None
        self._writer.close()
        tmp = self.path.with_suffix(".tmp")
        tmp.unlink(missing_ok=True)
        writer = RecordWriter(tmp)
        writer.open()
        if self.cursor is not None:
            writer.append(_CURSOR.pack(b"C", *self.cursor))
        for a in self._live.values():
            writer.append(_ADMIT.pack(b"A", a.id, a.slot, a.offset, a.domain) + a.item)
        writer.close()
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self._records = len(self._live) + 1
        self._writer = RecordWriter(self.path)
        self._writer.open()
