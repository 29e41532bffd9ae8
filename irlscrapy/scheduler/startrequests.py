"""Start requests, taken in once per state directory.

Scrapy's ``start_urls`` are ``dont_filter`` requests (``Spider.start``), and every run
yields them again: each resume would fetch them again, as stock Scrapy's does. So with a
JOBDIR the intake (:mod:`irlscrapy.scheduler.intake`) sends a ``dont_filter`` start
request (meta ``is_start_request``, which Scrapy's StartSpiderMiddleware sets) through
URLseen under a key of its own: its fingerprint's key xor :func:`start_key` of ``n``,
the number of start requests of that key before it in the run. A run takes each in as
Scrapy would (one yielded twice, twice), and a rerun drops those an earlier run took in
(stat ``irl/scheduler/start_requests_taken_before``). The URL's own key is not marked:
a link to it is new, as without a JOBDIR.

RAM: one entry per distinct start request of the run.
"""

from __future__ import annotations

from scrapy import Request

#: The salt of a start request's key (odd, so that its multiples by the occurrence
#: differ). DO NOT CHANGE: a resumed crawl looks for the keys of earlier runs.
START_SALT = 0x5354_4152_545F_5251
_U64 = (1 << 64) - 1


def start_key(key: int, occurrence: int) -> int:
    """The URLseen key of a start request whose fingerprint's key is ``key``, yielded
    ``occurrence`` times before in its run."""
    return key ^ (START_SALT * (occurrence + 1) & _U64)


class StartRequests:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled  # a JOBDIR, and dedup on
        self._occurrences: dict[int, int] = {}  # fingerprint key -> start requests so far

    def taken_once(self, request: Request) -> bool:
        """Is the ``dont_filter`` request ``request`` a start request to take in once?"""
        return self.enabled and bool(request.meta.get("is_start_request"))

    def key(self, key: int) -> int:
        """The URLseen key of the next start request of fingerprint key ``key``."""
        occurrence = self._occurrences.get(key, 0)
        self._occurrences[key] = occurrence + 1
        return start_key(key, occurrence)
