"""What the frontier holds for a URL, in RAM and on disk.

The frontier's record (BEAST's payload, and the admitted journal's item)::

    record := priority: i32be, batch: u64be, payload
              priority: the Request.priority within the host; batch: the URLseen batch
              the URL came from (0: none), which lets a restart skip a batch that was
              stored before its acknowledgement was
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from irlscrapy.scheduler.requestcodec import payload_url

#: The record's head (priority, batch): see the module docstring.
HEAD = struct.Struct(">iQ")


class RobotsFetch:
    """The workbench item of a host's robots.txt fetch. ``request``: its retry or
    redirect (kept in RAM only: after a restart robots.txt is fetched anew); None: a
    first fetch of ``/robots.txt``."""

    __slots__ = ("host", "request")

    def __init__(self, host: str, request: Any = None) -> None:
        self.host = host
        self.request = request


#: What the workbench holds for one stored URL: (payload, journal id). A plain tuple of
#: atomic values, so the cyclic GC stops tracking it: the workbench holds ~10^5 of them,
#: and a full collection's pause grows with every tracked object (an object of a class
#: is always tracked). The URL is read from the payload when asked for.
Item = tuple[bytes, int]


@dataclass(slots=True)
class MemoryItem:
    """A Request that cannot be stored on disk (a callback that is no spider method, an
    object in meta): it skips BEAST and the journal and lives in RAM, as in Scrapy's
    memory queues; a kill -9 loses it."""

    request: Any
    url: str


def item_url(item: Item | MemoryItem) -> str:
    return payload_url(item[0]) if isinstance(item, tuple) else item.url


def unpack_record(record: bytes) -> tuple[int, int, bytes]:
    """(priority, URLseen batch, payload) of a frontier record (module docstring)."""
    return (*HEAD.unpack_from(record), record[HEAD.size :])
