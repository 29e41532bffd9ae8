"""The workbench's horizon: the overall target follows the fetch rate, the shares follow
the delays."""

from __future__ import annotations

import math

import pytest

from irlscrapy.scheduler.frontier.horizon import RATE_STEP, Horizon


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def fetch_at(horizon: Horizon, clock: Clock, rate: float, seconds: float) -> None:
    """``rate`` fetches a second for ``seconds``, the rate read every RATE_STEP."""
    for _ in range(round(seconds / RATE_STEP)):
        for _ in range(round(rate * RATE_STEP)):
            horizon.fetched()
        clock.now += RATE_STEP
        horizon.rate()


def test_the_target_is_the_floor_until_a_rate_is_measured() -> None:
    clock = Clock()
    horizon = Horizon(30.0, clock, min_urls=500)
    assert horizon.rate() == 0.0
    assert horizon.urls() == 500


def test_the_first_measured_rate_counts_at_once_then_moves_with_time_constant_h() -> None:
    clock = Clock()
    horizon = Horizon(30.0, clock, min_urls=10)
    fetch_at(horizon, clock, 200.0, RATE_STEP)
    assert horizon.rate() == pytest.approx(200.0)
    assert horizon.urls() == 6_000  # 200 pages/s x 30 s
    fetch_at(horizon, clock, 100.0, 30.0)  # one time constant at half the rate
    assert horizon.rate() == pytest.approx(100.0 + 100.0 / math.e, rel=0.02)
    fetch_at(horizon, clock, 100.0, 300.0)
    assert horizon.rate() == pytest.approx(100.0, rel=0.01)


def test_a_share_is_what_one_host_or_ip_fetches_within_the_horizon() -> None:
    horizon = Horizon(30.0, Clock())
    assert horizon.share(4.0) == 8  # ceil(7.5)
    assert horizon.share(40.0) == 1  # the paper's tau_h: never below one URL
    assert horizon.share(0.05) == 600
    assert horizon.share(0.0) == math.inf


def test_a_horizon_must_be_positive() -> None:
    with pytest.raises(ValueError, match="> 0 seconds"):
        Horizon(0.0, Clock())
