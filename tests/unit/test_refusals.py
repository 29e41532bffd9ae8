"""Refusals and give-ups are stats: an open refused is ``irl/refused/<kind>``
(irlscrapy.runtime.openfailure.refusal), a crawl stopped ``irl/given_up/<reason>``
(irlscrapy.scheduler.diskfull.CrawlStop), each stop logged once."""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import plyvel
import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler
from twisted.python.failure import Failure

from irlscrapy.exceptions import (
    AgentConflict,
    ConfigurationError,
    CorruptRecordFile,
    DamagedState,
    DirectoryLocked,
    DrumFormatError,
    IrlscrapyError,
)
from irlscrapy.runtime.openfailure import refusal
from irlscrapy.scheduler.diskfull import CrawlStop


def _caused_by(cause: BaseException) -> IrlscrapyError:
    try:
        raise IrlscrapyError("the crawl cannot open its state") from cause
    except IrlscrapyError as error:
        return error


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (DamagedState("x", "cut short"), "damaged_state"),
        (CorruptRecordFile("x", "a bad checksum"), "damaged_state"),
        (DirectoryLocked("locked by process 1"), "locked"),
        (AgentConflict("another process runs as agent a"), "agent_conflict"),
        (ConfigurationError("IRL_X must be >= 1"), "configuration"),
        (DrumFormatError("another DRUM format"), "configuration"),
        (_caused_by(OSError(errno.ENOSPC, "No space left on device")), "disk_full"),
        (_caused_by(OSError(errno.EROFS, "Read-only file system")), "read_only"),
        (_caused_by(OSError(errno.EACCES, "Permission denied")), "read_only"),
        (IrlscrapyError("anything else"), "error"),
    ],
)
def test_a_refused_open_is_named_by_its_error(error: IrlscrapyError, kind: str) -> None:
    assert refusal(error) == kind


def test_a_stop_is_a_give_up_counted_and_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    crawler = get_crawler(Spider)
    stop = CrawlStop(crawler, lambda: tmp_path)
    full = OSError(errno.ENOSPC, "No space left on device")
    with caplog.at_level(logging.ERROR):
        stop.disk_full(full)
        stop.disk_full(full)  # (every entry point meets the full disk)
        stop.give_up("Redis is gone", "irlscrapy_agent_stopped")  # stopped already
    assert crawler.stats is not None
    assert crawler.stats.get_value("irl/given_up/disk_full") == 1
    assert crawler.stats.get_value("irl/given_up/agent_stopped") is None
    assert len([r for r in caplog.records if "is full" in r.getMessage()]) == 1


def test_each_kind_of_stop_has_its_stat(tmp_path: Path) -> None:
    crawler = get_crawler(Spider)
    CrawlStop(crawler, lambda: tmp_path).give_up("Redis is gone", "irlscrapy_agent_stopped")
    CrawlStop(crawler, lambda: tmp_path).failed(Failure(ValueError("a bug")), "refreshing STAR")
    assert crawler.stats is not None
    assert crawler.stats.get_value("irl/given_up/agent_stopped") == 1
    assert crawler.stats.get_value("irl/given_up/error") == 1


@pytest.mark.parametrize(
    "damage",
    [
        plyvel.CorruptionError("Corruption: block checksum mismatch"),
        DamagedState("urlseen/journal-7.rec", "a damaged record"),
    ],
)
def test_damage_met_while_running_stops_in_one_line_without_a_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: Exception
) -> None:
    """A LevelDB block damaged under a running merge read with its checksums: the stop
    names the damage and the commands, as damage met on open does."""
    crawler = get_crawler(Spider)
    with caplog.at_level(logging.ERROR):
        CrawlStop(crawler, lambda: tmp_path).failed(Failure(damage), "a URLseen merge")
    (record,) = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert record.exc_info is None
    assert f"irlscrapy repair {tmp_path}" in record.getMessage()
    assert str(damage) in record.getMessage()
    assert crawler.stats is not None
    assert crawler.stats.get_value("irl/given_up/damaged_state") == 1
