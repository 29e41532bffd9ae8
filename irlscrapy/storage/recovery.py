"""Recoveries: what a crawl mends by itself as it opens its state, counted in stats and
told in one log line per kind.

A kill -9 leaves state that the next open takes as it comes, losing nothing that was
acknowledged: a record file's torn last record is cut (:mod:`irlscrapy.storage.recordfile`), a
DRUM's bucket files cut short are rebuilt (:mod:`irlscrapy.storage.drumfiles`), a
LevelDB or BEAST directory whose first open was cut short is made again, a BEAST
re-split cut short is undone and done again, the URLs admitted to RAM whose pages were
not done are queued again, every host waits its delay from the open (the restart
hold), and a WARC file left open is closed after its last whole record. The code that
mends calls :func:`recovered` with the kind (:data:`KINDS`) and the file.

That code knows no crawler (a DRUM, BEAST, a record file), and it runs before anything
is fetched. So the component that opens the state (the IRL scheduler; URLseen under
Scrapy's own scheduler; the WARC recorder) opens it inside :meth:`Recoveries.collect`,
then :meth:`Recoveries.publish` es what was collected: each kind's count goes to the
stat ``irl/recovered/<kind>/<store>``, the store being the entry of the state directory
the file is in (``urlseen``, ``beast``, ``admitted``, ``parked``, ``star``, ``agent``,
...), or to ``irl/recovered/<kind>`` for a recovery of no file or of a file outside the
state directory (a WARC file); and each such stat gets one log line with its count and
its first file.

Invariants:
*A recovery noted inside a collection is published exactly once, by the outermost
collection: they nest (the IRL scheduler's open holds URLseen's).*
*Each stat gets one log line per publication, and a run publishes once per component
that opens state: at most one line per kind and store.*
*A recovery noted outside any collection (``irlscrapy repair``, a store opened on its
own) is logged as it happens, one line each, and counted nowhere.*
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

#: kind -> (log level, what was done). The manual's stats table (docs/stats.md) says
#: what each means for the operator.
KINDS: dict[str, tuple[int, str]] = {
    "torn_tail": (logging.WARNING, "cut a torn last record, an append a kill -9 interrupted"),
    "buckets_rebuilt": (
        logging.WARNING,
        "removed DRUM bucket files a kill -9 cut short, to be rebuilt from their journal",
    ),
    "first_open": (logging.WARNING, "made again a store whose first open a kill -9 cut short"),
    "resplit": (logging.WARNING, "undid a BEAST re-split a kill -9 cut short, to do it again"),
    "readmitted": (
        logging.INFO,
        "queued again the URLs admitted before the stop whose pages were not done",
    ),
    "restart_hold": (
        logging.INFO,
        "held every host and IP for its delay from this open, as the last run's last "
        "requests are not known",
    ),
    "warc_file": (
        logging.WARNING,
        "closed a WARC file a crash left open, after its last whole record",
    ),
}

#: The number of a state directory entry's segment or generation: ``admitted-3.rec``.
_NUMBERED = re.compile(r"-\d+\.rec$")


@dataclass(frozen=True)
class _Found:
    kind: str
    path: Path | None
    count: int
    detail: str


@dataclass
class Recoveries:
    """What was recovered while this collection was open, to publish."""

    found: list[_Found] = field(default_factory=list)

    @contextmanager
    def collect(self) -> Iterator[None]:
        """Collect here what :func:`recovered` notes in this context (the thread, or
        the task), unless an outer collection is open: it collects them then."""
        if _collecting.get() is not None:
            yield
            return
        token = _collecting.set(self)
        try:
            yield
        finally:
            _collecting.reset(token)

    def publish(self, stats: Any, root: Path | None) -> None:
        """Add the counts to ``stats`` (a StatsCollector; None: log only) and log one
        line per stat; ``root``: the state directory, whose entries name the stores.
        The collection is then empty."""
        for stat, (count, first) in self._by_stat(root).items():
            if stats is not None:
                stats.inc_value(stat, count)
            level, what = KINDS[first.kind]
            where = "" if first.path is None else f"; the first: {first.path}"
            detail = f" ({first.detail})" if first.detail else ""
            logger.log(level, "on open, %s: %s = %d%s%s", what, stat, count, where, detail)
        self.found.clear()

    def _by_stat(self, root: Path | None) -> dict[str, tuple[int, _Found]]:
        """stat -> (its count, its first recovery), in the order first noted."""
        by_stat: dict[str, tuple[int, _Found]] = {}
        for found in self.found:
            store = _store(found.path, root)
            stat = f"irl/recovered/{found.kind}" + (f"/{store}" if store else "")
            count, first = by_stat.get(stat, (0, found))
            by_stat[stat] = (count + found.count, first)
        return by_stat


#: the collection open in this context, if any
_collecting: ContextVar[Recoveries | None] = ContextVar("irlscrapy_recoveries", default=None)


def recovered(kind: str, path: Path | None = None, *, count: int = 1, detail: str = "") -> None:
    """Note ``count`` recoveries of ``kind`` (one of :data:`KINDS`) of the file or
    directory ``path`` (None: of no file); ``detail`` goes in its log line."""
    level, what = KINDS[kind]
    collection = _collecting.get()
    if collection is not None:
        collection.found.append(_Found(kind, path, count, detail))
        return
    notes = [str(count)] if count != 1 else []
    notes += [detail] if detail else []
    where = f"{path}: " if path is not None else ""
    logger.log(level, "%s%s%s", where, what, f" ({'; '.join(notes)})" if notes else "")


def _store(path: Path | None, root: Path | None) -> str | None:
    """The entry of the state directory ``root`` that ``path`` is in, its number
    dropped (``admitted-3.rec``: ``admitted``); None if it is in none."""
    if path is None or root is None or not path.is_relative_to(root) or path == root:
        return None
    return _NUMBERED.sub("", path.relative_to(root).parts[0])
