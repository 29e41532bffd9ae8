"""``LagProbe``: a repeating timer that reports how late the reactor runs it.

When the timer fires, its *lag* is the clock's time minus the time it was due: near 0
when the reactor thread is free, and as long as the work that held the thread in
between (one reactor turn that ran a hundred ready callbacks, a slow callback, a
collection). The next tick is due one interval after the *actual* firing, so a stall of
3 s is one sample of 3 s, not 300 samples of missed ticks.

Two users: :class:`irlscrapy.report.reactorlag.ReactorLag` (the lag histogram of a run)
and the scheduler's :class:`irlscrapy.scheduler.frontier.loadgovernor.LoadGovernor` (how many
fetches it lets into the downloader).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: The default interval in seconds.
TICK_SECONDS = 0.010


class LagProbe:
    def __init__(
        self, clock: Any, sink: Callable[[float], None], interval: float = TICK_SECONDS
    ) -> None:
        """``clock``: an IReactorTime (the reactor, or a ``task.Clock`` in tests);
        ``sink`` is called with each tick's lag in seconds (never negative: a wall clock
        stepped back reads as on time)."""
        if not interval > 0:
            raise ValueError(f"a lag probe's interval must be > 0 (got {interval})")
        self.clock = clock
        self.sink = sink
        self.interval = interval
        self._due = 0.0  # when the pending tick should fire
        self._call: Any = None  # its IDelayedCall

    @property
    def running(self) -> bool:
        return self._call is not None

    def start(self) -> None:
        if self._call is None:
            self._schedule()

    def stop(self) -> None:
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None

    def _schedule(self) -> None:
        self._due = self.clock.seconds() + self.interval
        self._call = self.clock.callLater(self.interval, self._tick)

    def _tick(self) -> None:
        lag = max(0.0, self.clock.seconds() - self._due)
        self._schedule()
        self.sink(lag)
