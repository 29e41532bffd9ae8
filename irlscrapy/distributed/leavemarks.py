"""What an agent's directory (``JOBDIR/agent``) says of its part in a crawl, so a
JOBDIR whose work went to other agents (a graceful leave: irlscrapy.distributed.leave)
or was given up (``irlscrapy agents remove``) is never crawled again.

``joined``
    The crawl this directory's agent is a member of (written as it starts). Found at a
    start while Redis records the agent as out of that crawl, with no ``left`` mark: it
    was removed, and the start is refused.

``leaving``
    Written (and synced) before the last round of I/O that removes the agent from the
    members. Found at a start: the leave was cut short. If Redis records the agent as
    left, it did leave (``left`` is written, and the start refused); else the mark goes
    and the leave starts over (its request is still in Redis).
``left``
    The agent left: its JOBDIR refuses to start (a new JOBDIR joins the crawl anew).
``salt``
    The salt of the URLs the agent hands over (irlscrapy.scheduler.intake.Intake.receive),
    and what for (``handoff`` or ``leave``): drawn anew for each handoff and for a leave,
    kept for a restart, so a handover started over admits nothing twice, a URL that
    comes back and goes again is admitted again, and the agent knows its own.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from irlscrapy.distributed.registry import CrawlRegistry
from irlscrapy.exceptions import ConfigurationError

JOINED, LEAVING, LEFT, SALT = "joined", "leaving", "left", "salt"


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
    joined = directory / JOINED
    if joined.exists() and joined.read_text() == registry.crawl and registry.has_left(agent):
        raise ConfigurationError(
            f"agent {agent!r} was removed from crawl {registry.crawl!r} (irlscrapy agents "
            "remove) and its partitions went to the others: start it with a new JOBDIR to "
            "join the crawl again"
        )
    directory.mkdir(parents=True, exist_ok=True)
    joined.write_text(registry.crawl)


def salt_of(directory: Path) -> tuple[str, int]:
    """(what for, the salt) of the agent's last handover; a new one if there was none."""
    try:
        kind, salt = (directory / SALT).read_text().split()
        return kind, int(salt, 16)
    except (FileNotFoundError, ValueError):
        return "none", new_salt(directory, "none")


def new_salt(directory: Path, kind: str) -> int:
    """A new salt for a handover (``kind``: handoff or leave), on disk when it returns."""
    salt = secrets.randbits(64)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / f"{SALT}.new", "w") as f:
        f.write(f"{kind} {salt:016x}")
        f.flush()
        os.fsync(f.fileno())
    os.replace(directory / f"{SALT}.new", directory / SALT)
    return salt


def mark_leaving(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LEAVING, "w") as f:
        f.flush()
        os.fsync(f.fileno())


def mark_left(directory: Path, crawl: str) -> None:
    (directory / LEFT).write_text(crawl)
    (directory / LEAVING).unlink(missing_ok=True)
