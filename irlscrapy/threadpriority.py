"""Lowering the CPU priority of one worker thread below the reactor thread's.

Linux gives each thread its own nice value (raising it needs no privilege), so a worker
thread that lowers its own lets the kernel give the core to the reactor thread whenever
both can run: the worker uses what the reactor leaves. Elsewhere (or in a sandbox that
forbids it) the thread runs at the process's priority.
"""

from __future__ import annotations

import os
import threading


def lower_this_thread(niceness: int) -> None:
    """Raise the calling thread's nice value to ``niceness`` (0-19) if it is lower."""
    thread = threading.get_native_id()
    try:
        if os.getpriority(os.PRIO_PROCESS, thread) < niceness:
            os.setpriority(os.PRIO_PROCESS, thread, niceness)
    except OSError:
        pass
