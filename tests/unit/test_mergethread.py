"""MergeThread: work runs in one worker thread, at a lower CPU priority than the caller."""

from __future__ import annotations

import os
from typing import Any

from irlscrapy.runtime.mergethread import NICENESS, MergeThread
from tests.workerthreads import RecordingReactor, where


def test_work_runs_in_one_lower_priority_thread_and_results_come_back() -> None:
    reactor = RecordingReactor()
    merges = MergeThread(reactor)
    got: list[Any] = []
    for _ in range(3):
        merges(where).addBoth(got.append)
    merges.stop()  # joins the thread: the three jobs are done
    reactor.deliver()
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
    reactor.deliver()
    assert got == [ZeroDivisionError]
