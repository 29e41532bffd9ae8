"""A multi-agent crawl's spill files (irlscrapy.distributed.outboxjournal) meet
``irlscrapy check`` and ``irlscrapy repair`` as every record file does: a record
overwritten in an older generation is named by check and stops the agent's open; repair
keeps every whole record around it, and the agent's open then reads them back to send."""

from __future__ import annotations

from pathlib import Path

import pytest

from irlscrapy.distributed.outboxjournal import OutboxJournal
from irlscrapy.exceptions import DamagedState
from irlscrapy.state.check import check_state, repair_state

RECORDS = 30


def _spilled_outbox(state: Path) -> Path:
    """An outbox whose agent spilled RECORDS records to disk and was stopped; the path of
    the generation that holds them."""
    outbox = OutboxJournal(state / "agent")
    outbox.open()
    for n in range(RECORDS):
        outbox.append(n % 3, b"chunk %03d " % n + b"x" * 40)
    outbox.spill()
    outbox.close()
    return state / "agent" / "outbox-0.rec"


def _read_back(state: Path) -> list[tuple[int, bytes]]:
    outbox = OutboxJournal(state / "agent")
    outbox.open()
    try:
        return outbox.replay(10 * RECORDS)
    finally:
        outbox.close()


def test_a_whole_outbox_is_read_back_and_check_finds_nothing(tmp_path: Path) -> None:
    _spilled_outbox(tmp_path)
    assert check_state(tmp_path) == []
    assert len(_read_back(tmp_path)) == RECORDS


def test_an_overwritten_outbox_record_is_named_and_repair_keeps_the_others(
    tmp_path: Path,
) -> None:
    path = _spilled_outbox(tmp_path)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 4] = bytes(b ^ 0xA5 for b in data[middle : middle + 4])
    path.write_bytes(bytes(data))
    found = check_state(tmp_path)
    assert [str(d.path) for d in found] == [str(path)], found
    with pytest.raises(DamagedState, match=r"outbox-0\.rec"):
        _read_back(tmp_path)  # the agent's open stops: it would send a damaged batch
    said = repair_state(tmp_path)
    assert any(str(path) in line and "dropped" in line for line in said), said
    assert check_state(tmp_path) == []
    kept = _read_back(tmp_path)
    assert RECORDS - 2 <= len(kept) < RECORDS  # the damaged record lost, the rest kept
    assert all(chunk.endswith(b"x" * 40) for _, chunk in kept)
