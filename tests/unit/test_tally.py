"""A refusal or give-up counted through irlscrapy.runtime.troubles: every one is counted, the first
of each stat logged, once per stats collector (a run)."""

from __future__ import annotations

import logging

import pytest

from harness.frontierfixture import Stats
from irlscrapy.runtime.troubles import tally

log = logging.getLogger("tests.tally")


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == log.name]


def test_every_one_is_counted_and_the_first_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    stats = Stats()
    with caplog.at_level(logging.INFO):
        for host in ("a.com", "b.com", "c.com"):
            tally(log, stats, "irl/hosts/retired", "retired %s", host)
    assert stats.values == {"irl/hosts/retired": 3}
    assert _lines(caplog) == [
        "retired a.com (counted in irl/hosts/retired; only the first is logged)"
    ]


def test_each_stat_is_logged_once_at_its_level_with_its_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stats = Stats()
    with caplog.at_level(logging.INFO):
        tally(log, stats, "irl/frontier/given_up", "gave up on %d URLs", 7, count=7)
        tally(log, stats, "irl/agent/spills", "spilled", level=logging.WARNING)
        tally(log, stats, "irl/frontier/given_up", "gave up on %d URLs", 2, count=2)
    assert stats.values == {"irl/frontier/given_up": 9, "irl/agent/spills": 1}
    assert [(r.levelno, r.getMessage().split(" (")[0]) for r in caplog.records] == [
        (logging.INFO, "gave up on 7 URLs"),
        (logging.WARNING, "spilled"),
    ]


def test_another_run_logs_again(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        tally(log, Stats(), "irl/guard/refused_hosts", "refused")
        tally(log, Stats(), "irl/guard/refused_hosts", "refused")
    assert len(_lines(caplog)) == 2
