"""One process per state directory: an exclusive ``flock`` on ``<dir>/LOCK``.

The lock file holds the owner's pid, so a second process can say who holds it. The
kernel drops the lock when the owner dies (kill -9 included): no stale locks. A lock
that is garbage-collected unreleased (its owner was dropped without close, say by a
failed test) closes its file, which drops the lock, without a ResourceWarning.
"""

from __future__ import annotations

import fcntl
import os
import weakref
from pathlib import Path
from typing import IO

from irlscrapy.exceptions import DirectoryLocked


class DirectoryLock:
    def __init__(self, directory: Path, what: str) -> None:
        self.path = directory / "LOCK"
        self.what = what
        self._file: IO[str] | None = None

    def acquire(self, record_owner: bool = True) -> None:
        """Take the lock; ``record_owner`` false leaves the file as it is (a reader that
        must change nothing, such as ``irlscrapy check``: the last owner's pid stays)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        f = open(self.path, "a+")  # noqa: SIM115 -- held (and locked) until release()
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            owner = f.read().strip() or "unknown"
            f.close()
            raise DirectoryLocked(
                f"{self.what} directory {self.path.parent} is locked by process {owner}; "
                "stop that process or use another directory"
            ) from None
        if record_owner:
            f.seek(0)
            f.truncate()
            f.write(f"{os.getpid()}\n")
            f.flush()
        self._file = f
        self._closer = weakref.finalize(self, f.close)

    def fileno(self) -> int:
        """The locked file's descriptor: a child process given it (``pass_fds``) holds
        the lock with this process, until both have let go."""
        assert self._file is not None, "acquire() first"
        return self._file.fileno()

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            self._closer()
            self._file = None
