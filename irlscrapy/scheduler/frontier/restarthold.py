"""Politeness across a restart: no host or IP is asked sooner after the previous run's
last request to it than its delays allow.

A run that resumes a state directory does not know when the previous run last asked
each host (a kill -9 leaves no such record), only that it was before this run opened.
So it takes every host and IP as asked at the moment it opened (``opened``): a host's
first request comes ``delay(host)`` after that at the earliest, its IP's
``delay(IP)``, the delays as known when the request is due (a Crawl-delay read from the
robots.txt cache included). A restart costs each host one delay, once; after the
longest delay a host can have has passed, the hold is over and costs a comparison.

Invariant: *while the hold lasts, nothing is handed out before opened + max(its host's
delay, its IP's delay)*.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class RestartHold:
    def __init__(
        self,
        opened: float,
        longest: float,
        host_delay: Callable[[Any], float],
        ip_delay: Callable[[Any], float],
    ) -> None:
        """``longest``: the longest delay a host or IP can be given (beyond it the hold
        is over); ``host_delay``/``ip_delay``: the workbench's delays of a host's visit
        state and of an IP's entry."""
        self.opened = opened
        self.over_at = opened + longest
        self.host_delay = host_delay
        self.ip_delay = ip_delay

    def until(self, state: Any, entry: Any, now: float) -> float | None:
        """When the host of ``state`` (on the IP of ``entry``) may be asked, if that is
        later than ``now``; None: it may be asked now."""
        if now >= self.over_at:
            return None
        due = self.opened + max(self.host_delay(state), self.ip_delay(entry))
        return due if due > now else None

    def held(self, workbench: Any, state: Any, item: Any, now: float) -> bool:
        """Put back ``item``, just taken from ``state``, and postpone its host, if the
        hold says it is too early for it; True then."""
        until = self.until(state, workbench.ips[state.ip], now)
        if until is None:
            return False
        workbench.add(state.host, state.ip, item, front=True)
        workbench.release(state, now, ip_only=True)
        workbench.postpone(state, until)
        return True
