"""A disk to fill: a small tmpfs, and a file that takes its last free block."""

from __future__ import annotations

import contextlib
import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path

#: Bytes written at a time by :func:`fill`: a tmpfs page.
PAGE = 4096


@contextlib.contextmanager
def small_tmpfs(where: Path, size: str = "4m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted on the new directory ``where`` (root only), unmounted
    after, lazily (a file a failed test left open would keep it busy)."""
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "--lazy", str(where)], check=True)


def fill(path: Path) -> None:
    """Write the file ``path`` until its file system is full."""
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(bytes(PAGE))
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
