"""ExchangeRecorder's worker thread runs below the reactor thread's CPU priority."""

from __future__ import annotations

import os
from typing import Any

from irlscrapy.warc.recorder import NICENESS, ExchangeRecorder
from tests.workerthreads import RecordingReactor, where


def test_the_worker_runs_at_a_lower_priority_than_the_reactor_thread() -> None:
    reactor = RecordingReactor()
    recorder = ExchangeRecorder(
        files=None,
        seen=None,
        stats=None,
        address_of=lambda request, response: None,
        queue_bytes=1 << 20,
        close_spider=lambda reason: None,
        reactor=reactor,
    )
    got: list[Any] = []
    recorder._run(where).addBoth(got.append)
    recorder._worker.stop()  # joins the thread: the job is done
    reactor.deliver()
    caller = where()
    [(thread, nice)] = got
    assert thread != caller[0]
    assert nice >= max(NICENESS, caller[1])
    assert os.getpriority(os.PRIO_PROCESS, caller[0]) == caller[1]  # the caller unchanged
