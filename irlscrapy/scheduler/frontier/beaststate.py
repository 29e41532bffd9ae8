"""BEAST's state.json read and checked, the queue files it says must be there, and the
undoing of a re-split's phase it names (the layout and the crash semantics:
:mod:`irlscrapy.scheduler.frontier.beast`); shared by BEAST's open and ``irlscrapy
check`` (:mod:`irlscrapy.state.check`)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import cast

from irlscrapy.exceptions import DamagedState
from irlscrapy.storage.recovery import recovered

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


def undo_phase(path: Path, resplit: dict[str, object], qf: int) -> tuple[int, list[Path]]:
    """Undo the re-split's phase a kill cut short (``resplit``: state.json's; ``qf``: its
    QF generation): the slot files and the QF truncated back. Return the QF generation
    to write and what the phase to do again places: its sources, then its pending file."""
    sizes = {int(k): int(v) for k, v in cast(dict[str, int], resplit["slot_sizes"]).items()}
    for slot in path.glob("slot-*.rec"):
        if file_number(slot) not in sizes:
            slot.unlink()
        elif slot.stat().st_size > sizes[file_number(slot)]:
            os.truncate(slot, sizes[file_number(slot)])
    recovered("resplit", path)
    if "sources" not in resplit:  # an irlscrapy that re-split at once: QF is the source
        (path / f"qf-{qf + 1}.rec").unlink(missing_ok=True)
        return qf + 1, [path / f"qf-{qf}.rec"]
    new_qf = path / f"qf-{qf}.rec"
    if new_qf.stat().st_size > cast(int, resplit["qf_size"]):
        os.truncate(new_qf, cast(int, resplit["qf_size"]))
    sources = [path / name for name in cast(list[str], resplit["sources"])]
    pending = path / cast(str, resplit["pending"])
    return qf, [*sources, pending] if pending.exists() else sources
