"""Give back the pages of LevelDB's table files that lookups left mapped (Linux).

Theory of operation
-------------------
LevelDB reads its table files (``*.ldb``) through read-only shared memory maps (up to
1,000 of them on a 64-bit system). Every page a lookup touches stays mapped into the
process until LevelDB closes the table, and counts in its RSS. When DRUM kept its cache
in LevelDB (format 1), a merge looked up every key of a batch, and at 5.5 million unique
URLs the frontier benchmark (``bench/frontier.py``) held 237 MB of such pages (STAR's
edge store 97 MB, URLseen's 59 MB), more than the whole heap. They are the page
cache's and the kernel may reclaim them, but RSS, a cgroup's memory and the OOM
killer's score count them while they are mapped, and a crawl operator watches RSS.

:func:`release_table_pages` asks the kernel to page out (``madvise(MADV_PAGEOUT)``,
Linux 5.4) every mapping of a ``.ldb`` file in the process: a clean file page leaves the
mapping and is read again from the page cache, or the disk, at its next touch. The merge
thread calls it after each merge (:mod:`irlscrapy.runtime.mergethread`), for the
LevelDB stores read meanwhile (STAR's PLD names; DRUM's runs are read without a map).
Reading ``/proc/self/maps`` costs far more than the advice (a millisecond or more with
LevelDB's maps among the process's): a caller that releases often may read it once
(:func:`table_mappings`) and pass what it read.

Why MADV_PAGEOUT and not MADV_DONTNEED: LevelDB's own threads may unmap a table, and
the range be mapped again for something else, between reading ``/proc/self/maps`` and
the call. MADV_DONTNEED would then zero that memory; MADV_PAGEOUT never loses data (an
anonymous page is swapped out, or without swap left where it is).

Elsewhere (no ``/proc/self/maps``, no ``madvise``, an older kernel) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from typing import Any

#: madvise advice number (Linux's mman-common.h).
MADV_PAGEOUT = 21
#: What a LevelDB table file's name ends with.
TABLE_SUFFIX = ".ldb"
MAPS = "/proc/self/maps"


def _libc() -> Any:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name, use_errno=True)
    except OSError:
        return None
    if not hasattr(libc, "madvise"):
        return None
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return libc


_LIBC = _libc()


def table_mappings(maps: str = MAPS) -> list[tuple[int, int]]:
    """(start, length) of every mapping of a LevelDB table file in ``maps``."""
    try:
        with open(maps, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return []
    found = []
    for line in lines:
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].rstrip("\n").endswith(TABLE_SUFFIX):
            start, end = (int(x, 16) for x in fields[0].split("-"))
            found.append((start, end - start))
    return found


def release_table_pages(mappings: list[tuple[int, int]] | None = None) -> int:
    """Page out the process's mappings of LevelDB table files (``mappings``, as
    :func:`table_mappings` read them a moment ago, else read now); return how many the
    kernel accepted (0 where it cannot). A mapping gone since it was read is refused
    (unmapped), or paged out though something else took its place: that loses nothing
    (see above)."""
    if _LIBC is None:
        return 0
    released = 0
    for start, length in table_mappings() if mappings is None else mappings:
        if _LIBC.madvise(start, length, MADV_PAGEOUT) == 0:
            released += 1
    return released
