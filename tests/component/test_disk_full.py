"""Stores on a full disk (a small tmpfs): a write that fails for want of space raises
ENOSPC, leaves the store whole, and the store goes on once there is room.

The crawl's stop on a full disk, end to end: tests/e2e/test_irl_resume.py.
"""

from __future__ import annotations

import errno
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.fulldisk import fill, small_tmpfs
from irlscrapy.storage.recordfile import RecordWriter, scan

ROOT = Path(__file__).resolve().parents[2]
KEYS = 50_000

CHILD = """
import errno, os, sys
from pathlib import Path
import numpy as np
from harness.fulldisk import PAGE, fill
from irlscrapy.storage.drum import DRUM

directory = Path(sys.argv[1])
filler = directory.parent / "filler"
keys = np.arange(1, int(sys.argv[2]) + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
partition = DRUM._partition


def partition_then_fill(self, gen):
    # the bucket files are written: fill the disk, then free two pages of it
    partition(self, gen)
    fill(filler)
    os.truncate(filler, filler.stat().st_size - 2 * PAGE)


DRUM._partition = partition_then_fill
drum = DRUM(directory, buckets=4)
drum.open()
drum.submit(keys)
try:
    drum.merge()
except OSError as exc:
    print("merge:", errno.errorcode[exc.errno])
drum.close()
filler.unlink()
DRUM._partition = partition
with DRUM(directory, buckets=4) as drum:
    drum.merge()
    print("results:", [(r.seq, int(r.unique.sum())) for r in drum.results()])
    print("stored:", drum.stored_keys)
"""


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "disk") as disk:
        yield disk


def test_a_record_whose_append_failed_never_reaches_the_file(disk: Path) -> None:
    """The failed append's bytes, partly written, are cut off, and none are held back
    to be written with a later record once there is room."""
    writer = RecordWriter(disk / "records")
    writer.open()
    writer.append(b"a" * 100)
    fill(disk / "filler")
    with pytest.raises(OSError) as full:
        writer.append(b"b" * 20_000)  # the rest of the file's page takes a part of it
    assert full.value.errno == errno.ENOSPC
    assert (disk / "records").stat().st_size == 8 + 8 + 100
    (disk / "filler").unlink()
    writer.append(b"c" * 10, flush=False)
    writer.close()
    assert [payload for _, payload in scan(disk / "records", whole=True)] == [
        b"a" * 100,
        b"c" * 10,
    ]


def test_a_merge_on_a_full_disk_raises_enospc_and_resumes_whole(disk: Path) -> None:
    """A store through the result file's mapping into a hole the full file system cannot
    fill would be a SIGBUS, killing the crawl with no message and no clean stop: the
    merge runs in a child process, whose death would show as its return code."""
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(disk / "drum"), str(KEYS)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0, (child.returncode, child.stderr[-3000:])
    assert child.stdout.splitlines() == [
        "merge: ENOSPC",
        f"results: [(1, {KEYS})]",
        f"stored: {KEYS}",
    ], child.stderr[-3000:]
