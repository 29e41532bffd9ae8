"""Errors raised by irlscrapy.

Hierarchy::

    IrlscrapyError                 base of everything irlscrapy raises on purpose
    ├── ConfigurationError         a setting, profile or argument is wrong; the message says
    │                              which and what values are accepted
    ├── InVitroError               the in-vitro web could not be started or reached
    ├── ReportError                ``irlscrapy report`` cannot read a crawl's records
    ├── DirectoryLocked            another crawl holds the state directory
    ├── DrumFormatError            a DRUM directory of another format or configuration
    ├── DamagedState               a file of a state directory is damaged: the message
    │   │                          names it and says what is wrong (``irlscrapy check``
    │   │                          lists every such file, ``irlscrapy repair`` mends them)
    │   └── CorruptRecordFile      a record file damaged before its end
    ├── RequestCodecError          a request cannot be stored (also a ValueError, as
    │                              Scrapy's schedulers expect of a refused request)
    ├── AgentConflict              another process runs as this agent of a multi-agent
    │                              crawl
    └── DNSLookupFailed            a host does not resolve (also Twisted's DNSLookupError,
                                   so it is defined beside the resolver that raises it:
                                   irlscrapy.scheduler.hosts.resolver; this module stays
                                   free of Scrapy and Twisted)

Third-party errors are translated into these at one boundary per component, and every
message says what to do next. :func:`disk_full` tells a write that failed for want of
space from other errors, for the scheduler's stop (:mod:`irlscrapy.scheduler.diskfull`)
and a refused start (:mod:`irlscrapy.runtime.openfailure`) alike.
"""

import errno


class IrlscrapyError(Exception):
    """Base class of the errors irlscrapy raises on purpose."""


class ConfigurationError(IrlscrapyError, ValueError):
    """A setting, profile or argument has a value irlscrapy cannot use."""


class InVitroError(IrlscrapyError):
    """The in-vitro web could not be started, or it stopped unexpectedly."""


class ReportError(IrlscrapyError):
    """A directory is not a finished crawl's state directory with report records."""


class DirectoryLocked(IrlscrapyError):
    """Another process has the state directory open."""


class DrumFormatError(IrlscrapyError):
    """The directory holds a DRUM of another format or configuration."""


class DamagedState(IrlscrapyError):
    """A file of a state directory is damaged (cut short, overwritten, missing from a
    sequence): reading on would lose or invent state. The message is ``<file>: <what is
    wrong>``; a crawl that meets it stops before it fetches anything and points to
    ``irlscrapy repair`` (:mod:`irlscrapy.runtime.openfailure`)."""

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class CorruptRecordFile(DamagedState):
    """A record file is damaged before its end; it cannot be read safely."""


class RequestCodecError(IrlscrapyError, ValueError):
    """A request cannot be stored, or a payload cannot be read back.

    A ValueError too, as Scrapy's schedulers expect of a request a disk queue refuses.
    """


class AgentConflict(IrlscrapyError):
    """Another process runs as this agent of a multi-agent crawl."""


def disk_full(exc: BaseException | None) -> bool:
    """Is ``exc`` a write that failed for want of space (OSError, or LevelDB's IOError,
    which says so only in its message)?"""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return exc is not None and "No space left on device" in str(exc)
