"""irlscrapy.storage.glibcheap: freed merge-sized arrays leave the RSS (on glibc).

Each case runs in a fresh interpreter: the mmap threshold is process-wide and, once
pinned, stays pinned.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from irlscrapy.storage import glibcheap

pytestmark = pytest.mark.skipif(glibcheap._LIBC is None, reason="the C library is not glibc")

#: A merge's life in miniature: one big array freed (which raises glibc's dynamic mmap
#: threshold to its size), then 96 arrays of 1 MiB each followed by a small object that
#: outlives them (so the heap cannot shrink from its top), then the arrays freed.
#: Prints the RSS (MB) the freed arrays left behind.
_SCRIPT = """
import numpy as np
from irlscrapy.storage import glibcheap

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

if {pin}:
    assert glibcheap.pin_mmap_threshold()
big = np.ones(16 << 20, dtype=np.uint8)
del big
before = rss_mb()
arrays, keep = [], []
for _ in range(96):
    arrays.append(np.ones(1 << 20, dtype=np.uint8))
    keep.append(bytearray(1000))  # over pymalloc's 512 bytes: from the malloc heap
del arrays
left = rss_mb() - before
if {trim}:
    glibcheap.release_free_memory()
print(left, rss_mb() - before)
"""


def _left_behind(pin: bool, trim: bool) -> tuple[float, float]:
    script = textwrap.dedent(_SCRIPT.format(pin=pin, trim=trim))
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    freed, trimmed = map(float, out.split())
    return freed, trimmed


def test_without_either_the_freed_arrays_stay_resident() -> None:
    freed, _ = _left_behind(pin=False, trim=False)
    assert freed > 64  # the control: glibc kept most of the 96 MiB


def test_a_pinned_threshold_maps_each_array_and_unmaps_it_when_freed() -> None:
    freed, _ = _left_behind(pin=True, trim=False)
    assert freed < 8


def test_release_free_memory_returns_what_the_heap_kept() -> None:
    freed, trimmed = _left_behind(pin=False, trim=True)
    assert freed > 64
    assert trimmed < 8
