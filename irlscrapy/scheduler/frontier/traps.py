"""Crawler traps below the PLD level: URLs whose path is too deep or repeats a segment.

STAR's budgets bound what one pay-level domain costs the crawl; inside one host a trap
(a relative link that nests itself, ``/lib/more/more/more/...``; a path that loops,
``/a/b/a/b/a/b/``) makes URLs without end. Two cheap checks on a URL's path (the part
between the authority and ``?`` or ``#``), beside Scrapy's ``URLLENGTH_LIMIT``:

- *depth*: more than ``max_depth`` non-empty segments (``IRL_TRAPS_MAX_PATH_DEPTH``);
- *repeats*: one segment more than ``max_repeats`` times (``IRL_TRAPS_MAX_REPEATED_SEGMENTS``).

0 turns a check off. Both cost a split of the path: about a microsecond a URL; a URL
with too few slashes to break either (most: the limits are 24 and 3, and a URL's path
has no more segments than it has slashes past ``://``) is let through on a count.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

PATH_DEPTH, REPEATED_SEGMENTS = "path_depth", "repeated_segments"


@dataclass(frozen=True)
class TrapLimits:
    max_depth: int = 0
    max_repeats: int = 0

    def trap(self, url: str) -> str | None:
        """Which limit ``url`` breaks (:data:`PATH_DEPTH` or :data:`REPEATED_SEGMENTS`),
        or None."""
        slashes = url.count("/") - (2 if "://" in url else 0)  # >= the path's segments
        if (not self.max_depth or slashes <= self.max_depth) and (
            not self.max_repeats or slashes <= self.max_repeats
        ):
            return None
        segments = path_segments(url)
        if self.max_depth and len(segments) > self.max_depth:
            return PATH_DEPTH
        if (
            self.max_repeats
            and len(segments) > self.max_repeats
            and len(set(segments)) < len(segments)
            and max(Counter(segments).values()) > self.max_repeats
        ):
            return REPEATED_SEGMENTS
        return None


def path_segments(url: str) -> list[str]:
    """The non-empty segments of ``url``'s path."""
    start = end = len(url)
    for mark in ("/", "?", "#"):  # the path starts where the authority ends ...
        cut = url.find(mark, url.find("://") + 3)
        if 0 <= cut < start:
            start = cut
    for mark in ("?", "#"):  # ... and ends at the query or fragment
        cut = url.find(mark, start)
        if 0 <= cut < end:
            end = cut
    return [s for s in url[start:end].split("/") if s]


#: No limits (stock Scrapy).
NO_LIMITS = TrapLimits()
