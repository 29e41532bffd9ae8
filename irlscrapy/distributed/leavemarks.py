"""What an agent's directory (``JOBDIR/agent``) says of a graceful leave
(irlscrapy.distributed.handover), so a JOBDIR whose work went to other agents is never
crawled again.

``leaving``
    Written (and synced) before the last round of I/O that removes the agent from the
    members. Found at a start: the leave was cut short. If Redis records the agent as
    left, it did leave (``left`` is written, and the start refused); else the mark goes
    and the leave starts over (its request is still in Redis).
``left``
    The agent left: its JOBDIR refuses to start (a new JOBDIR joins the crawl anew).
"""

from __future__ import annotations

import os
from pathlib import Path

from irlscrapy.distributed.registry import CrawlRegistry
from irlscrapy.exceptions import ConfigurationError

LEAVING, LEFT = "leaving", "left"


def check_directory(directory: Path, registry: CrawlRegistry, agent: str) -> None:
    """Refuse a directory whose agent left (before any word with Redis); settle a leave
    cut short (see the module docstring)."""
    left = directory / LEFT
    if not left.exists() and (directory / LEAVING).exists():
        if registry.has_left(agent):
            mark_left(directory, registry.crawl)
        else:
            (directory / LEAVING).unlink()
    if left.exists():
        raise ConfigurationError(
            f"this JOBDIR's agent left crawl {left.read_text()!r} and handed its work "
            "over: start the agent with a new JOBDIR to join the crawl again"
        )


def mark_leaving(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LEAVING, "w") as f:
        f.flush()
        os.fsync(f.fileno())


def mark_left(directory: Path, crawl: str) -> None:
    (directory / LEFT).write_text(crawl)
    (directory / LEAVING).unlink(missing_ok=True)
