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
left as it is). So QF is
re-read at exponentially growing intervals, which bounds disk I/O per crawled page
(Theorem 7) where re-reading it after every queue does not (Theorem 6).

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
    state.json     {"version": 1, "reading": r, "j": j, "cycle_end": e, "qf": n,
                    "resplit": null | {"slot_sizes": {"<s>": bytes, ...}},
                    "taken": N, "budget_sum": sum of budgets at placement,
                    "placed": placements, "domains": DistinctCount.state(),
                    "slots": [s, ...], "ends_marked": true}
                   (the last six are optional: a file without them reads as zeros,
                   "slots" as none and "ends_marked" as false)

Crash semantics: every push is appended and flushed before push() returns, so a kill -9
loses none (a re-split's placements are flushed once, before the state that ends it is
written: one cut short is redone from the old QF anyway). ``state.json`` is replaced
atomically (write, rename; like the record files it is not fsynced: a power loss is out
of scope, a kill -9 is not) before and after a QF re-split, when j grows and on close,
not each time the reader moves to the next slot (a rename can block the reactor for 100
ms under write load) nor at a cycle end that re-splits nothing: a slot's file is deleted
once it is read, so after a kill -9 a ``reading`` that lags behind finds the slots it
missed gone, and the caller's position (below) moves it to the slot really being read; a
``cycle_end`` that lags behind ends the current cycle at the next slot change. A
re-split records the sizes of the slot files it may append to, so one cut short by a
crash is undone (slot files truncated back, the new QF removed) and done again on open
(a recovery: :mod:`irlscrapy.storage.recovery`; so is a first open a crash cut short). Where the
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
state.json names the new one); so does every slot that state.json lists in ``slots``
(the slots past ``reading`` that held records when it was saved) that the caller's
position has not passed, since a slot file is deleted only once the reader has taken
its last record; and so does the slot of a position ``(s, offset >= 0)``, as its end
is marked before its file goes (a state.json without ``ends_marked``, written before
slots' ends were marked, leaves that slot unchecked until its end is marked).
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

from irlscrapy.exceptions import ConfigurationError, DamagedState
from irlscrapy.scheduler.frontier.distinct import DistinctCount
from irlscrapy.storage import faulthooks
from irlscrapy.storage.jsonfile import replace_json
from irlscrapy.storage.recordfile import MAGIC, RECORD_OVERHEAD, RecordWriter, scan
from irlscrapy.storage.recovery import recovered

_DOMAIN = struct.Struct(">Q")
_FILL_BITS = 32  # a (slot, fill) pair is slot << _FILL_BITS | fill
_FILL_MASK = (1 << _FILL_BITS) - 1
STATE_VERSION = 1  # DO NOT CHANGE: the version of state.json's layout


class Beast:
    def __init__(
        self,
        path: Path | str,
        budget_of: Callable[[int], int],
        *,
        initial_queues: int = 2,
        max_queues: int = 1024,
        on_slot_read: Callable[[int], None] | None = None,
    ) -> None:
        if not 2 <= initial_queues <= max_queues:
            raise ConfigurationError(
                f"BEAST needs 2 <= initial_queues ({initial_queues}) <= max_queues ({max_queues})"
            )
        self.path = Path(path)
        self.budget_of = budget_of  # the domain's current budget B_x (>= 1)
        #: called with a slot read to its end, before its file is deleted: the caller
        #: moves its position past it (module docstring)
        self.on_slot_read = on_slot_read
        self.max_queues = max_queues
        self.j = initial_queues
        self.reading = 0  # slot r
        self.cycle_end = initial_queues  # the slot that starts the next cycle
        self._domains: dict[int, int] = {}  # domain -> slot << _FILL_BITS | fill
        self._domains_kept = 0  # len(_domains) after the last drop of read slots' pairs
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
        self._skip = -1  # records of the reading slot at offsets <= this were taken already
        #: record bytes appended to and read from queue files (framing included): the
        #: disk I/O that Theorems 6 and 7 count
        self.bytes_written = 0
        self.bytes_read = 0
        #: eq. 31's figures: records taken (N), distinct domains pushed (V), and the sum
        #: of the budgets of the placements with their count (E[B_x])
        self.taken = 0
        self.domains = DistinctCount()
        self._budget_sum = 0
        self._placed = 0

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
        self._budget_sum = int(state.get("budget_sum", 0))  # type: ignore[call-overload]
        self._placed = int(state.get("placed", 0))  # type: ignore[call-overload]
        self.domains = DistinctCount.from_state(state.get("domains"))
        resplit = state.get("resplit")
        if isinstance(resplit, dict):  # a re-split cut short: undo it, then do it again
            sizes = {int(k): int(v) for k, v in resplit["slot_sizes"].items()}
            for path in self.path.glob("slot-*.rec"):
                slot = int(path.stem.split("-")[1])
                if slot not in sizes:
                    path.unlink()
                elif path.stat().st_size > sizes[slot]:
                    os.truncate(path, sizes[slot])
            self._qf_path(self._qf_generation + 1).unlink(missing_ok=True)
            recovered("resplit", self.path)
        for damage in missing_queue_files(self.path, state, read_past):
            raise damage
        if (
            not state.get("ends_marked")
            and read_past
            and read_past[1] >= 0
            and not self._slot_path(read_past[0]).exists()
        ):
            self._mark_read(read_past[0])  # read to its end by an irlscrapy that did not mark
        for path in self.path.glob("slot-*.rec"):
            slot = int(path.stem.split("-")[1])
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
                pair = self._domains.get(domain)
                if pair is None or slot > pair >> _FILL_BITS:
                    self._domains[domain] = slot << _FILL_BITS | 1
                elif slot == pair >> _FILL_BITS:
                    self._domains[domain] = pair + 1
            if slot == self.reading and read_past and read_past[0] == slot:
                self._skip = read_past[1]
        qf = self._qf_path(self._qf_generation)
        if qf.exists():
            for _, record in scan(qf):
                self.qf_records += 1
                if visit is not None:
                    visit(record[_DOMAIN.size :])
        self._qf = self._writer(qf)
        if isinstance(resplit, dict):
            self._resplit_qf()

    def _save_state(self, resplit: dict[str, object] | None = None) -> None:
        state = {
            "version": STATE_VERSION,
            "reading": self.reading,
            "j": self.j,
            "cycle_end": self.cycle_end,
            "qf": self._qf_generation,
            "resplit": resplit,
            "taken": self.taken,
            "budget_sum": self._budget_sum,
            "placed": self._placed,
            "domains": self.domains.state(),
            "slots": sorted(s for s, n in self._counts.items() if n and s > self.reading),
            "ends_marked": True,
        }
        replace_json(self.path / "state.json", state)

    def close(self) -> None:
        if self._qf is not None:
            self._save_state()
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        if self._qf is not None:
            self._qf.close()
            self._qf = None

    def __len__(self) -> int:
        return self._slot_records + self.qf_records

    # -- placement -------------------------------------------------------------------
    def push(self, domain: int, payload: bytes, *, returned: bool = False) -> int | None:
        """Place one record; return its slot, or None when it went to QF. ``returned``:
        a record just popped and given back untaken (its host is full): not counted
        as taken, so it cannot make j grow."""
        if returned:
            self.taken -= 1
        return self._append(domain, payload, flush=True)

    def _append(self, domain: int, payload: bytes, *, flush: bool) -> int | None:
        slot = self._place(domain)
        record = _DOMAIN.pack(domain) + payload
        self.bytes_written += len(record) + RECORD_OVERHEAD
        if slot is None:
            assert self._qf is not None, "open() first"
            self._qf.append(record, flush=flush)
            self.qf_records += 1
            return None
        writer = self._writers.get(slot)
        if writer is None:
            writer = self._writers[slot] = self._writer(self._slot_path(slot))
        writer.append(record, flush=flush)
        self._counts[slot] = self._counts.get(slot, 0) + 1
        self._slot_records += 1
        return slot

    def _place(self, domain: int) -> int | None:
        budget = max(1, self.budget_of(domain))
        self.domains.add(domain)
        self._budget_sum += budget
        self._placed += 1
        pair = self._domains.get(domain, 0)
        slot, fill = pair >> _FILL_BITS, pair & _FILL_MASK
        if slot <= self.reading:
            slot, fill = self.reading + 1, 0
        if fill >= budget:
            slot, fill = slot + 1, 0
        if slot > self.reading + self.j - 1:
            return None
        self._domains[domain] = slot << _FILL_BITS | (fill + 1)
        return slot

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
            self._advance()
        return None

    def records(self) -> Iterator[bytes]:
        """The payload of every queued record, without taking any (an agent leaving a
        multi-agent crawl hands its queues over: irlscrapy.distributed.leave)."""
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
        if len(self._domains) > 2 * self._domains_kept + 1024:
            first = (self.reading + 1) << _FILL_BITS
            self._domains = {d: p for d, p in self._domains.items() if p >= first}
            self._domains_kept = len(self._domains)
        if self.reading >= self.cycle_end:
            self._end_cycle()
        done.unlink(missing_ok=True)

    def _end_cycle(self) -> None:
        """Start the next cycle with :meth:`next_j` queues and re-split QF with them. An
        empty QF has nothing to re-split: then state.json is saved only if j grew (a
        small frontier ends a cycle every few records, see the module docstring)."""
        j = self.next_j()
        grew = j != self.j
        self.j = j
        self.cycle_end = self.reading + j
        if self.qf_records:
            self._resplit_qf()
        elif grew:
            self._save_state()

    def next_j(self) -> int:
        """j for the cycle that starts now: doubled, but not past eq. 31's value for the
        records taken so far (see the module docstring), nor past ``max_queues``."""
        mean_budget = self._budget_sum / self._placed if self._placed else 1.0
        alpha_n = max(0, self.taken) / (mean_budget * max(1, self.domains.estimate()))
        eq31 = 2 ** (math.ceil(math.log2(alpha_n + 1)) - 1)
        return max(self.j, min(2 * self.j, self.max_queues, eq31))

    def _resplit_qf(self) -> None:
        """Read QF once; place its records with the doubled window; the rest into a new QF."""
        assert self._qf is not None
        sizes = {
            str(slot): self._slot_path(slot).stat().st_size
            for slot in range(self.reading, self.reading + self.j)
            if self._slot_path(slot).exists()
        }
        # The open writers stay open (their files are in ``sizes``: every slot file of the
        # window is): reopening one re-checks its whole file for a torn tail, which only a
        # restart needs.
        self._save_state({"slot_sizes": sizes})
        self._qf.close()
        old = self._qf_path(self._qf_generation)
        self._qf_generation += 1
        self._qf = self._writer(self._qf_path(self._qf_generation))
        faulthooks.reach("beast-resplit")
        self.qf_records = 0
        self.qf_resplits += 1
        for _, record in scan(old):
            self.bytes_read += len(record) + RECORD_OVERHEAD
            self._append(_DOMAIN.unpack_from(record)[0], record[_DOMAIN.size :], flush=False)
        for writer in (self._qf, *self._writers.values()):
            writer.flush()
        self._save_state()
        old.unlink()

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


def missing_queue_files(
    path: Path, state: dict[str, object], read_past: tuple[int, int] | None
) -> Iterator[DamagedState]:
    """The queue files under ``path`` that ``state`` (state.json, as read) says must
    be there and are not (module docstring); ``read_past``: the caller's position."""
    qf = path / f"qf-{state['qf']}.rec"
    if not qf.exists():
        yield DamagedState(qf, "missing: the URLs in BEAST's overflow queue (QF) would be lost")
    # (a slot before the one being read was read to its end and deleted)
    reading = int(state["reading"])  # type: ignore[call-overload]
    at, offset = read_past if read_past else (-1, -1)
    if offset >= 0 and state.get("ends_marked") and not (path / f"slot-{at}.rec").exists():
        yield DamagedState(
            path / f"slot-{at}.rec",
            f"missing: the reader is inside it (at byte {offset}), and the URLs "
            "queued in the rest of it would be lost",
        )
    read_to = max(reading - 1, at if offset >= 0 else at - 1)
    for slot in cast(list[int], state["slots"]):
        if slot > read_to and not (path / f"slot-{slot}.rec").exists():
            yield DamagedState(
                path / f"slot-{slot}.rec",
                "missing: state.json lists it as a queue the reader has not reached, and "
                "the URLs queued in it would be lost",
            )


def read_state(path: Path) -> dict[str, object]:
    """state.json, its fields checked (DamagedState if they cannot have been written)."""
    try:
        state = json.loads(path.read_text())
        counts = [int(state[f]) for f in ("version", "reading", "j", "cycle_end", "qf")]
        counts += [int(state.get(f, 0)) for f in ("taken", "budget_sum", "placed")]
        state["slots"] = [int(slot) for slot in state.get("slots") or ()]
        counts += state["slots"]
        resplit = state.get("resplit")
        if resplit is not None:
            counts += [int(v) for v in dict(resplit["slot_sizes"]).values()]
        if min(counts) < 0 or state["j"] < 2:
            raise ValueError("a negative count, or fewer than two queues")
    except (ValueError, KeyError, TypeError) as exc:  # (JSONDecodeError is a ValueError)
        raise DamagedState(path, f"unreadable ({exc!r})") from None
    return state
