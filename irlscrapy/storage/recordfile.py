"""Append-only files of length-prefixed, checksummed records.

Format (all integers big-endian)::

    file    := header record*
    header  := magic: 8 bytes = b"IRLREC\\x00\\x01"     # DO NOT CHANGE: format version 1
    record  := length: u32, crc32: u32, payload: length bytes
               crc32 is zlib.crc32 of the payload

Crash semantics: :meth:`RecordWriter.append` hands the record to the OS before it
returns (``flush``), so a kill -9 of the process loses nothing appended (unless the
caller asked for ``flush=False``: then what the writer holds back until its next
:meth:`RecordWriter.flush` is the caller's to redo, as it is when a write fails for want
of space); a power loss
may lose what the OS had not written yet (no fsync: a documented non-goal). A kill -9
during ``append`` can leave only a *torn tail*: the last record's head, whole, and
less of its payload than the head says. It is ignored on read, and :func:`repair`
truncates the file before it, so appends continue after the last whole record (a
recovery, counted in ``irl/recovered/torn_tail/<store>``: :mod:`irlscrapy.storage.recovery`).
Anything else is damage, and raises :class:`CorruptRecordFile` naming the byte offset:

- a record whose CRC fails (a crash never leaves a record of full length with a bad
  CRC: the size of the file grows only with the bytes written);
- a record whose length runs past the end of the file while a whole record starts
  somewhere after it (its length field is damaged: what follows is not a torn tail);
- a torn tail in a file the caller knows was complete (``whole``: a segment closed
  before a newer one was started), or a file shorter than its header.

A new file appears under its name only with its header whole: the header is written
to ``<name>.tmp`` and renamed into place, so a kill -9 while a file is being created
leaves no headerless file behind (only a stray ``.tmp``, overwritten next time).
"""

from __future__ import annotations

import io
import itertools
import os
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from irlscrapy.exceptions import CorruptRecordFile
from irlscrapy.storage.recovery import recovered

MAGIC = b"IRLREC\x00\x01"
_HEAD = struct.Struct(">II")
RECORD_OVERHEAD = _HEAD.size  # bytes of framing per record
MAX_RECORD = 1 << 30


#: Bytes :func:`scan` reads at a time. Python's default (8 KiB) read a DRUM journal of
#: 4 KiB records in one read per record: in a merge thread, each read gave up the GIL
#: and took it back from the reactor.
SCAN_BUFFER = 1 << 18


def scan(path: Path, *, whole: bool = False) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, payload)`` of every whole record; stop at a torn tail (with
    ``whole``, a torn tail is damage too). Damage raises CorruptRecordFile."""
    with open(path, "rb", buffering=SCAN_BUFFER) as f:
        if f.read(len(MAGIC)) != MAGIC:
            raise CorruptRecordFile(path, "not a record file of this format (bad header)")
        size = os.fstat(f.fileno()).st_size
        offset = len(MAGIC)
        while offset < size:
            head = f.read(_HEAD.size)
            if len(head) < _HEAD.size:
                _torn(path, offset, size, whole, f"{len(head)} bytes of a record's head")
                return
            length, crc = _HEAD.unpack(head)
            end = offset + _HEAD.size + length
            if length > MAX_RECORD or end > size:
                _check_tail(f, path, offset, size, whole, length)
                return
            payload = f.read(length)
            if zlib.crc32(payload) != crc:
                raise CorruptRecordFile(
                    path, f"the record at byte {offset} ({length} bytes) fails its checksum"
                )
            yield offset, payload
            offset = end


#: A tail longer than this is searched for a whole record (a damaged length) in blocks.
_RESYNC_BLOCK = 1 << 24
#: The longest record looked for after a damaged length.
_RESYNC_RECORD = 1 << 20


def _check_tail(f: BinaryIO, path: Path, offset: int, size: int, whole: bool, length: int) -> None:
    """The record at ``offset`` claims ``length`` bytes, past the end of the file: a torn
    tail, unless ``whole`` or a whole record starts after its head (then its length is
    damaged, and the records after it would be lost)."""
    claim = f"the record at byte {offset} claims {length} bytes, and {size - offset - 8} follow"
    _torn(path, offset, size, whole, claim)
    found = _next_whole_record(f, offset + 1, size)
    if found is not None:
        raise CorruptRecordFile(
            path, f"{claim}, but a whole record starts at byte {found}: a damaged length"
        )


def _whole_record_in(block: bytes, f: BinaryIO, start: int, size: int) -> int | None:
    """The offset of the first whole, non-empty record (its CRC right) starting in
    ``block`` (read at ``start``), if any."""
    n = len(block) - _HEAD.size + 1
    if n <= 0:
        return None
    raw = np.frombuffer(block, dtype=np.uint8)
    lengths = (
        raw[0:n].astype(np.uint64) << np.uint64(24)
        | raw[1 : n + 1].astype(np.uint64) << np.uint64(16)
        | raw[2 : n + 2].astype(np.uint64) << np.uint64(8)
        | raw[3 : n + 3].astype(np.uint64)
    )
    positions = np.arange(n, dtype=np.uint64) + np.uint64(start)
    # an empty record (eight zero bytes, CRC 0) is all too common in a torn payload;
    # no writer appends one
    # (records past _RESYNC_RECORD are not looked for: checking every candidate's CRC
    # grows with the square of the tail; a file's next small record is found instead)
    ends = positions + np.uint64(_HEAD.size) + lengths
    fits = np.flatnonzero(
        (lengths > 0) & (lengths <= np.uint64(_RESYNC_RECORD)) & (ends <= np.uint64(size))
    )
    for i in fits.tolist():
        at = start + i
        f.seek(at)
        length, crc = _HEAD.unpack(f.read(_HEAD.size))
        if zlib.crc32(f.read(length)) == crc:
            return at
    return None


def _torn(path: Path, offset: int, size: int, whole: bool, what: str) -> None:
    if whole:
        raise CorruptRecordFile(
            path, f"cut short: {what} (a file closed whole; {size} bytes, torn at {offset})"
        )


def repair(path: Path) -> int:
    """Truncate a torn trailing record (a recovery); return the length of the whole
    records."""
    end = len(MAGIC)
    for offset, payload in scan(path):
        end = offset + _HEAD.size + len(payload)
    return cut_torn_tail(path, end)


def cut_torn_tail(path: Path, end: int) -> int:
    """Truncate ``path`` to ``end``, where its whole records end (a scan found it); a
    torn record that goes is a recovery (:mod:`irlscrapy.storage.recovery`). Return ``end``."""
    size = path.stat().st_size
    if size != end:
        os.truncate(path, end)
        recovered("torn_tail", path, detail=f"{size - end} bytes")
    return end


def first_gap(numbers: list[int]) -> int | None:
    """The first number missing inside the sorted run ``numbers`` (None: none is): the
    segment of a sequence deleted oldest first that is gone."""
    for before, after in itertools.pairwise(numbers):
        if after != before + 1:
            return before + 1
    return None


@dataclass
class Salvaged:
    """What :func:`salvage` kept and dropped of a record file."""

    kept: int  # whole records kept
    dropped: list[tuple[int, int]]  # (offset, bytes) of each span dropped

    @property
    def dropped_bytes(self) -> int:
        return sum(n for _, n in self.dropped)


def salvage(path: Path, *, resync: bool = True) -> Salvaged:
    """Rewrite the record file ``path`` with its whole records: those before its first
    damage, and (``resync``) every whole record found after a damaged span. A file with
    a damaged header keeps none. The new file replaces the old in one rename."""
    size = path.stat().st_size
    dropped: list[tuple[int, int]] = []
    kept = 0
    fresh = path.with_name(path.name + ".salvage")
    with open(path, "rb") as f, open(fresh, "wb") as out:
        out.write(MAGIC)
        offset = len(MAGIC) if f.read(len(MAGIC)) == MAGIC else None
        if offset is None:
            dropped.append((0, size))
        while offset is not None and offset < size:
            f.seek(offset)
            head = f.read(_HEAD.size)
            length, crc = _HEAD.unpack(head) if len(head) == _HEAD.size else (0, 0)
            end = offset + _HEAD.size + length
            if 0 < length <= MAX_RECORD and end <= size:
                payload = f.read(length)
                if zlib.crc32(payload) == crc:
                    out.write(head + payload)
                    kept += 1
                    offset = end
                    continue
            after = _next_whole_record(f, offset + 1, size) if resync else None
            dropped.append((offset, (size if after is None else after) - offset))
            offset = after
    os.replace(fresh, path)
    return Salvaged(kept, dropped)


def _next_whole_record(f: BinaryIO, start: int, size: int) -> int | None:
    while start < size - _HEAD.size:
        f.seek(start)
        found = _whole_record_in(f.read(_RESYNC_BLOCK + _HEAD.size), f, start, size)
        if found is not None:
            return found
        start += _RESYNC_BLOCK
    return None


class RecordWriter:
    """Appends records to a file, creating it with its header if needed.

    A write that fails (a full disk) leaves the file with its whole records only: the
    writer truncates it to its length before that write and forgets the records it held
    back (``flush=False``), which are the caller's to redo, as after a kill. So a record
    whose append raised never reaches the file later, when space is freed."""

    #: Bytes of ``flush=False`` appends held back before they are handed to the OS.
    HOLD_BYTES = io.DEFAULT_BUFFER_SIZE

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._held = bytearray()  # appended, not yet handed to the OS
        self._size = 0  # bytes of the file: its header and whole records

    def open(self) -> None:
        if self.path.exists():
            repair(self.path)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
            self._size = os.fstat(self._fd).st_size
            return
        # the header written to <name>.tmp, renamed into place; the descriptor stays
        # open on the renamed file (a new BEAST queue file: one open, not three)
        fresh = f"{self.path}.tmp"
        fd = os.open(fresh, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            if os.write(fd, MAGIC) != len(MAGIC):
                raise OSError(f"short write of the header of {fresh}")
            os.replace(fresh, self.path)
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._size = fd, len(MAGIC)

    def append(self, payload: bytes, *, flush: bool = True) -> None:
        """Append one record (not empty), handed to the OS before this returns unless
        ``flush`` is False: then it may be held back until :meth:`flush`."""
        assert self._fd is not None, "open() first"
        assert payload, "an empty record (see _whole_record_in)"
        self._held += _HEAD.pack(len(payload), zlib.crc32(payload))
        self._held += payload
        if flush or len(self._held) >= self.HOLD_BYTES:
            self.flush()

    def append_many(self, payloads: list[bytes], *, flush: bool = True) -> None:
        """append() each of ``payloads``, framed in one pass."""
        assert self._fd is not None, "open() first"
        assert all(payloads), "an empty record (see _whole_record_in)"
        self._held += b"".join([_HEAD.pack(len(p), zlib.crc32(p)) + p for p in payloads])
        if flush or len(self._held) >= self.HOLD_BYTES:
            self.flush()

    def flush(self) -> None:
        """Hand the records held back to the OS (all of them, or none: see the class)."""
        assert self._fd is not None, "open() first"
        held, self._held = memoryview(self._held), bytearray()
        written = 0
        try:
            while written < len(held):
                written += os.write(self._fd, held[written:])
        except OSError:
            os.ftruncate(self._fd, self._size)
            raise
        self._size += written

    def close(self) -> None:
        """Flush, then close the file (even when the flush fails, which then raises)."""
        if self._fd is None:
            return
        try:
            self.flush()
        finally:
            os.close(self._fd)
            self._fd = None
