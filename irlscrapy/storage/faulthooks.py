"""Test-only pauses at named phases, so a fault test can kill a crawl while it is there.

With ``IRLSCRAPY_PAUSE_AT=<phase>[@<n>]`` in the environment, the n-th time (default:
the first) the crawl reaches ``<phase>``, it appends the phase's name and a newline to
the file ``IRLSCRAPY_PAUSE_FILE`` and sleeps, for the test to kill it there and know
where it died. The phases:

- ``state-open``: the state directory is locked, nothing of it read yet;
- ``merge:<drum>``: a DRUM merge has begun (its journal closed, its first bucket
  merged); ``<drum>`` is the DRUM's directory name (``urlseen``, ``indegree``, ...);
- ``beast-resplit``: a BEAST re-split has begun (state.json marks it; the new QF file
  is open, the old one not yet read).

Without the variable, :func:`reach` costs a comparison.
"""

from __future__ import annotations

import os
import time

_AT = os.environ.get("IRLSCRAPY_PAUSE_AT", "")
_PHASE, _, _NTH = _AT.partition("@")
_reached = 0

#: How long a paused crawl sleeps, at most (the test kills it long before).
PAUSE_S = 600.0


def reach(phase: str) -> None:
    """The crawl has reached ``phase``: pause here if the environment asks to."""
    global _reached
    if phase != _PHASE:
        return
    _reached += 1
    if _reached != int(_NTH or 1):
        return
    with open(os.environ["IRLSCRAPY_PAUSE_FILE"], "a") as f:
        f.write(phase + "\n")
    time.sleep(PAUSE_S)
