"""Append-only files of length-prefixed, checksummed records.

Format (all integers big-endian)::

    file    := header record*
    header  := magic: 8 bytes = b"IRLREC\\x00\\x01"     # DO NOT CHANGE: format version 1
    record  := length: u32, crc32: u32, payload: length bytes
               crc32 is zlib.crc32 of the payload

Crash semantics: :meth:`RecordWriter.append` hands the record to the OS before it
returns (``flush``), so a kill -9 of the process loses nothing appended; a power loss
may lose what the OS had not written yet (no fsync: a documented non-goal). A record
cut short by a crash during ``append`` is detected on read (short length or bad CRC)
and ignored, and :func:`repair` truncates the file before it, so appends continue
after the last whole record. A bad record that is *not* at the end is corruption and
raises :class:`CorruptRecordFile`.

A new file appears under its name only with its header whole: the header is written
to ``<name>.tmp`` and renamed into place, so a kill -9 while a file is being created
leaves no headerless file behind (only a stray ``.tmp``, overwritten next time).
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from irlscrapy.exceptions import CorruptRecordFile

MAGIC = b"IRLREC\x00\x01"
_HEAD = struct.Struct(">II")
RECORD_OVERHEAD = _HEAD.size  # bytes of framing per record
MAX_RECORD = 1 << 30


def scan(path: Path) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, payload)`` of every whole record; stop at a torn tail."""
    with open(path, "rb") as f:
        if f.read(len(MAGIC)) != MAGIC:
            raise CorruptRecordFile(f"{path} is not a record file (bad header)")
        size = os.fstat(f.fileno()).st_size
        offset = len(MAGIC)
        while offset < size:
            head = f.read(_HEAD.size)
            if len(head) < _HEAD.size:
                return
            length, crc = _HEAD.unpack(head)
            end = offset + _HEAD.size + length
            if length > MAX_RECORD or end > size:
                return _torn(path, end, size)
            payload = f.read(length)
            if zlib.crc32(payload) != crc:
                return _torn(path, end, size)
            yield offset, payload
            offset = end


def _torn(path: Path, end: int, size: int) -> None:
    if end < size:
        raise CorruptRecordFile(
            f"{path}: a damaged record before the end of the file; restore the state "
            "directory from a backup or start a new one"
        )


def repair(path: Path) -> int:
    """Truncate a torn trailing record; return the length of the whole records."""
    end = len(MAGIC)
    for offset, payload in scan(path):
        end = offset + _HEAD.size + len(payload)
    if path.stat().st_size != end:
        os.truncate(path, end)
    return end


class RecordWriter:
    """Appends records to a file, creating it with its header if needed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: BinaryIO | None = None

    def open(self) -> None:
        if self.path.exists():
            repair(self.path)
        else:
            fresh = self.path.with_name(self.path.name + ".tmp")
            fresh.write_bytes(MAGIC)
            os.replace(fresh, self.path)
        self._file = open(self.path, "ab")  # noqa: SIM115 -- held until close()

    def append(self, payload: bytes) -> int:
        """Append one record; return the file size after it."""
        assert self._file is not None, "open() first"
        self._file.write(_HEAD.pack(len(payload), zlib.crc32(payload)) + payload)
        self._file.flush()
        return self._file.tell()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
