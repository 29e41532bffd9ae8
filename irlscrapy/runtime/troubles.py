"""The crawl's refusals and give-ups as the operator sees them: each counted in a stat,
the first of each kind in a run logged.

A broad crawl meets the same trouble thousands of times: hosts retired by host health,
addresses the guard refuses, a Redis that comes and goes. Each time is counted (the
stats dump, the status endpoint and the crawl report show the totals); only the first
of each kind is logged, and says which stat counts the rest. :func:`tally` does both. A
run is a stats collector's: a crawl has one, and a resumed crawl is a new run with a new
one, so each run logs each kind once.

:mod:`irlscrapy.report.logflood` does the like for the lines of Scrapy's own components,
which irlscrapy cannot call differently: it filters them by logger and lets a few of
each kind through. What irlscrapy logs itself goes through :func:`tally` instead: no
filter to install, and the stat is the count. What a crawl mends as it opens its state
is told once per kind by :mod:`irlscrapy.storage.recovery`.

Invariant: *a stat counted through :func:`tally` has at most one log line per stats
collector*.
"""

from __future__ import annotations

import logging
from typing import Any
from weakref import WeakKeyDictionary

#: stats collector -> the stats whose first count it has logged
_LOGGED: WeakKeyDictionary[Any, set[str]] = WeakKeyDictionary()


def tally(
    log: logging.Logger,
    stats: Any,
    stat: str,
    message: str,
    *args: object,
    count: int = 1,
    level: int = logging.INFO,
) -> None:
    """Add ``count`` to ``stat`` in ``stats`` (a StatsCollector, or anything with its
    ``inc_value``); the first time ``stats`` counts ``stat``, log ``message % args`` to
    ``log`` at ``level``, saying that the rest are only counted."""
    stats.inc_value(stat, count)
    logged = _LOGGED.setdefault(stats, set())
    if stat in logged:
        return
    logged.add(stat)
    log.log(level, f"{message} (counted in {stat}; only the first is logged)", *args)
