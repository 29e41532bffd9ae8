"""BEAST's QF re-splits, run between reactor turns.

At 10^8 pages one re-split places hundreds of millions of records: done at once inside
``Beast.pop`` it would stop every fetch for minutes. BEAST begins a re-split and calls
its ``on_resplit`` (:mod:`irlscrapy.scheduler.frontier.beast`, "A re-split runs in
slices"); :class:`Resplitter` is that callback in a crawl. It runs
``Beast.resplit_step`` under Twisted's cooperator, which gives a task at most 10 ms
of each tick and the reactor the rest, so no fetch waits longer than a slice
(``RESPLIT_SLICE`` records: a few milliseconds). The reader goes on through its slot
meanwhile; when the re-split is done the engine is woken (admission may have waited
for it). A store that fails (a full disk) stops the crawl as a URLseen merge's does.
The files BEAST is done with (a read queue, a placed QF) are deleted on a worker thread
(:func:`discard_off_the_reactor`).

Stats: ``irl/beast/resplit_phases`` (phases run: the first places the old QF, each
next one what was pushed meanwhile), ``irl/beast/resplit_seconds`` (wall time from a
re-split's start to its end, summed).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from twisted.internet import task, threads
from twisted.python.failure import Failure

from irlscrapy.scheduler.frontier.beast import Beast

logger = logging.getLogger(__name__)


def discard_off_the_reactor(path: Path) -> None:
    """BEAST's ``discard``: delete a queue file it is done with on a worker thread (a
    file of gigabytes takes 100+ ms to unlink; one a kill leaves behind goes on open)."""
    threads.deferToThread(path.unlink, missing_ok=True).addErrback(
        lambda failure: logger.warning("irlscrapy: could not delete %s: %s", path, failure.value)
    )


def begun_on_open() -> None:
    """BEAST's ``on_resplit`` until the scheduler's :class:`Resplitter` takes over: a
    re-split's phase begun again on open waits for it (it then runs it)."""


class Resplitter:
    def __init__(
        self,
        beast: Beast,
        stats: Any,
        clock: Callable[[], float],
        *,
        failed: Callable[[Failure, str], None],
        done: Callable[[], None],
        cooperator: task.Cooperator | None = None,
    ) -> None:
        """Run ``beast``'s re-splits from now on (and the one begun on open, if any);
        ``failed(failure, what)``: a step raised; ``done()``: a re-split ended;
        ``cooperator``: the reactor's by default."""
        self.beast = beast
        self.cooperate = task.cooperate if cooperator is None else cooperator.cooperate
        self.stats = stats
        self.clock = clock
        self.failed = failed
        self.done = done
        self._task: task.CooperativeTask[Iterator[None]] | None = None
        self._started = 0.0
        beast.on_resplit = self.start
        if beast.resplitting:
            self.start()

    def start(self) -> None:
        """A phase has begun: run the re-split, unless it runs already."""
        self.stats.inc_value("irl/beast/resplit_phases")
        if self._task is not None:
            return
        self._started = self.clock()
        running = self._task = self.cooperate(self._steps())
        running.whenDone().addCallbacks(self._finished, self._failed)

    def stop(self) -> None:
        """The crawl closes: no more steps (BEAST undoes the phase and does it again on
        open)."""
        running, self._task = self._task, None
        if running is not None:
            running.stop()

    def _steps(self) -> Iterator[None]:
        while self.beast.resplit_step():
            yield None

    def _finished(self, _: object) -> None:
        self._task = None
        self.stats.inc_value("irl/beast/resplit_seconds", self.clock() - self._started)
        self.done()

    def _failed(self, failure: Failure) -> None:
        if failure.check(task.TaskStopped):
            return
        self._task = None
        self.failed(failure, "re-splitting BEAST's overflow queue")
