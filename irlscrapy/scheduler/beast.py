"""BEAST: Budget Enforcement with Anti-Spam Tactics (IRLbot, seeds/003 section VII.B).

Theory of operation
-------------------
Queues are *slots* read one after another: the reader takes records from slot ``r``
(the current queue, Q1 in the paper's Fig. 5) and, when it is empty, moves on to
``r + 1``. While slot ``r`` is read, the window of writable slots is ``r+1 .. r+j-1``
(Q2..Qj, wrapping around as the reader moves on). A record of domain ``x`` with
budget ``B_x`` goes to the first slot of the window in which ``x`` still has budget:
the first ``B_x`` of ``x``'s records into one slot, the next ``B_x`` into the next,
and what fits in no slot of the window into QF. Nothing is discarded.

A *cycle* is ``j`` slots read. When a cycle ends, QF is read once and re-split with
``j`` doubled (up to ``max_queues``): its records go through the same placement with
the larger window, and what still does not fit is written to a new QF. So QF is
re-read at exponentially growing intervals, which bounds disk I/O per crawled page
(Theorem 7) where re-reading it after every queue does not (Theorem 6).

RAM per domain is one (slot, fill) pair: the slot where the domain's next record goes
and how many of its records that slot already holds. Placement is per-domain FIFO: a
domain's records are read in the order they were pushed.

Invariants:
*Every pushed record is popped exactly once* (while the object lives; persistence
across restarts is the scheduler's, built on these files).
*No slot holds more than B_x records of domain x, with B_x as it was at each push.*
*A record pushed while slot r is read is never placed in a slot <= r.*

Files: ``slot-<s>.rec`` and ``qf-<n>.rec`` under the directory, each an
:mod:`irlscrapy.recordfile` whose records are ``domain: u64be, payload``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from pathlib import Path

from irlscrapy.exceptions import ConfigurationError
from irlscrapy.recordfile import RECORD_OVERHEAD, RecordWriter, scan

_DOMAIN = struct.Struct(">Q")


class Beast:
    def __init__(
        self,
        path: Path | str,
        budget_of: Callable[[int], int],
        *,
        initial_queues: int = 2,
        max_queues: int = 1024,
    ) -> None:
        if not 2 <= initial_queues <= max_queues:
            raise ConfigurationError(
                f"BEAST needs 2 <= initial_queues ({initial_queues}) <= max_queues ({max_queues})"
            )
        self.path = Path(path)
        self.budget_of = budget_of  # the domain's current budget B_x (>= 1)
        self.max_queues = max_queues
        self.j = initial_queues
        self.reading = 0  # slot r
        self.cycle_end = initial_queues  # the slot that starts the next cycle
        self._domains: dict[int, tuple[int, int]] = {}  # domain -> (slot, fill)
        self._writers: dict[int, RecordWriter] = {}
        self._counts: dict[int, int] = {}  # slot -> records not yet popped
        self._reader: Iterator[tuple[int, bytes]] | None = None
        self._qf_generation = 0
        self._qf: RecordWriter | None = None
        self.qf_records = 0
        self.qf_resplits = 0
        #: record bytes appended to and read from queue files (framing included): the
        #: disk I/O that Theorems 6 and 7 count
        self.bytes_written = 0
        self.bytes_read = 0

    def open(self) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        if any(self.path.glob("*.rec")):
            raise ConfigurationError(
                f"{self.path} already holds BEAST queues; resuming them is not supported "
                "yet: use an empty directory"
            )
        self._qf = self._writer(self._qf_path(0))

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        if self._qf is not None:
            self._qf.close()
            self._qf = None

    def __len__(self) -> int:
        return sum(self._counts.values()) + self.qf_records

    # -- placement -------------------------------------------------------------------
    def push(self, domain: int, payload: bytes) -> int | None:
        """Place one record; return its slot, or None when it went to QF."""
        slot = self._place(domain)
        record = _DOMAIN.pack(domain) + payload
        self.bytes_written += len(record) + RECORD_OVERHEAD
        if slot is None:
            assert self._qf is not None, "open() first"
            self._qf.append(record)
            self.qf_records += 1
            return None
        writer = self._writers.get(slot)
        if writer is None:
            writer = self._writers[slot] = self._writer(self._slot_path(slot))
        writer.append(record)
        self._counts[slot] = self._counts.get(slot, 0) + 1
        return slot

    def _place(self, domain: int) -> int | None:
        budget = max(1, self.budget_of(domain))
        slot, fill = self._domains.get(domain, (0, 0))
        if slot <= self.reading:
            slot, fill = self.reading + 1, 0
        if fill >= budget:
            slot, fill = slot + 1, 0
        if slot > self.reading + self.j - 1:
            return None
        self._domains[domain] = (slot, fill + 1)
        return slot

    # -- reading ---------------------------------------------------------------------
    def pop(self) -> tuple[int, bytes] | None:
        """The next (domain, payload) in queue order, or None when BEAST is empty."""
        while len(self):
            if self._counts.get(self.reading, 0):
                if self._reader is None:
                    self._close_writer(self.reading)
                    self._reader = scan(self._slot_path(self.reading))
                _, record = next(self._reader)
                self.bytes_read += len(record) + RECORD_OVERHEAD
                self._counts[self.reading] -= 1
                return _DOMAIN.unpack_from(record)[0], record[_DOMAIN.size :]
            self._advance()
        return None

    def _advance(self) -> None:
        """Slot ``reading`` is empty: drop it, move on, and end the cycle if it is over."""
        self._reader = None
        self._counts.pop(self.reading, None)
        self._close_writer(self.reading)
        self._slot_path(self.reading).unlink(missing_ok=True)
        self.reading += 1
        if self.reading >= self.cycle_end:
            self.j = min(2 * self.j, self.max_queues)
            self.cycle_end = self.reading + self.j
            self._resplit_qf()

    def _resplit_qf(self) -> None:
        """Read QF once; place its records with the doubled window; the rest into a new QF."""
        assert self._qf is not None
        self._qf.close()
        old = self._qf_path(self._qf_generation)
        self._qf_generation += 1
        self._qf = self._writer(self._qf_path(self._qf_generation))
        self.qf_records = 0
        self.qf_resplits += 1
        for _, record in scan(old):
            self.bytes_read += len(record) + RECORD_OVERHEAD
            self.push(_DOMAIN.unpack_from(record)[0], record[_DOMAIN.size :])
        old.unlink()

    # -- files -----------------------------------------------------------------------
    def _writer(self, path: Path) -> RecordWriter:
        writer = RecordWriter(path)
        writer.open()
        return writer

    def _close_writer(self, slot: int) -> None:
        writer = self._writers.pop(slot, None)
        if writer is not None:
            writer.close()

    def _slot_path(self, slot: int) -> Path:
        return self.path / f"slot-{slot}.rec"

    def _qf_path(self, generation: int) -> Path:
        return self.path / f"qf-{generation}.rec"
