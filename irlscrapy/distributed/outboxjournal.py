"""The outbox on disk: what an agent has to send to other agents, until Redis has it.

A page's links are handed over (and the page marked done) as soon as the agent routes
them; the foreign ones then wait in the outbox for their batch. So that a kill -9
cannot lose them, every routed record is appended to this journal first (an
:mod:`irlscrapy.storage.recordfile`, flushed to the OS on return, as DRUM's journal).

Generations ``outbox-<n>.rec``: appends go to the newest. A *checkpoint* starts a new
generation and retires the older ones; they are deleted once every record routed before
the checkpoint is in Redis (its batch is sent by age, within ``IRL_EXCHANGE_AGE``).

*Spilling.* While Redis is away the agent holds what it has to send in RAM, up to a
bound; past it, it lets go of all of it (:meth:`OutboxJournal.spill`): every record it
held is in a generation already, so a new one starts and the older ones are read back
(:meth:`OutboxJournal.replay`, a bounded chunk a tick) once Redis is back, and deleted
once sent. RAM holds the bound, the disk holds the outage. On open, the generations a
previous run left are spilled the same way, to be sent again (the owner's URLseen drops
what arrived before). So the files hold the outbox of a checkpoint interval and a batch
age, and of the time Redis was away.

Record: ``partition: u16be`` then a chunk bound for that partition
(:meth:`irlscrapy.distributed.streams.Batch.encode`), the bytes the outbox sends.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterator
from pathlib import Path

from irlscrapy.storage.recordfile import RecordWriter, repair, scan

_PARTITION = struct.Struct(">H")


class OutboxJournal:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._writer: RecordWriter | None = None
        self._generation = 0
        #: (when, the generations a checkpoint then retired): they go once no record
        #: routed before then is left to send (retire())
        self._retiring: list[tuple[float, list[Path]]] = []
        #: spilled generations, to read back (replay()), oldest first
        self._spilled: list[Path] = []
        self._reading: Iterator[tuple[int, bytes]] | None = None  # of _spilled[0]
        self._read_back: list[Path] = []  # read back whole, to delete once sent

    def open(self) -> None:
        """Start a new generation; what a previous run left is spilled (replay() reads
        it back, to be sent again)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        older = self._generations()
        self._generation = _number(older[-1]) + 1 if older else 0
        for path in older:
            repair(path)  # a torn last record: the kill came before its page was done
        self._start()
        self._spilled = older

    def append(self, partition: int, chunk: bytes) -> None:
        self._append(_PARTITION.pack(partition) + chunk)

    def checkpoint(self, now: float) -> None:
        """Start a new generation; the older ones wait for retire()."""
        held = self._held()
        self._start()
        self._retiring.append((now, [p for p in self._generations() if p not in held]))

    def retire(self, oldest_unsent: float | None) -> None:
        """Everything sent so far is in Redis: delete the generations retired before the
        oldest record still to send came (``oldest_unsent``; None: nothing is left)."""
        while self._retiring and (oldest_unsent is None or oldest_unsent > self._retiring[0][0]):
            for path in self._retiring.pop(0)[1]:
                path.unlink(missing_ok=True)

    # -- spilling ------------------------------------------------------------------------
    @property
    def spilling(self) -> bool:
        """Are records of spilled generations still to send?"""
        return bool(self._spilled or self._read_back)

    def spill(self) -> None:
        """The agent lets go of every record it holds to send (Redis is away and they
        are too many for RAM): they are all in the generations but the newest, which
        starts now; replay() reads them back (records sent before come again: the
        owners drop what they have)."""
        self._start()
        self._retiring = []
        self._spilled = self._generations()
        self._read_back = []
        self._reading = None

    def replay(self, limit: int) -> list[tuple[int, bytes]]:
        """Up to ``limit`` records of the spilled generations, in order."""
        records: list[tuple[int, bytes]] = []
        while self._spilled and len(records) < limit:
            if self._reading is None:
                self._reading = self.read(self._spilled[0])
            before = len(records)
            records += itertools.islice(self._reading, limit - len(records))
            if len(records) - before < limit - before:  # the file is read whole
                self._read_back.append(self._spilled.pop(0))
                self._reading = None
        return records

    def replayed(self) -> None:
        """What replay() returned is in Redis: delete the generations it read whole."""
        for path in self._read_back:
            path.unlink(missing_ok=True)
        self._read_back = []

    @staticmethod
    def read(path: Path) -> Iterator[tuple[int, bytes]]:
        for _, record in scan(path):
            yield _decode(record)

    # -- files ---------------------------------------------------------------------------
    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def remove_all(self) -> None:
        """Everything was sent: no file is needed any more."""
        self.close()
        for path in self._generations():
            path.unlink()

    def _held(self) -> set[Path]:
        """Generations waiting to be retired or read back."""
        waiting = [p for _, paths in self._retiring for p in paths]
        return {*waiting, *self._spilled, *self._read_back}

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
