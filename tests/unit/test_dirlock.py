"""DirectoryLock: one holder per directory; dropped unreleased, it lets go quietly."""

from __future__ import annotations

import gc
import warnings
from pathlib import Path

import pytest

from irlscrapy.exceptions import DirectoryLocked
from irlscrapy.storage.dirlock import DirectoryLock


def test_a_second_lock_is_refused_until_the_first_is_released(tmp_path: Path) -> None:
    first = DirectoryLock(tmp_path, "state")
    first.acquire()
    with pytest.raises(DirectoryLocked, match="locked by process"):
        DirectoryLock(tmp_path, "state").acquire()
    first.release()
    second = DirectoryLock(tmp_path, "state")
    second.acquire()
    second.release()


def test_a_lock_collected_unreleased_closes_its_file_without_a_warning(tmp_path: Path) -> None:
    """An owner dropped without close (a failed test's dupefilter) must not make the
    next garbage collection raise a ResourceWarning, nor keep the directory locked."""
    lock = DirectoryLock(tmp_path, "state")
    lock.acquire()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        del lock
        gc.collect()
    again = DirectoryLock(tmp_path, "state")
    again.acquire()
    again.release()
