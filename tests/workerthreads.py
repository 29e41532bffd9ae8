"""Shared by the tests of irlscrapy's worker threads (DRUM merges, the WARC recorder)."""

from __future__ import annotations

import os
import threading
from typing import Any


class RecordingReactor:
    """What deferToThreadPool needs of a reactor: results are handed to callFromThread."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, tuple[Any, ...]]] = []
        self.triggers: list[tuple[str, str, Any]] = []

    def callFromThread(self, f: Any, *args: Any) -> None:
        self.calls.append((f, args))

    def addSystemEventTrigger(self, phase: str, event: str, f: Any) -> None:
        self.triggers.append((phase, event, f))

    def deliver(self) -> None:
        """Run what the worker handed back, as the reactor would."""
        calls, self.calls = self.calls, []
        for f, args in calls:
            f(*args)


def where() -> tuple[int, int]:
    """The calling thread's native id and nice value."""
    thread = threading.get_native_id()
    return thread, os.getpriority(os.PRIO_PROCESS, thread)
