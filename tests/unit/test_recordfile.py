"""Record files: whole records survive, torn tails are cut, damage before the end is loud."""

from __future__ import annotations

from pathlib import Path

import pytest

from irlscrapy.exceptions import CorruptRecordFile
from irlscrapy.storage.recordfile import MAGIC, RecordWriter, repair, scan


def _write(path: Path, payloads: list[bytes]) -> None:
    writer = RecordWriter(path)
    writer.open()
    for payload in payloads:
        writer.append(payload)
    writer.close()


def test_records_read_back_in_order(tmp_path: Path) -> None:
    path = tmp_path / "a.rec"
    _write(path, [b"one", b"two", b"three"])
    _write(path, [b"four"])  # reopening appends
    assert [payload for _, payload in scan(path)] == [b"one", b"two", b"three", b"four"]


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
    with pytest.raises(CorruptRecordFile, match=r"record at byte 8 .* fails its checksum"):
        list(scan(path))


def test_a_bad_checksum_in_the_last_record_is_damage_not_a_torn_tail(tmp_path: Path) -> None:
    # A kill -9 cannot leave a record of full length: the file grows with what is written.
    path = tmp_path / "a.rec"
    _write(path, [b"first", b"second"])
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordFile, match="fails its checksum"):
        list(scan(path))


def test_a_damaged_length_is_told_from_a_torn_tail(tmp_path: Path) -> None:
    """A length bit flipped in the first record makes it run past the end: the whole
    records after it say that this is damage, not a crash's torn tail."""
    path = tmp_path / "a.rec"
    _write(path, [b"first" * 10, b"\x00" * 64, b"third"])
    data = bytearray(path.read_bytes())
    data[len(MAGIC)] ^= 0x10  # the high byte of the first record's length
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordFile, match=r"claims .* whole record starts at byte 66"):
        list(scan(path))


def test_zero_bytes_in_a_torn_payload_are_no_record(tmp_path: Path) -> None:
    """Eight zero bytes read as an empty record with a right CRC; a torn tail full of
    zeros is still a torn tail."""
    path = tmp_path / "a.rec"
    _write(path, [b"whole", b"\x00" * 100])
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size - 10)
    assert [payload for _, payload in scan(path)] == [b"whole"]


def test_a_torn_tail_in_a_file_closed_whole_is_damage(tmp_path: Path) -> None:
    path = tmp_path / "a.rec"
    _write(path, [b"whole", b"cut"])
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size - 1)
    assert [payload for _, payload in scan(path)] == [b"whole"]
    with pytest.raises(CorruptRecordFile, match="cut short"):
        list(scan(path, whole=True))


def test_a_file_without_the_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.rec"
    path.write_bytes(b"not a record file")
    with pytest.raises(CorruptRecordFile, match="bad header"):
        list(scan(path))
