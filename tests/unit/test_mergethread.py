"""MergeThread: work runs in one worker thread, at a lower CPU priority than the caller."""

from __future__ import annotations

import os
import threading
from typing import Any

from irlscrapy.dupefilters.mergethread import NICENESS, MergeThread


class RecordingReactor:
    """What deferToThreadPool needs of a reactor: results are handed to callFromThread."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, tuple[Any, ...]]] = []
        self.triggers: list[tuple[str, str, Any]] = []

    def callFromThread(self, f: Any, *args: Any) -> None:
        self.calls.append((f, args))

    def addSystemEventTrigger(self, phase: str, event: str, f: Any) -> None:
        self.triggers.append((phase, event, f))


def where() -> tuple[int, int]:
    thread = threading.get_native_id()
    return thread, os.getpriority(os.PRIO_PROCESS, thread)


def test_work_runs_in_one_lower_priority_thread_and_results_come_back() -> None:
    reactor = RecordingReactor()
    merges = MergeThread(reactor)
    got: list[Any] = []
    for _ in range(3):
        merges(where).addBoth(got.append)
    merges.stop()  # joins the thread: the three jobs are done
    for f, args in reactor.calls:
        f(*args)
    caller = where()
    assert len(got) == 3 and len({thread for thread, _ in got}) == 1
    thread, nice = got[0]
    assert thread != caller[0]
    assert nice >= max(NICENESS, caller[1])
    assert os.getpriority(os.PRIO_PROCESS, caller[0]) == caller[1]  # the caller unchanged
    assert reactor.triggers == [("during", "shutdown", merges.stop)]


def test_a_failure_reaches_the_caller() -> None:
    reactor = RecordingReactor()
    merges = MergeThread(reactor)
    got: list[Any] = []
    merges(lambda: 1 / 0).addErrback(lambda f: got.append(f.type))
    merges.stop()
    for f, args in reactor.calls:
        f(*args)
    assert got == [ZeroDivisionError]
