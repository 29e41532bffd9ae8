"""LoadGovernor: the cap on fetches in flight, against a model of its rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from irlscrapy.scheduler.frontier.loadgovernor import DECREASE, FLOOR, WINDOW_TICKS, LoadGovernor

TARGET = 0.020
ON_TIME = 0.001
LATE = 0.100


def window(governor: LoadGovernor, lag: float, in_flight: int, asks: int = 0) -> None:
    """One decision window: ``asks`` fetches asked for with ``in_flight`` in flight, and
    WINDOW_TICKS ticks with the last one ``lag`` late."""
    for _ in range(asks):
        governor.admits(in_flight)
    for i in range(WINDOW_TICKS):
        governor.tick(lag if i == WINDOW_TICKS - 1 else ON_TIME, in_flight)


def test_starts_at_the_ceiling_and_admits_below_the_cap() -> None:
    governor = LoadGovernor(TARGET, 64)
    assert governor.cap == 64
    assert governor.admits(63)
    assert not governor.admits(64)


def test_a_late_window_with_the_cap_binding_cuts_it() -> None:
    governor = LoadGovernor(TARGET, 64)
    window(governor, LATE, 64, asks=1)
    assert governor.cap == int(64 * DECREASE)
    assert governor.cuts == 1


def test_a_late_window_far_under_the_cap_leaves_it() -> None:
    governor = LoadGovernor(TARGET, 64)
    window(governor, LATE, 6)  # start-up: few fetches, a long turn
    assert governor.cap == 64
    assert governor.cuts == 0


def test_an_on_time_window_raises_a_binding_cap_by_one() -> None:
    governor = LoadGovernor(TARGET, 64)
    window(governor, LATE, 64, asks=1)
    cut = governor.cap
    window(governor, ON_TIME, cut, asks=1)
    assert governor.cap == cut + 1
    window(governor, ON_TIME, cut // 2)  # the cap held nothing back: no rise
    assert governor.cap == cut + 1


def test_the_decision_waits_for_a_whole_window() -> None:
    governor = LoadGovernor(TARGET, 64)
    governor.admits(64)
    for _ in range(WINDOW_TICKS - 1):
        governor.tick(LATE, 64)
    assert governor.cap == 64
    governor.tick(ON_TIME, 64)
    assert governor.cap == int(64 * DECREASE)


def test_the_cap_stops_at_the_floor_and_at_the_ceiling() -> None:
    governor = LoadGovernor(TARGET, 64)
    for _ in range(50):
        window(governor, LATE, governor.cap, asks=1)
    assert governor.cap == FLOOR
    for _ in range(200):
        window(governor, ON_TIME, governor.cap, asks=1)
    assert governor.cap == 64


def test_a_ceiling_under_the_floor_is_the_floor() -> None:
    governor = LoadGovernor(TARGET, 2)
    window(governor, LATE, 2, asks=1)
    assert governor.cap == 2 == governor.floor


@pytest.mark.parametrize(("target", "ceiling"), [(0.0, 8), (-1.0, 8), (0.02, 0)])
def test_bad_parameters_are_refused(target: float, ceiling: int) -> None:
    with pytest.raises(ValueError):
        LoadGovernor(target, ceiling)


_window = st.tuples(
    st.sampled_from([0.0, ON_TIME, TARGET, TARGET * 1.01, LATE, 3.0]),  # worst lag
    st.integers(0, 80),  # fetches in flight
    st.integers(0, 3),  # fetches asked for
)


@given(ceiling=st.integers(1, 128), windows=st.lists(_window, max_size=60))
def test_the_cap_follows_its_rules(ceiling: int, windows: list[tuple[float, int, int]]) -> None:
    governor = LoadGovernor(TARGET, ceiling)
    previous = 0  # what was in flight when the window began counts as in its peak
    for lag, in_flight, asks in windows:
        before = governor.cap
        held = asks > 0 and in_flight >= before
        near = held or max(previous, in_flight) >= before * DECREASE
        window(governor, lag, in_flight, asks)
        previous = in_flight
        assert governor.floor <= governor.cap <= ceiling
        if lag > TARGET and near:
            assert governor.cap == max(governor.floor, int(before * DECREASE))
        elif lag <= TARGET and held and before < ceiling:
            assert governor.cap == before + 1
        else:
            assert governor.cap == before
