"""Out of disk space: how the IRL scheduler tells, and how it stops.

Every store the scheduler writes appends whole records, so a write that fails for want
of space leaves the state directory whole: the crawl stops (close reason
``DISK_FULL_REASON``), says how to go on, and the same JOBDIR resumes once there is
room. An entry point wrapped in :func:`stops_when_disk_is_full` does the stopping; once
stopped it does nothing (what it would have stored is fetched again on resume: the page
that found it is not done).
"""

from __future__ import annotations

import errno
import functools
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, cast

#: The close reason of a crawl stopped by a full disk.
DISK_FULL_REASON = "irlscrapy_disk_full"


def disk_full(exc: BaseException | None) -> bool:
    """Is ``exc`` a write that failed for want of space (OSError, or LevelDB's IOError)?"""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return exc is not None and "No space left on device" in str(exc)


class Stoppable(Protocol):
    stopped: bool

    def stop_disk_full(self, exc: BaseException | None) -> None: ...


_Method = TypeVar("_Method", bound=Callable[..., Any])


def stops_when_disk_is_full(default: Any) -> Callable[[_Method], _Method]:
    """An entry point that stops the crawl cleanly when the disk is full (its object's
    ``stop_disk_full``), and once it has stopped does nothing and returns ``default``."""

    def decorate(method: _Method) -> _Method:
        @functools.wraps(method)
        def guarded(self: Stoppable, *args: Any, **kwargs: Any) -> Any:
            if self.stopped:
                return default
            try:
                return method(self, *args, **kwargs)
            except Exception as exc:
                if not disk_full(exc):
                    raise
                self.stop_disk_full(exc)
                return default

        return cast(_Method, guarded)

    return decorate
