"""Progress bars: the text of one, and a meter that draws it on stderr for long
offline commands (``irlscrapy report`` on a big job).

:func:`bar` is the one drawing of a bar; the crawl's progress line
(:func:`irlscrapy.report.progress.progress_bar`) and :class:`ProgressMeter` both use
it. The meter stays silent for commands that finish quickly: it draws nothing until
``delay`` seconds have passed, then redraws at most every ``every`` seconds, in place
(``\\r``) on a terminal and one line per redraw otherwise. No Scrapy import.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

BAR_WIDTH = 20


def bar(share: float, width: int = BAR_WIDTH) -> str:
    """``[#####---------------]`` for ``share`` (clipped to [0, 1])."""
    share = min(max(share, 0.0), 1.0)
    filled = int(share * width)
    return f"[{'#' * filled}{'-' * (width - filled)}]"


class ProgressMeter:
    """``label [####------] 40% (400 of 1,000) 12 s`` on ``stream`` while a loop runs
    (``label ... 12 s`` for work of unknown size: ``total`` 0).

    Call :meth:`update` with the work done so far as often as convenient (it costs a
    clock read when nothing is drawn), and :meth:`close` at the end; a meter that drew
    anything ends its line there.
    """

    def __init__(
        self,
        label: str,
        total: float,
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        delay: float = 1.0,
        every: float = 0.25,
    ) -> None:
        self.label = label
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.delay = delay
        self.every = every
        self.started = clock()
        self.done = 0.0
        self.drawn = 0  # lines (or redraws) drawn
        self._next_draw = self.started + delay

    def update(self, done: float) -> None:
        self.done = done
        now = self.clock()
        if now >= self._next_draw:
            self._next_draw = now + self.every
            self._draw(now)

    def close(self) -> None:
        if self.drawn:
            self._draw(self.clock())
            if self._in_place():
                self.stream.write("\n")
            self.stream.flush()

    def line(self, now: float) -> str:
        if self.total <= 0:  # no known total: how long it has been running
            return f"{self.label} ... {now - self.started:.0f} s"
        share = self.done / self.total
        return (
            f"{self.label} {bar(share)} {min(share, 1.0):.0%} "
            f"({self.done:,.0f} of {self.total:,.0f}) {now - self.started:.0f} s"
        )

    def _draw(self, now: float) -> None:
        if self._in_place():
            self.stream.write("\r" + self.line(now))
        else:
            self.stream.write(self.line(now) + "\n")
        self.stream.flush()
        self.drawn += 1

    def _in_place(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        return bool(isatty and isatty())
