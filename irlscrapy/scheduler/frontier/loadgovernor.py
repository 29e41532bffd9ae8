"""``LoadGovernor``: how many fetches the scheduler lets into the downloader at once.

Theory of operation
-------------------
A crawl that has saturated its core runs the reactor in long turns. Every turn runs
all the callbacks that became ready while the previous turn ran, so a long turn makes
the next one long too: in issue 4's crawl benchmark, turns of 100-230 callbacks and
60-94 ms, and a reactor lag (the lateness of a 10 ms timer) of 95-120 ms at p99.9. The
fetch-only floor, a Scrapy crawl that does nothing with its pages, showed 75 ms. Every
timer of the crawl fires that late: the engine's wake-up when a host becomes due, the
download timeouts, the status endpoint. More fetches in flight do not raise the rate
once the core is saturated; they only lengthen the turns.

The governor keeps the offered load under what the core can serve. It caps the fetches
in flight (released by the scheduler, not yet out of the downloader) with additive
increase and multiplicative decrease, the reactor's lag (:class:`LagProbe` ticks) as
the congestion signal. Every :data:`WINDOW_TICKS` ticks it takes the largest lag of the
window:

- above the target, if the fetches in flight came near the cap (at least
  :data:`DECREASE` of it, or it held one back): the cap falls to :data:`DECREASE` of
  itself, not below :attr:`floor`. A window whose fetches stayed well under the cap
  leaves it alone: its lag came from something else (start-up, a burst of URLseen
  results), which fewer fetches would not have shortened;
- at or below it, if the cap held a fetch back during the window: the cap rises by 1,
  not above :attr:`ceiling` (``CONCURRENT_REQUESTS``).

On a web whose latency, not the core, limits the crawl, the lag stays low and the cap
stays at the ceiling. No Scrapy imports.

Invariants (tests/unit/test_loadgovernor.py): ``floor <= cap <= ceiling`` always; the
cap rises only after a window within the target in which it held a fetch back, by 1;
it falls only after a window over the target in which the fetches came near it.
"""

from __future__ import annotations

#: Ticks per decision (at 10 ms each, about a quarter of a second).
WINDOW_TICKS = 25
#: The cut after a window over the target, as a fraction of the cap; a window whose
#: fetches in flight stayed under this fraction of the cap is not cut.
DECREASE = 0.75
#: The cap never goes below this (or the ceiling, if that is lower).
FLOOR = 4


class LoadGovernor:
    def __init__(self, target: float, ceiling: int, floor: int = FLOOR) -> None:
        """``target``: the reactor lag in seconds the governor keeps windows under;
        ``ceiling``: the most fetches in flight it ever allows."""
        if not target > 0:
            raise ValueError(f"the lag target must be > 0 seconds (got {target})")
        if ceiling < 1:
            raise ValueError(f"the ceiling must be >= 1 fetch (got {ceiling})")
        self.target = target
        self.ceiling = ceiling
        self.floor = max(1, min(floor, ceiling))
        self.cap = ceiling
        self.cuts = 0  # windows over the target
        self._ticks = 0
        self._worst = 0.0  # the window's largest lag
        self._peak = 0  # the most fetches in flight seen in the window
        self._held = False  # the cap held a fetch back in the window

    def admits(self, in_flight: int) -> bool:
        """May one more fetch start, with ``in_flight`` fetches in flight now?"""
        if in_flight > self._peak:
            self._peak = in_flight
        if in_flight < self.cap:
            return True
        self._held = True
        return False

    def tick(self, lag: float, in_flight: int) -> None:
        """One probe tick: ``lag`` seconds late, ``in_flight`` fetches in flight."""
        self._ticks += 1
        if lag > self._worst:
            self._worst = lag
        if in_flight > self._peak:
            self._peak = in_flight
        if self._ticks < WINDOW_TICKS:
            return
        near = self._held or self._peak >= self.cap * DECREASE
        if self._worst > self.target and near:
            self.cap = max(self.floor, int(self.cap * DECREASE))
            self.cuts += 1
        elif self._held and self.cap < self.ceiling:
            self.cap += 1
        self._ticks = 0
        self._worst = 0.0
        self._peak = in_flight
        self._held = False
