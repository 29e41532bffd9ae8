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
the larger window, and what still does not fit is written to a new QF (an empty QF is
left as it is). So QF is re-read at exponentially growing intervals, which bounds disk
I/O per crawled page (Theorem 7) where re-reading it after every queue does not (6).

*A re-split runs in slices.* At 10^8 pages QF holds hundreds of millions of records:
a re-split done at once would stop the crawler for minutes. Given ``on_resplit``, BEAST
begins one where the cycle ends, calls ``on_resplit()``, and the caller calls
:meth:`Beast.resplit_step` (a bounded number of records each) until it returns False.
The reader goes on through its slot meanwhile (a re-split never places into it); once
that slot is read, :meth:`Beast.pop` returns None until the re-split is done
(:meth:`Beast.available`). Pushes meanwhile go to a *pending* file: a kill undoes a
re-split's placements, which must not take them along. So a re-split is a series of
*phases*: the first places the old QF, each next one the pending file of the one
before, until one ends with at most a slice pending, placed with it. Without
``on_resplit`` (no event loop: a tool) a re-split runs to its end where it begins.

*j grows with the crawl, not with the reading.* The paper's queues are full: each holds
``E[B_x] V`` records, so after ``N`` records taken the last cycle has
``j = 2**(ceil(log2(alpha_N + 1)) - 1)`` queues, ``alpha_N = N / (E[B_x] V)`` (eq. 31).
A small frontier has near-empty slots, and reading through them costs nothing: doubling
at every cycle end would take j to ``max_queues`` within seconds, on a few hundred
records. So a cycle end doubles j only up to eq. 31's value for the crawl's own
figures: ``N`` the records taken (popped and not given back, see ``push(returned=)``),
``V`` the distinct domains ever pushed (:class:`DistinctCount`), ``E[B_x]`` their mean
budget at placement. j never shrinks.

RAM per domain is one (slot, fill) pair, packed in one int: the slot where the domain's
next record goes and how many of its records that slot already holds; and only for
domains placed in a slot not yet read (a pair whose slot was read means the same as no
pair, so such pairs are dropped whenever they outnumber the others). Placement is
per-domain FIFO: a domain's records are read in the order they were pushed.

Invariants:
*Every pushed record is popped exactly once*, across close and reopen; after a kill -9,
records popped since the position the caller gives :meth:`Beast.open` are popped again.
*No slot holds more than B_x records of domain x, with B_x as it was at each push.*
*A record pushed while slot r is read is never placed in a slot <= r.*

Files under the directory::

    slot-<s>.rec   queue s: an irlscrapy.storage.recordfile of records  domain: u64be, payload
    qf-<n>.rec     QF, generation n (same records)
    pending-<n>.rec  pushes that arrived during a re-split's phase (same records)
    state.json     {"version": 1, "reading": r, "j": j, "cycle_end": e, "qf": n,
                    "resplit": null | {"slot_sizes": {"<s>": bytes, ...}, "qf_size":
                                       bytes, "sources": [file, ...], "pending": file},
                    "taken": N, "budget_sum": sum of budgets at placement,
                    "placed": placements, "domains": DistinctCount.state(),
                    "slots": [s, ...], "ends_marked": true}
                   (the last six are optional: a file without them reads as zeros,
                   "slots" as none and "ends_marked" as false)

Crash semantics: every push is appended and flushed before push() returns, so a kill -9
loses none (a phase's placements are flushed once, before the state that ends it: one
cut short is redone anyway). ``state.json`` is replaced atomically (write, rename; like
the record files it is not fsynced: a power loss is out of scope, a kill -9 is not) at
each phase's start and end, when j grows and on close, not each time the reader moves
to the next slot (a rename can block the reactor for 100 ms under write load) nor at a
cycle end that re-splits nothing: a slot's file is deleted once it is read, so after a
kill -9 a ``reading`` that lags behind finds the slots it missed gone, and the caller's
position (below) moves it to the slot really being read; a ``cycle_end`` that lags
behind ends the current cycle at the next slot change. A phase records the sizes of
the slot files and of the new QF it may append to, its sources and its pending file:
one cut short is undone (those files truncated back) and begun again on open, from its
sources and pending file (a recovery: :mod:`irlscrapy.storage.recovery`; so is a first
open a crash cut short; a state.json of an irlscrapy that re-split at once names no
sources: its QF is the source, and the next QF is removed). Where the
reader stood inside slot ``r`` is the caller's to remember (the scheduler journals each
record it takes, with its position, see :attr:`Beast.position`) and to pass to
:meth:`Beast.open`. On open, the per-domain (slot, fill) pairs and the counts are
rebuilt by one scan of the queue files (``visit`` sees every record then).

A slot read to its end is *marked* before its file is deleted: ``on_slot_read`` (the
caller's) is called with it, and the caller moves its position past the slot, to
``(slot + 1, -1)``, durably (the scheduler appends a cursor record to its journal). So
a position ``(s, offset >= 0)`` says slot ``s`` is being read and its file is there.

Missing files are damage (:func:`missing_queue_files`): ``qf-<qf>.rec`` always exists
(a first open creates it before state.json; a re-split deletes the old QF only after
state.json names the new one), and so do a re-split's sources; so does every slot that
state.json lists in ``slots`` (the slots past ``reading`` that held records when it was
saved) that the caller's position has not passed, since a slot file is deleted only
once the reader has taken its last record; and so does the slot of a position
``(s, offset >= 0)``, as its end is marked before its file goes (a state.json without
``ends_marked``, written before slots' ends were marked, leaves that slot unchecked
until its end is marked).
"""

from __future__ import annotations

import itertools
import math
import struct
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np

from irlscrapy.exceptions import ConfigurationError, DamagedState
from irlscrapy.scheduler.frontier.beaststate import (
    STATE_VERSION,
    file_number,
    missing_queue_files,
    read_state,
    undo_phase,
)
from irlscrapy.scheduler.frontier.distinct import DistinctCount
from irlscrapy.scheduler.frontier.placement import TO_QF, Placement, by_slot
from irlscrapy.storage import faulthooks
from irlscrapy.storage.jsonfile import replace_json
from irlscrapy.storage.recordfile import MAGIC, RECORD_OVERHEAD, RecordWriter, scan
from irlscrapy.storage.recovery import recovered

_DOMAIN = struct.Struct(">Q")
#: Records a re-split places per resplit_step() by default: a few milliseconds.
RESPLIT_SLICE = 2048


class _Phase:
    """A re-split's phase: placing ``sources`` (``left`` records to go), pushes meanwhile
    to ``pending``; ``state``: the state.json that began it (saved again on close)."""

    def __init__(
        self, sources: list[Path], left: int, pending: RecordWriter, state: dict[str, object]
    ) -> None:
        self.sources = sources
        self.reader = itertools.chain.from_iterable(scan(path) for path in sources)
        self.left = left
        self.pending = pending
        self.pending_records = 0
        self.state = state


class Beast:
    def __init__(
        self,
        path: Path | str,
        budget_of: Callable[[int], int],
        *,
        initial_queues: int = 2,
        max_queues: int = 1024,
        on_slot_read: Callable[[int], None] | None = None,
        on_resplit: Callable[[], None] | None = None,
        discard: Callable[[Path], None] = lambda path: path.unlink(missing_ok=True),
    ) -> None:
        if not 2 <= initial_queues <= max_queues:
            raise ConfigurationError(
                f"BEAST needs 2 <= initial_queues ({initial_queues}) <= max_queues ({max_queues})"
            )
        self.path = Path(path)
        #: each domain's next slot, and eq. 31's figures of the placements
        self.placement = Placement(budget_of)
        #: called with a slot read to its end, before its file is deleted: the caller
        #: moves its position past it (module docstring)
        self.on_slot_read = on_slot_read
        #: called when a re-split's phase begins: the caller runs resplit_step() until
        #: it returns False (None: a re-split runs to its end at once; module docstring)
        self.on_resplit = on_resplit
        #: deletes a queue file BEAST is done with (a read slot, a placed source; its
        #: name is never used again, so a crawl may delete it later, off its reactor:
        #: unlinking a file of gigabytes takes 100+ ms; one left by a kill goes on open)
        self.discard = discard
        self.max_queues = max_queues
        self.j = initial_queues
        self.reading = 0  # slot r
        self.cycle_end = initial_queues  # the slot that starts the next cycle
        self._writers: dict[int, RecordWriter] = {}
        self._counts: dict[int, int] = {}  # slot -> records not yet popped
        self._slot_records = 0  # the sum of _counts (len() is called per admitted record)
        self._reader: Iterator[tuple[int, bytes]] | None = None
        #: (slot, offset) of the record the last pop() returned
        self.position: tuple[int, int] = (-1, -1)
        self._qf_generation = 0
        self._qf: RecordWriter | None = None
        self.qf_records = 0
        self.qf_resplits = 0
        self._phase: _Phase | None = None  # a re-split's phase in flight
        self._pending_number = 0  # of the next phase's pending file
        self._skip = -1  # records of the reading slot at offsets <= this were taken already
        #: record bytes appended to and read from queue files (framing included): the
        #: disk I/O that Theorems 6 and 7 count
        self.bytes_written = 0
        self.bytes_read = 0
        self.taken = 0  # records taken: eq. 31's N

    def open(
        self,
        read_past: tuple[int, int] | None = None,
        visit: Callable[[bytes], None] | None = None,
    ) -> None:
        """Create the directory's queues, or resume them. ``read_past``: the position
        (:attr:`position`) of the last record already taken; records of the current slot
        up to it are not popped again. ``visit`` sees the payload of every queued record."""
        self.path.mkdir(parents=True, exist_ok=True)
        if read_past is not None:
            self.position = read_past
        state_file = self.path / "state.json"
        if not state_file.exists():
            # (a first open creates qf-0.rec, with its header only, before state.json)
            found = [p.stat().st_size for p in self.path.glob("*.rec")]
            if any(size > len(MAGIC) for size in found):
                raise DamagedState(
                    state_file, "missing, and the queue files beside it cannot be read without it"
                )
            self._qf = self._writer(self._qf_path(0))
            self._save_state()
            if found:  # a kill -9 cut that first open short
                recovered("first_open", self.path)
            return
        self._resume(read_state(state_file), read_past, visit)

    def _resume(
        self,
        state: dict[str, object],
        read_past: tuple[int, int] | None,
        visit: Callable[[bytes], None] | None,
    ) -> None:
        if state.get("version") != STATE_VERSION:
            raise ConfigurationError(
                f"{self.path}/state.json has version {state.get('version')}, this irlscrapy "
                f"reads version {STATE_VERSION}: start with a new state directory"
            )
        self.reading = int(state["reading"])  # type: ignore[call-overload]
        if read_past is not None and read_past[0] > self.reading:
            self.reading = read_past[0]  # state.json is not saved at every slot change
        self.j = int(state["j"])  # type: ignore[call-overload]
        self.cycle_end = int(state["cycle_end"])  # type: ignore[call-overload]
        self._qf_generation = int(state["qf"])  # type: ignore[call-overload]
        self.taken = int(state.get("taken", 0))  # type: ignore[call-overload]
        self.placement.restore(state)
        for damage in missing_queue_files(self.path, state, read_past):
            raise damage
        resplit = state.get("resplit")
        sources: list[Path] = []
        if isinstance(resplit, dict):  # a phase cut short: undone here, begun again below
            self._qf_generation, sources = undo_phase(self.path, resplit, self._qf_generation)
        for path in [*self.path.glob("qf-*.rec"), *self.path.glob("pending-*.rec")]:
            if path != self._qf_path(self._qf_generation) and path not in sources:
                path.unlink()  # a source a phase placed, or a new QF no state.json named
        if (
            not state.get("ends_marked")
            and read_past
            and read_past[1] >= 0
            and not self._slot_path(read_past[0]).exists()
        ):
            self._mark_read(read_past[0])  # read to its end by an irlscrapy that did not mark
        for path in self.path.glob("slot-*.rec"):
            slot = file_number(path)
            if slot < self.reading:
                path.unlink()
                continue
            for offset, record in scan(path):
                domain = _DOMAIN.unpack_from(record)[0]
                if (
                    slot == self.reading
                    and read_past
                    and read_past[0] == slot
                    and (offset <= read_past[1])
                ):
                    continue  # taken before the restart
                self._counts[slot] = self._counts.get(slot, 0) + 1
                self._slot_records += 1
                if visit is not None:
                    visit(record[_DOMAIN.size :])
                self.placement.found(domain, slot)
            if slot == self.reading and read_past and read_past[0] == slot:
                self._skip = read_past[1]
        qf = self._qf_path(self._qf_generation)
        left = 0
        for path in [qf, *sources] if qf.exists() else sources:
            for _, record in scan(path):
                left += 1
                if visit is not None:
                    visit(record[_DOMAIN.size :])
            if path == qf:
                self.qf_records, left = left, 0
        self._qf = self._writer(qf)
        pendings = self.path.glob("pending-*.rec")
        self._pending_number = 1 + max(map(file_number, pendings), default=-1)
        if sources:
            self._begin_phase(sources, left)

    def _save_state(self) -> None:
        """Write state.json (during a re-split's phase: the one that began it, with the
        records taken since)."""
        phase = self._phase
        state = {**phase.state, "taken": self.taken} if phase else self._state(None)
        replace_json(self.path / "state.json", state)

    def _state(self, resplit: dict[str, object] | None) -> dict[str, object]:
        return {
            "version": STATE_VERSION,
            "reading": self.reading,
            "j": self.j,
            "cycle_end": self.cycle_end,
            "qf": self._qf_generation,
            "resplit": resplit,
            "taken": self.taken,
            **self.placement.state(),
            "slots": sorted(s for s, n in self._counts.items() if n and s > self.reading),
            "ends_marked": True,
        }

    def close(self) -> None:
        """Save the state and close the files (a re-split's phase in flight is undone and
        done again on open)."""
        if self._qf is not None:
            self._save_state()
        if self._phase is not None:
            self._phase.pending.close()
            self._phase = None
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        if self._qf is not None:
            self._qf.close()
            self._qf = None

    @property
    def budget_of(self) -> Callable[[int], int]:
        return self.placement.budget_of

    @property
    def domains(self) -> DistinctCount:
        """The distinct domains placed (estimated): eq. 31's V."""
        return self.placement.domains

    def __len__(self) -> int:
        phase = self._phase
        waiting = phase.left + phase.pending_records if phase is not None else 0
        return self._slot_records + self.qf_records + waiting

    @property
    def resplitting(self) -> bool:
        """Is a re-split in flight?"""
        return self._phase is not None

    def available(self) -> bool:
        """May pop() return a record now? Not while a re-split is in flight and the
        slot being read is read: the next one is not whole yet."""
        return bool(self._counts.get(self.reading)) or (self._phase is None and len(self) > 0)

    # -- placement -------------------------------------------------------------------
    def push(self, domain: int, payload: bytes, *, returned: bool = False) -> int | None:
        """Place one record; return its slot, or None when it went to QF or waits for the
        re-split in flight. ``returned``: a record just popped and given back untaken
        (its host is full): not counted as taken, so it cannot make j grow."""
        if returned:
            self.taken -= 1
        if self._phase is None:
            return self._append(domain, payload, flush=True)
        self._to_pending(self._phase, domain, payload, flush=True)
        return None

    def push_many(self, records: Iterable[tuple[int, bytes]]) -> None:
        """push() each ``(domain, payload)``, in one write per queue file: a kill may
        have stored any of them, not a prefix."""
        phase = self._phase
        if phase is not None:
            for domain, payload in records:
                self._to_pending(phase, domain, payload, flush=False)
            phase.pending.flush()
            return
        slots = {self._append(domain, payload, flush=False) for domain, payload in records}
        for slot in slots:  # the files written to, QF's being slot None
            writer = self._qf if slot is None else self._writers[slot]
            assert writer is not None
            writer.flush()

    def _to_pending(self, phase: _Phase, domain: int, payload: bytes, *, flush: bool) -> None:
        record = _DOMAIN.pack(domain) + payload
        self.bytes_written += len(record) + RECORD_OVERHEAD
        phase.pending.append(record, flush=flush)
        phase.pending_records += 1

    def _append(self, domain: int, payload: bytes, *, flush: bool) -> int | None:
        slot = self._place(domain)
        record = _DOMAIN.pack(domain) + payload
        self.bytes_written += len(record) + RECORD_OVERHEAD
        self._store(TO_QF if slot is None else slot, [record], flush=flush)
        return slot

    def _store(self, slot: int, records: list[bytes], *, flush: bool) -> None:
        """Append ``records`` to the file of ``slot`` (TO_QF: QF's)."""
        if slot == TO_QF:
            assert self._qf is not None, "open() first"
            self._qf.append_many(records, flush=flush)
            self.qf_records += len(records)
            return
        writer = self._writers.get(slot)
        if writer is None:
            writer = self._writers[slot] = self._writer(self._slot_path(slot))
        writer.append_many(records, flush=flush)
        self._counts[slot] = self._counts.get(slot, 0) + len(records)
        self._slot_records += len(records)

    def _place(self, domain: int) -> int | None:
        return self.placement.one(domain, self.reading, self.reading + self.j - 1)

    # -- reading ---------------------------------------------------------------------
    def pop(self) -> tuple[int, bytes] | None:
        """The next (domain, payload) in queue order, or None when BEAST is empty."""
        while len(self):
            if self._counts.get(self.reading, 0):
                if self._reader is None:
                    self._close_writer(self.reading)
                    self._reader = scan(self._slot_path(self.reading))
                offset, record = next(self._reader)
                self.bytes_read += len(record) + RECORD_OVERHEAD
                if offset <= self._skip:
                    continue  # taken before a restart (not counted)
                self._counts[self.reading] -= 1
                self._slot_records -= 1
                self.taken += 1
                self.position = (self.reading, offset)
                return _DOMAIN.unpack_from(record)[0], record[_DOMAIN.size :]
            if self._phase is not None:
                return None  # the next slot is not whole until the re-split is done
            self._advance()
        return None

    def records(self) -> Iterator[bytes]:
        """The payload of every queued record, without taking any (an agent leaving a
        multi-agent crawl hands its queues over: irlscrapy.distributed.leave). A re-split
        in flight is done first."""
        self._finish_resplit()
        for slot in sorted(self._counts):
            if not self._counts[slot]:
                continue
            taken = self._skip
            if self.position[0] == slot:
                taken = max(taken, self.position[1])
            for offset, record in scan(self._slot_path(slot)):
                if slot == self.reading and offset <= taken:
                    continue  # popped already
                yield record[_DOMAIN.size :]
        if self.qf_records:
            for _, record in scan(self._qf_path(self._qf_generation)):
                yield record[_DOMAIN.size :]

    def _advance(self) -> None:
        """Slot ``reading`` is empty: drop it, move on, and end the cycle if it is over."""
        if self.position[0] == self.reading:  # records were taken from it: mark its end
            self._mark_read(self.reading)
        self._reader = None
        self._skip = -1
        self._counts.pop(self.reading, None)
        self._close_writer(self.reading)
        done = self._slot_path(self.reading)
        self.reading += 1
        self.placement.forget_before(self.reading + 1)
        if self.reading >= self.cycle_end:
            self._end_cycle()
        self.discard(done)

    def _end_cycle(self) -> None:
        """Start the next cycle with :meth:`next_j` queues and re-split QF with them. An
        empty QF has nothing to re-split: then state.json is saved only if j grew (a
        small frontier ends a cycle every few records, see the module docstring)."""
        j = self.next_j()
        grew = j != self.j
        self.j = j
        self.cycle_end = self.reading + j
        if self.qf_records:
            self._begin_resplit()
        elif grew:
            self._save_state()

    def next_j(self) -> int:
        """j for the cycle that starts now: doubled, but not past eq. 31's value for the
        records taken so far (see the module docstring), nor past ``max_queues``."""
        mean_budget = self.placement.mean_budget()
        alpha_n = max(0, self.taken) / (mean_budget * max(1, self.domains.estimate()))
        eq31 = 2 ** (math.ceil(math.log2(alpha_n + 1)) - 1)
        return max(self.j, min(2 * self.j, self.max_queues, eq31))

    # -- re-split --------------------------------------------------------------------
    def _begin_resplit(self) -> None:
        """Re-split QF: a new QF takes what does not fit in the doubled window."""
        assert self._qf is not None
        self._qf.close()
        old = self._qf_path(self._qf_generation)
        self._qf_generation += 1
        self._qf = self._writer(self._qf_path(self._qf_generation))
        left, self.qf_records = self.qf_records, 0
        self.qf_resplits += 1
        self._begin_phase([old], left)

    def _begin_phase(self, sources: list[Path], left: int) -> None:
        """A phase that places the ``left`` records of ``sources``: its state.json first
        (module docstring), then on_resplit (or the whole re-split at once)."""
        pending = self.path / f"pending-{self._pending_number}.rec"
        self._pending_number += 1
        window = [self._slot_path(s) for s in range(self.reading, self.reading + self.j)]
        resplit: dict[str, object] = {
            "slot_sizes": {str(file_number(p)): p.stat().st_size for p in window if p.exists()},
            "qf_size": self._qf_path(self._qf_generation).stat().st_size,
            "sources": [path.name for path in sources],
            "pending": pending.name,
        }
        state = self._state(resplit)
        replace_json(self.path / "state.json", state)
        faulthooks.reach("beast-resplit")
        self._phase = _Phase(sources, left, self._writer(pending), state)
        (self.on_resplit or self._finish_resplit)()  # (no caller's loop: all of it now)

    def _finish_resplit(self) -> None:  # (without an event loop)
        while self.resplit_step():
            pass

    def resplit_step(self, limit: int = 0) -> bool:
        """Place up to ``limit`` (0: RESPLIT_SLICE) records; is a re-split in flight?"""
        phase = self._phase
        if phase is None:
            return False
        limit = limit or RESPLIT_SLICE
        placed = self._place_read(itertools.islice(phase.reader, limit))
        phase.left -= placed
        if placed < limit:
            self._end_phase(phase)
        return self._phase is not None

    def _place_read(self, records: Iterator[tuple[int, bytes]]) -> int:
        """Place records read from a queue file, as one batch (held back: flushed at the
        phase's end); how many."""
        batch = [record for _, record in records]
        if not batch:
            return 0
        domains = np.frombuffer(b"".join([r[: _DOMAIN.size] for r in batch]), dtype=">u8")
        last = self.reading + self.j - 1
        slots = self.placement.many(domains.astype(np.uint64), self.reading, last)
        size = sum(map(len, batch)) + RECORD_OVERHEAD * len(batch)
        self.bytes_read += size
        self.bytes_written += size
        for slot, group in by_slot(slots):
            self._store(slot, [batch[i] for i in group.tolist()], flush=False)
        return len(batch)

    def _end_phase(self, phase: _Phase) -> None:
        """The sources are placed: what was pushed meanwhile goes to the next phase, or
        is placed now if at most a slice (undone with this phase after a kill)."""
        assert self._qf is not None
        phase.pending.close()
        if phase.pending_records <= RESPLIT_SLICE:
            phase.pending_records -= self._place_read(scan(phase.pending.path))
        for writer in (self._qf, *self._writers.values()):
            writer.flush()
        self._phase = None
        if phase.pending_records:
            self._begin_phase([phase.pending.path], phase.pending_records)
        else:
            self._save_state()
            self.discard(phase.pending.path)
        for source in phase.sources:
            self.discard(source)

    def _mark_read(self, slot: int) -> None:
        self.position = (slot + 1, -1)
        if self.on_slot_read is not None:
            self.on_slot_read(slot)

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
