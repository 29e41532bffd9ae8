"""A crawl that cannot start says why in one line, and exits non-zero.

When the IRL scheduler's ``open`` fails with one of irlscrapy's own errors (a damaged
or locked state directory, a full disk, a configuration the crawl's state refuses),
or building the crawl does (a setting :mod:`irlscrapy.startcheck` refuses, a spider
argument), the message is the whole story: it names the file or setting and says
what to do.
Scrapy, though, goes on to close a spider that never finished opening, and each of
its components that meets the half-open crawl logs a traceback (its scraper's slot,
CoreStats' start time, ...), all chained to our error; then asyncio reports the
crawl's task with the error's own traceback. The crawl exits 1 (Scrapy's
``bootstrap_failed``), which is right.

:func:`report_open_failure` logs the message once, as an ERROR with the state
directory's ``irlscrapy check`` and ``irlscrapy repair`` commands when the state is
damaged, and from then on drops every log record and asyncio report whose exception
is, or was raised while handling, that error, and the errors of spider_closed handlers
of components that never opened: the reader sees the one line. The refusal is counted
in the stat ``irl/refused/<kind>`` (:func:`refusal`: ``damaged_state``, ``locked``,
``read_only``, ``disk_full``, ``configuration``, ``agent_conflict``, else ``error``).

:func:`report_failed_start` is the last resort, installed once the settings have passed
their check: an irlscrapy error that a component raises while Scrapy builds the crawl,
without reporting it (an extension's ``from_crawler``), ends the crawl's task, and
asyncio's report of that task becomes the one line.
"""

from __future__ import annotations

import asyncio
import errno
import logging
from pathlib import Path
from typing import Any

from scrapy.utils.reactor import is_asyncio_reactor_installed, is_reactor_installed

from irlscrapy.exceptions import (
    AgentConflict,
    ConfigurationError,
    DamagedState,
    DirectoryLocked,
    DrumFormatError,
    IrlscrapyError,
    disk_full,
)

logger = logging.getLogger(__name__)


#: The errors of a state directory the crawl may not write to (read-only, forbidden).
UNWRITABLE = (errno.EROFS, errno.EACCES)
#: The kind of a refused open, by the class of its error (the first that matches).
_REFUSALS: tuple[tuple[type[IrlscrapyError], str], ...] = (
    (DamagedState, "damaged_state"),
    (DirectoryLocked, "locked"),
    (AgentConflict, "agent_conflict"),
    (ConfigurationError, "configuration"),
    (DrumFormatError, "configuration"),
)


def refusal(error: IrlscrapyError) -> str:
    """The kind of refusal ``error`` is (its stat is ``irl/refused/<kind>``): by its
    class, or for the scheduler's own errors by what caused them (a full disk, a state
    directory it may not write to)."""
    for cls, kind in _REFUSALS:
        if isinstance(error, cls):
            return kind
    cause = error.__cause__
    if disk_full(cause):
        return "disk_full"
    if isinstance(cause, OSError) and cause.errno in UNWRITABLE:
        return "read_only"
    return "error"


def report_open_failure(
    error: IrlscrapyError, state_dir: Path | None = None, stats: Any = None
) -> None:
    """Log ``error`` (raised by the scheduler's open, or while the crawl is built: a
    setting checked by :mod:`irlscrapy.startcheck`, a spider argument) once, count it
    in ``stats`` (None: not built yet), and keep the tracebacks Scrapy logs of the
    half-open crawl it leaves out of the log."""
    if getattr(error, "reported", False):
        return
    error.reported = True  # type: ignore[attr-defined]
    if stats is not None:
        stats.inc_value(f"irl/refused/{refusal(error)}")
    message = f"the crawl cannot start: {error}"
    if isinstance(error, DamagedState) and state_dir is not None:
        message += (
            f". Run `irlscrapy check {state_dir}` to list what is damaged, and "
            f"`irlscrapy repair {state_dir}` to recover what can be recovered"
        )
    logger.error(message)
    hidden = _Hidden(error)
    handlers = logging.getLogger().handlers
    for handler in handlers:
        handler.addFilter(hidden)
    loop = _crawl_loop()
    if loop is None:
        return
    default = loop.get_exception_handler()

    def report(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if hidden.caused_by(context.get("exception")):
            # the crawl's task ended with the error, its half-open close done: the
            # log filter has nothing left to hide
            for handler in handlers:
                handler.removeFilter(hidden)
            loop.set_exception_handler(default)
        elif default is None:
            loop.default_exception_handler(context)
        else:
            default(loop, context)

    loop.set_exception_handler(report)


def report_failed_start() -> None:
    """The last resort, installed once the settings are checked: one of irlscrapy's
    errors that ends the crawl's task unreported (raised by a component while Scrapy
    builds the crawl, such as an extension's ``from_crawler``) is logged as the one
    line, instead of asyncio's report of a task exception with its traceback."""
    loop = _crawl_loop()
    if loop is None or getattr(loop.get_exception_handler(), "last_resort", False):
        return  # (installed by an earlier crawl of this process)
    default = loop.get_exception_handler()

    def report(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = _irlscrapy_error(context.get("exception"))
        if error is None:
            if default is None:
                loop.default_exception_handler(context)
            else:
                default(loop, context)
        elif not getattr(error, "reported", False):
            error.reported = True  # type: ignore[attr-defined]
            logger.error("the crawl cannot start: %s", error)

    report.last_resort = True  # type: ignore[attr-defined]
    loop.set_exception_handler(report)


def _irlscrapy_error(exception: BaseException | None) -> IrlscrapyError | None:
    """The first of irlscrapy's errors in ``exception``'s chain (cause or context)."""
    seen: set[int] = set()
    while exception is not None and id(exception) not in seen:
        if isinstance(exception, IrlscrapyError):
            return exception
        seen.add(id(exception))
        exception = exception.__cause__ or exception.__context__
    return None


def _crawl_loop() -> asyncio.AbstractEventLoop | None:
    """The asyncio loop the crawl runs on (Twisted's asyncio reactor), or None."""
    if not is_reactor_installed() or not is_asyncio_reactor_installed():
        return None
    return asyncio.get_event_loop()


class _Hidden(logging.Filter):
    """Drops records whose exception chain holds ``error``."""

    def __init__(self, error: BaseException) -> None:
        super().__init__()
        self.error = error

    def filter(self, record: logging.LogRecord) -> bool:
        # Scrapy's components that never opened fail in their spider_closed handlers
        # (CoreStats: no start time), logged by scrapy.utils.signal apart from our error
        if record.name == "scrapy.utils.signal" and record.exc_info:
            return False
        return not (record.exc_info and self.caused_by(record.exc_info[1]))

    def caused_by(self, exception: BaseException | None) -> bool:
        seen: set[int] = set()
        while exception is not None and id(exception) not in seen:
            if exception is self.error:
                return True
            seen.add(id(exception))
            exception = exception.__cause__ or exception.__context__
        return False
