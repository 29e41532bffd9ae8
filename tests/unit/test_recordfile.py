"""Record files: whole records survive, torn tails are cut, damage before the end is loud."""

from __future__ import annotations

from pathlib import Path

import pytest

from irlscrapy.exceptions import CorruptRecordFile
from irlscrapy.recordfile import MAGIC, RecordWriter, repair, scan


def _write(path: Path, payloads: list[bytes]) -> None:
    writer = RecordWriter(path)
    writer.open()
    for payload in payloads:
        writer.append(payload)
    writer.close()


def test_records_read_back_in_order(tmp_path: Path) -> None:
    path = tmp_path / "a.rec"
    _write(path, [b"one", b"", b"three"])
    _write(path, [b"four"])  # reopening appends
    assert [payload for _, payload in scan(path)] == [b"one", b"", b"three", b"four"]


def test_a_kill_while_creating_leaves_no_headerless_file(tmp_path: Path) -> None:
    # What a kill -9 between creating the file and writing its header would leave:
    # only the side file, never the record file itself.
    path = tmp_path / "a.rec"
    (tmp_path / "a.rec.tmp").write_bytes(MAGIC[:3])
    assert not path.exists()
    _write(path, [b"x"])
    assert [payload for _, payload in scan(path)] == [b"x"]
    assert not (tmp_path / "a.rec.tmp").exists()


@pytest.mark.parametrize("cut", [1, 5, 9])
def test_a_torn_last_record_is_dropped_and_cut(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "a.rec"
    _write(path, [b"whole", b"torn-record"])
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(size - cut)
    assert [payload for _, payload in scan(path)] == [b"whole"]
    assert repair(path) == len(MAGIC) + 8 + len(b"whole")
    _write(path, [b"after"])
    assert [payload for _, payload in scan(path)] == [b"whole", b"after"]


def test_damage_before_the_end_raises(tmp_path: Path) -> None:
    path = tmp_path / "a.rec"
    _write(path, [b"first", b"second"])
    data = bytearray(path.read_bytes())
    data[len(MAGIC) + 8] ^= 0xFF  # first payload byte: its CRC no longer matches
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordFile, match="damaged record"):
        list(scan(path))


def test_a_file_without_the_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.rec"
    path.write_bytes(b"not a record file")
    with pytest.raises(CorruptRecordFile, match="bad header"):
        list(scan(path))
