"""BEAST's state.json read and checked, and the queue files it says must be there
(the layout: :mod:`irlscrapy.scheduler.frontier.beast`); shared by BEAST's open and
``irlscrapy check`` (:mod:`irlscrapy.state.check`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import cast

from irlscrapy.exceptions import DamagedState

STATE_VERSION = 1  # DO NOT CHANGE: the version of state.json's layout


def file_number(path: Path) -> int:
    """The number in a queue file's name (slot-<n>.rec, qf-<n>.rec, pending-<n>.rec)."""
    return int(path.stem.rpartition("-")[2])


def missing_queue_files(
    path: Path, state: dict[str, object], read_past: tuple[int, int] | None
) -> Iterator[DamagedState]:
    """The queue files under ``path`` that ``state`` (state.json, as read) says must
    be there and are not (module docstring); ``read_past``: the caller's position."""
    qf = path / f"qf-{state['qf']}.rec"
    if not qf.exists():
        yield DamagedState(qf, "missing: the URLs in BEAST's overflow queue (QF) would be lost")
    resplit = state.get("resplit")
    for name in resplit.get("sources", ()) if isinstance(resplit, dict) else ():
        if not (path / name).exists():
            yield DamagedState(
                path / name, "missing: a re-split places its URLs, which would be lost"
            )
    # (a slot before the one being read was read to its end and deleted)
    reading = int(state["reading"])  # type: ignore[call-overload]
    at, offset = read_past if read_past else (-1, -1)
    if offset >= 0 and state.get("ends_marked") and not (path / f"slot-{at}.rec").exists():
        yield DamagedState(
            path / f"slot-{at}.rec",
            f"missing: the reader is inside it (at byte {offset}), and the URLs "
            "queued in the rest of it would be lost",
        )
    read_to = max(reading - 1, at if offset >= 0 else at - 1)
    for slot in cast(list[int], state["slots"]):
        if slot > read_to and not (path / f"slot-{slot}.rec").exists():
            yield DamagedState(
                path / f"slot-{slot}.rec",
                "missing: state.json lists it as a queue the reader has not reached, and "
                "the URLs queued in it would be lost",
            )


def read_state(path: Path) -> dict[str, object]:
    """state.json, its fields checked (DamagedState if they cannot have been written)."""
    try:
        state = json.loads(path.read_text())
        counts = [int(state[f]) for f in ("version", "reading", "j", "cycle_end", "qf")]
        counts += [int(state.get(f, 0)) for f in ("taken", "budget_sum", "placed")]
        state["slots"] = [int(slot) for slot in state.get("slots") or ()]
        counts += state["slots"]
        resplit = state.get("resplit")
        if resplit is not None:
            counts += [int(v) for v in dict(resplit["slot_sizes"]).values()]
        if min(counts) < 0 or state["j"] < 2:
            raise ValueError("a negative count, or fewer than two queues")
    except (ValueError, KeyError, TypeError) as exc:  # (JSONDecodeError is a ValueError)
        raise DamagedState(path, f"unreadable ({exc!r})") from None
    return state
