"""The system resolver's lookup threads (irlscrapy/scheduler/hosts/lookupthreads.py):
bounded, answered on the reactor, and never holding the process at its exit."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from typing import Any

from irlscrapy.scheduler.hosts.lookupthreads import LookupThreads


class _Reactor:
    """callFromThread into a list the test drains on its own thread."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, tuple[Any, ...]]] = []
        self.lock = threading.Lock()

    def callFromThread(self, f: Any, *args: Any) -> None:
        with self.lock:
            self.calls.append((f, args))

    def drain(self, wanted: int, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        done = 0
        while done < wanted and time.monotonic() < deadline:
            with self.lock:
                calls, self.calls = self.calls, []
            for f, args in calls:
                f(*args)
            done += len(calls)
            time.sleep(0.01)
        assert done == wanted


def test_at_most_size_lookups_run_and_the_rest_wait_their_turn() -> None:
    reactor = _Reactor()
    pool = LookupThreads(reactor, size=2)
    gate = threading.Event()
    results: list[Any] = []
    for name in ("a", "b", "c", "d", "e"):
        pool(lambda n: gate.wait(10) and n.upper(), name).addCallback(results.append)
    assert pool.running == 2 and len(pool) == 3
    gate.set()
    reactor.drain(5)
    assert sorted(results) == ["A", "B", "C", "D", "E"]
    assert pool.running == 0 and len(pool) == 0


def test_a_failed_lookup_reaches_the_errback() -> None:
    reactor = _Reactor()
    pool = LookupThreads(reactor)
    failures: list[Any] = []
    pool(lambda: 1 / 0).addErrback(failures.append)
    reactor.drain(1)
    assert failures and failures[0].check(ZeroDivisionError)


def test_close_drops_the_queued_lookups_and_answers_none() -> None:
    reactor = _Reactor()
    pool = LookupThreads(reactor, size=1)
    gate = threading.Event()
    started: list[str] = []
    answered: list[Any] = []

    def lookup(name: str) -> str:
        started.append(name)
        gate.wait(10)
        return name

    for name in ("a", "b", "c"):
        pool(lookup, name).addBoth(answered.append)
    pool.close()
    gate.set()
    reactor.drain(1)
    assert started == ["a"] and answered == [] and len(pool) == 0
    pool(lookup, "d").addBoth(answered.append)  # closed: nothing starts
    assert pool.running == 0 and answered == []


def test_the_process_exits_at_once_with_lookups_still_queued_and_running() -> None:
    """Fifty lookups of 3 s each, ten at a time: the reactor's thread pool would hold
    the exit 15 s; LookupThreads, closed, not at all."""
    code = (
        "import time\n"
        "from twisted.internet import reactor\n"
        "from irlscrapy.scheduler.hosts.lookupthreads import LookupThreads\n"
        "pool = LookupThreads(reactor)\n"
        "for i in range(50):\n"
        "    pool(time.sleep, 3)\n"
        "def stop():\n"
        "    print(pool.running, len(pool))\n"
        "    pool.close()\n"
        "    reactor.stop()\n"
        "reactor.callLater(0.2, stop)\n"
        "reactor.run()\n"
    )
    began = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    took = time.monotonic() - began
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["10", "40"]
    assert took < 2.5, took  # the interpreter's start included; 15 s if it waited
