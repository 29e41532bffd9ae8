"""The no-idle watch counts a window for each second idle while work waits, no more."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from twisted.internet import task

from irlscrapy.report.idlewatch import STAT, IdleWatch, idle_with_work

BUSY = {
    "fetches_in_flight": 1,
    "urlseen_merging": 0,
    "urlseen_pending": 5,
    "beast_urls": 0,
    "beast_resplitting": 0,
    "ips_due": 0,
    "admission_paused": 0,
    "workbench_full": 0,
}
IDLE_WITH_WORK = {**BUSY, "fetches_in_flight": 0}
IDLE_NO_WORK = {**IDLE_WITH_WORK, "urlseen_pending": 0}


class _Stats:
    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def set_value(self, key: str, value: int) -> None:
        self.values[key] = value

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] = self.values.get(key, 0) + count


@given(
    st.fixed_dictionaries(
        {
            k: st.integers(0, 3)
            for k in (
                "fetches_in_flight",
                "urlseen_merging",
                "urlseen_pending",
                "beast_urls",
                "beast_resplitting",
                "ips_due",
                "admission_paused",
                "workbench_full",
            )
        }
    )
)
def test_idle_with_work_means_nothing_in_flight_no_merge_and_work_waiting(
    status: dict[str, int],
) -> None:
    admits = not status["admission_paused"] and not status["workbench_full"]
    beast = status["beast_urls"] if admits and not status["beast_resplitting"] else 0
    work = status["urlseen_pending"] + beast + status["ips_due"]
    expected = not status["fetches_in_flight"] and not status["urlseen_merging"] and work > 0
    assert idle_with_work(status) == expected


@given(st.lists(st.sampled_from(["busy", "idle", "idle-work"]), max_size=80))
def test_each_second_idle_with_work_in_a_row_is_one_window(samples: list[str]) -> None:
    """A model: windows = for each run of idle-with-work samples, len(run) // 10."""
    by_name = {"busy": BUSY, "idle": IDLE_NO_WORK, "idle-work": IDLE_WITH_WORK}
    feed = iter(samples)
    current: dict[str, dict[str, int]] = {"status": BUSY}
    stats, clock = _Stats(), task.Clock()

    def status() -> dict[str, int]:
        return current["status"]

    watch = IdleWatch(stats, 0.1, status, clock)
    watch.spider_opened()
    for name in feed:
        current["status"] = by_name[name]
        clock.advance(0.1)
    watch.spider_closed()
    expected, run = 0, 0
    for name in samples:
        run = run + 1 if name == "idle-work" else 0
        if run == 10:
            expected, run = expected + 1, 0
    assert stats.values[STAT] == expected


def test_nothing_is_watched_without_the_irl_scheduler() -> None:
    stats = _Stats()
    watch = IdleWatch(stats, 0.1, lambda: None, task.Clock(), watched=lambda: False)
    watch.spider_opened()
    assert STAT not in stats.values
