"""The crawl's one state directory: made and locked by the first component that opens
it, unlocked and (if temporary) removed by the last that closes it."""

from __future__ import annotations

from pathlib import Path

import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler

from irlscrapy.exceptions import DirectoryLocked
from irlscrapy.state.directory import StateDirectory
from irlscrapy.storage.dirlock import DirectoryLock


def _locked(path: Path) -> bool:
    probe = DirectoryLock(path, "probe")
    try:
        probe.acquire()
    except DirectoryLocked:
        return True
    probe.release()
    return False


def test_a_temporary_directory_lives_until_its_last_holder_closes() -> None:
    state = StateDirectory(None)
    first = state.open()
    assert state.open() == first and first.is_dir() and _locked(first)
    state.close()
    assert first.is_dir() and _locked(first)  # the second holder still keeps files there
    state.close()
    assert not first.exists()
    state.close()  # one close too many changes nothing


def test_a_configured_directory_is_unlocked_and_kept(tmp_path: Path) -> None:
    state = StateDirectory(tmp_path / "job")
    assert state.open() == tmp_path / "job"
    state.close()
    assert (tmp_path / "job").is_dir() and not _locked(tmp_path / "job")


def test_a_reopened_temporary_state_is_a_new_directory() -> None:
    state = StateDirectory(None)
    first = state.open()
    state.close()
    second = state.open()
    try:
        assert second != first and second.is_dir()
    finally:
        state.close()


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({}, None),
        ({"JOBDIR": "job"}, "job"),
        ({"JOBDIR": "job", "IRL_STATE_DIR": "state"}, "state"),
    ],
)
def test_irl_state_dir_then_jobdir_then_temporary(
    settings: dict[str, str], expected: str | None
) -> None:
    crawler = get_crawler(Spider, settings)
    state = StateDirectory.of(crawler)
    assert state is StateDirectory.of(crawler)  # one per crawler
    assert state.path == (Path(expected) if expected else None)
    assert state.temporary == (expected is None)
