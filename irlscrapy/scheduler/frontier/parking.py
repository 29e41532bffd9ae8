"""Where URLs wait that cannot be fetched for a while: origins in back-off (RAM) and the
parked URLs of retired hosts and origins, or of a finished crawl (disk).

Theory of operation
-------------------
Host health (:mod:`irlscrapy.scheduler.hosts.hosthealth`) knows two kinds of failing unit. A
*host* (the unit of politeness) that answers 429 or 503 is backed off in the workbench
itself, its visit state postponed. An *origin* (``scheme://host``) whose connections
fail (refused, reset, timed out: nothing answers on that scheme or port) says nothing of
the host's other origins, which keep being fetched. So an origin in back-off has its
URLs *held* here, in RAM, out of the host's visit state, until its back-off ends
(:meth:`Bench.hold`, :meth:`Bench.release_due`); URLs of it that arrive meanwhile are
held too. :class:`Bench` keeps no more than the workbench would: the held URLs were
admitted, and count in the frontier's size.

A host or origin that fails ``IRL_HEALTH_MAX_FAILURES`` times in a row is *retired* for
``IRL_HEALTH_RETIRE_DELAY`` seconds: its URLs, and those of it admitted while it rests,
are *parked* in :class:`ParkedStore`'s files, not in RAM and not in BEAST (where
admission would read them again and again while the host rests). When a retirement
ends, every parked URL goes back to BEAST (:meth:`ParkedStore.replay`); URLs of a host
still retired are parked again on admission. A finished crawl parks what it gave up on
(:meth:`irlscrapy.scheduler.stages.Frontier.give_up`); a rerun with the same state
directory replays them at open, and so tries them again.

Invariants:
*Every URL parked is, exactly once, replayed into BEAST, or still in a parked file.*
*No URL of an origin is in its host's visit state while the origin is held.*

Files under the state directory (DO NOT CHANGE: format version 1)::

    parked-<n>.rec   an irlscrapy.storage.recordfile of frontier records (see
                     irlscrapy.scheduler.stages), generation n; the highest n is
                     appended to, the others are being replayed
    parked.json      {"holding": [n, ...]}: the generations that hold parked records
                     not replayed yet

Crash semantics: a park is appended and flushed before it returns. A generation is
listed in parked.json before its first record is appended, and taken off the list once
its records are replayed, before its file is deleted. A replay pushes a generation's
records into BEAST (each push flushed), then deletes the file: a kill -9 between the
two replays the generation again on open, so some of its URLs may be queued (and
fetched) twice; none is lost. So a listed generation's file is always there: a missing
one is damage (:func:`missing_parked`), its URLs lost. A generation on disk and not
listed holds nothing, or was replayed, or was parked by an irlscrapy that kept no list:
it is replayed on open all the same.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from irlscrapy.exceptions import DamagedState
from irlscrapy.storage.jsonfile import replace_json
from irlscrapy.storage.recordfile import RecordWriter, repair, scan

LIST = "parked.json"


class ParkedStore:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._writer: RecordWriter | None = None
        self._generation = 0
        self.count = 0  # parked URLs in the files, not replayed yet
        self._held = False  # see hold()
        self.replay_waits = False  # a replay was asked for during the hold
        self._holding: list[int] = []  # generations listed in parked.json

    def open(self) -> list[Path]:
        """Start a new generation; return the older ones (to replay). DamagedState if
        a generation parked.json lists is missing."""
        for damage in missing_parked(self.directory):
            raise damage
        self._holding = holding(self.directory)
        older = sorted(self.directory.glob("parked-*.rec"), key=_generation)
        self._generation = max([_generation(p) + 1 for p in older] + [0])
        self._writer = RecordWriter(self._path(self._generation))
        self._writer.open()
        return older

    def close(self) -> None:
        """Close the current generation; remove it if nothing was parked in it."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            if not self.count:
                self._path(self._generation).unlink(missing_ok=True)

    def park(self, record: bytes) -> None:
        assert self._writer is not None, "open() first"
        if self._generation not in self._holding:
            self._list([*self._holding, self._generation])
        self._writer.append(record)
        self.count += 1

    def replay(self, push: Callable[[bytes], None], older: list[Path] | None = None) -> int:
        """Push every parked record (of ``older``, else of the current generation, which
        is then replaced by a new one); delete what was pushed; return how many."""
        if older is None:
            if self._held:
                self.replay_waits = self.replay_waits or bool(self.count)
                return 0
            if not self.count:
                return 0
            self.close()
            older = [self._path(self._generation)]
            self._generation += 1
            self._writer = RecordWriter(self._path(self._generation))
            self._writer.open()
            self.count = 0
        pushed = 0
        for path in older:
            repair(path)
            for record in _records(path):
                push(record)
                pushed += 1
            if _generation(path) in self._holding:
                self._list([g for g in self._holding if g != _generation(path)])
            path.unlink()
        return pushed

    def records(self) -> Iterator[bytes]:
        """Every parked record of every generation, left in place (see Beast.records)."""
        for path in sorted(self.directory.glob("parked-*.rec"), key=_generation):
            yield from _records(path)

    def hold(self, on: bool) -> bool:
        """Hold replays of the current generation, or end the hold; True when it ends
        with a replay asked for meanwhile (the caller replays now). A multi-agent crawl's
        agent holds them while it says it is idle: it must take up no work of its own
        until it has said it is busy again (irlscrapy.distributed.agent);
        ``replay_waits`` tells it that work waits."""
        waited = self.replay_waits and not on
        self._held = on
        if not on:
            self.replay_waits = False
        return waited

    def _list(self, generations: list[int]) -> None:
        replace_json(self.directory / LIST, {"holding": generations})
        self._holding = generations

    def _path(self, generation: int) -> Path:
        return self.directory / f"parked-{generation}.rec"


def holding(directory: Path) -> list[int]:
    """The generations parked.json lists (none without the file); DamagedState if it
    cannot be read."""
    path = directory / LIST
    if not path.exists():
        return []
    try:
        return [int(g) for g in json.loads(path.read_text())["holding"]]
    except (ValueError, KeyError, TypeError) as exc:  # (JSONDecodeError is a ValueError)
        raise DamagedState(path, f"unreadable ({exc!r})") from None


def missing_parked(directory: Path) -> Iterator[DamagedState]:
    """The parked files ``directory``'s parked.json lists and are not there."""
    for generation in holding(directory):
        path = directory / f"parked-{generation}.rec"
        if not path.exists():
            yield DamagedState(
                path, "missing: parked.json lists it as holding parked URLs, which would be lost"
            )


def _generation(path: Path) -> int:
    return int(path.stem.split("-")[1])


def _records(path: Path) -> Iterator[bytes]:
    for _, record in scan(path):
        yield record


class Bench:
    """Origins in back-off with their held URLs, and the retired hosts and origins."""

    def __init__(self) -> None:
        #: origin -> (until, [(priority, item), ...])
        self._held: dict[str, tuple[float, list[tuple[int, Any]]]] = {}
        self._retired: dict[str, float] = {}  # host or origin -> until
        self._times: list[tuple[float, str]] = []  # (until, key) of both, lazily deleted
        self.held_urls = 0
        #: connection failures in a row of each origin that failed since it last answered
        self.origin_failures: dict[str, int] = {}

    def __len__(self) -> int:
        return self.held_urls

    def hold(self, origin: str, until: float, items: list[tuple[int, Any]]) -> None:
        """Hold ``origin``'s URLs until ``until`` (later if it is already held longer)."""
        old = self._held.get(origin)
        if old is not None:
            until = max(until, old[0])
            items = old[1] + items
        self._held[origin] = (until, items)
        self.held_urls += len(items) - (len(old[1]) if old is not None else 0)
        heapq.heappush(self._times, (until, origin))

    def in_force(self) -> bool:
        """Is any origin held or any host or origin retired (else nothing to check)?"""
        return bool(self._held or self._retired)

    def add_held(self, origin: str, priority: int, item: Any) -> bool:
        """Hold ``item`` if its origin is held; False when it is not."""
        entry = self._held.get(origin)
        if entry is None:
            return False
        entry[1].append((priority, item))
        self.held_urls += 1
        return True

    def take_held(self, origin: str) -> list[tuple[int, Any]]:
        """Stop holding ``origin``; return its URLs."""
        entry = self._held.pop(origin, None)
        if entry is None:
            return []
        self.held_urls -= len(entry[1])
        return entry[1]

    def retire(self, key: str, until: float) -> None:
        self._retired[key] = until
        heapq.heappush(self._times, (until, key))

    def retiring(self) -> bool:
        """Is a retirement in force (or ended and not released yet)?"""
        return bool(self._retired)

    def end_retirements(self) -> None:
        """The crawl gives up on the retired hosts and origins: none is retired now
        (what they parked stays parked)."""
        self._retired.clear()

    def retired(self, key: str, now: float) -> bool:
        until = self._retired.get(key)
        return until is not None and until > now

    def release_due(self, now: float) -> tuple[list[tuple[str, list[tuple[int, Any]]]], bool]:
        """The origins whose back-off has ended, with their URLs; and whether a
        retirement ended (then the parked URLs go back to BEAST)."""
        released: list[tuple[str, list[tuple[int, Any]]]] = []
        retirement_ended = False
        times = self._times
        while times and times[0][0] <= now:
            until, key = heapq.heappop(times)
            held = self._held.get(key)
            if held is not None and held[0] == until:
                released.append((key, self.take_held(key)))
            if self._retired.get(key) == until:
                del self._retired[key]
                retirement_ended = True
        return released, retirement_ended

    def next_time(self) -> float | None:
        """When the next back-off or retirement ends; None if none is in force."""
        times = self._times
        while times:
            until, key = times[0]
            held = self._held.get(key)
            if (held is not None and held[0] == until) or self._retired.get(key) == until:
                return until
            heapq.heappop(times)
        return None

    def held_origins(self) -> list[str]:
        return list(self._held)
