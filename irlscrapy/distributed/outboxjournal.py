"""The outbox on disk: what an agent has to send to other agents, until Redis has it.

A page's links are handed over (and the page marked done) as soon as the agent routes
them; the foreign ones then wait in the outbox for their batch. So that a kill -9
cannot lose them, every routed record is appended to this journal first (an
:mod:`irlscrapy.recordfile`, flushed to the OS on return, as DRUM's journal).

Generations ``outbox-<n>.rec``: appends go to the newest. A *checkpoint* starts a new
generation and retires the older ones; the agent deletes the retired files once every
record routed before the checkpoint is in Redis (its batch is sent by age, within
``IRL_EXCHANGE_AGE``). On open, records
left by a previous run are read back to be sent again (the owner's URLseen drops those
that arrived before), copied into the new generation before the old files go, so they
are on disk at every instant. The files hold the outbox of a checkpoint interval and a
batch age, and of the time Redis was away (the spill the multi-agent mode needs).

Record: ``partition: u16be`` then a chunk bound for that partition
(:meth:`irlscrapy.distributed.streams.Batch.encode`), the bytes the outbox sends.
"""

from __future__ import annotations

import struct
from pathlib import Path

from irlscrapy.recordfile import RecordWriter, repair, scan

_PARTITION = struct.Struct(">H")


class OutboxJournal:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._writer: RecordWriter | None = None
        self._generation = 0

    def open(self) -> list[tuple[int, bytes]]:
        """Start a new generation; return the (partition, chunk) a previous run left
        unsent (they are in the new generation already)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        older = self._generations()
        self._generation = _number(older[-1]) + 1 if older else 0
        self._start()
        left = []
        for path in older:
            repair(path)
            for _, record in scan(path):
                left.append(_decode(record))
                self._append(record)
        for path in older:
            path.unlink()
        return left

    def append(self, partition: int, chunk: bytes) -> None:
        self._append(_PARTITION.pack(partition) + chunk)

    def checkpoint(self) -> list[Path]:
        """Start a new generation; return the older ones (the caller deletes them once
        what they hold is sent)."""
        self.close()
        older = self._generations()
        self._start()
        return older

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def remove_all(self) -> None:
        """Everything was sent: no file is needed any more."""
        self.close()
        for path in self._generations():
            path.unlink()

    def _append(self, record: bytes) -> None:
        assert self._writer is not None, "open() first"
        self._writer.append(record)

    def _start(self) -> None:
        self.close()
        self._writer = RecordWriter(self.directory / f"outbox-{self._generation}.rec")
        self._writer.open()
        self._generation += 1

    def _generations(self) -> list[Path]:
        """The generation files but the one being written, oldest first."""
        current = self._writer.path if self._writer is not None else None
        found = (p for p in self.directory.glob("outbox-*.rec") if p != current)
        return sorted(found, key=_number)


def _number(path: Path) -> int:
    return int(path.stem.rsplit("-", 1)[1])


def _decode(record: bytes) -> tuple[int, bytes]:
    (partition,) = _PARTITION.unpack_from(record)
    return partition, record[_PARTITION.size :]
