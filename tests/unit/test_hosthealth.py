"""Host health's back-off arithmetic and Retry-After parsing."""

from __future__ import annotations

import email.utils

import pytest

from irlscrapy.exceptions import ConfigurationError
from irlscrapy.scheduler.hosts.hosthealth import HostHealth, retry_after_seconds

HEALTH = HostHealth(backoff_base=10.0, backoff_max=100.0, max_failures=3, retire_delay=60.0)


def test_backoff_doubles_to_the_cap() -> None:
    assert [HEALTH.backoff(n, None)[0] for n in range(1, 6)] == [10, 20, 40, 80, 100]
    assert HEALTH.backoff(10_000, None) == (100.0, False)


def test_retry_after_wins_up_to_the_cap() -> None:
    assert HEALTH.backoff(1, 3.0) == (3.0, False)
    assert HEALTH.backoff(4, 7.0) == (7.0, False)  # what the host asked, not the doubling
    assert HEALTH.backoff(1, 1e6) == (100.0, True)


def test_retirement_after_max_failures() -> None:
    assert not HEALTH.retires(2) and HEALTH.retires(3)
    never = HostHealth(backoff_base=1.0, backoff_max=2.0, max_failures=0, retire_delay=0.0)
    assert not never.retires(10**6)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (b"120", 120.0),
        ("0", 0.0),
        (" 5 ", 5.0),
        (None, None),
        (b"soon", None),
        (b"-3", None),
        (b"\xb2", None),  # "²" in latin-1: a digit to str.isdigit, not to float
    ],
)
def test_retry_after_delay_seconds(value: bytes | str | None, seconds: float | None) -> None:
    assert retry_after_seconds(value) == seconds


def test_retry_after_http_date() -> None:
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 90, usegmt=True)
    assert retry_after_seconds(date.encode(), now=now) == pytest.approx(90.0)
    past = email.utils.formatdate(now - 90, usegmt=True)
    assert retry_after_seconds(past, now=now) == 0.0


def test_bad_configuration_is_explained() -> None:
    with pytest.raises(ConfigurationError, match="IRL_HEALTH_BACKOFF_BASE"):
        HostHealth(backoff_base=10.0, backoff_max=1.0, max_failures=1, retire_delay=1.0)
