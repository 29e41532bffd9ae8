"""LevelDB table pages that reads mapped leave the process's RSS when paged out."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import plyvel
import pytest

from irlscrapy.storage.tablepages import TABLE_SUFFIX, release_table_pages, table_mappings

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="/proc/self/smaps: Linux")


def table_rss_kib() -> int:
    """Resident KiB of this process's mappings of LevelDB table files."""
    total, in_table = 0, False
    with open("/proc/self/smaps", encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if "-" in fields[0] and len(fields[0]) > 8 and ":" not in fields[0]:
                in_table = len(fields) == 6 and fields[5].endswith(TABLE_SUFFIX)
            elif in_table and fields[0] == "Rss:":
                total += int(fields[1])
    return total


def test_reads_map_table_pages_and_release_gives_them_back(tmp_path: Path) -> None:
    db = plyvel.DB(str(tmp_path / "db"), create_if_missing=True, compression=None)
    try:
        value = os.urandom(1000)
        with db.write_batch() as batch:
            for i in range(20_000):  # about 20 MB of tables
                batch.put(i.to_bytes(8, "big"), value)
        db.compact_range()
        for i in range(20_000):
            assert db.get(i.to_bytes(8, "big")) == value
        mapped = table_mappings()
        assert mapped, "LevelDB maps its tables"
        before = table_rss_kib()
        assert before > 5_000
        assert release_table_pages() == len(mapped)
        assert table_rss_kib() < before / 10
        for i in range(0, 20_000, 997):  # the tables read as before
            assert db.get(i.to_bytes(8, "big")) == value
    finally:
        db.close()


def test_no_maps_file_means_nothing_to_release(tmp_path: Path) -> None:
    assert table_mappings(str(tmp_path / "missing")) == []
