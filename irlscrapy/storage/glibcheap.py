"""Give the heap that DRUM merges free back to the operating system (glibc only).

Theory of operation
-------------------
A DRUM merge allocates arrays of tens of megabytes (a bucket's tuples, their sort
order, the results) and frees them seconds later; the delivery that follows allocates
and frees a burst of Python objects. glibc's malloc keeps freed memory for reuse, and
two of its habits turn that into RSS that never comes back (measured in issue 4: the
frontier's anonymous RSS stepped up by 60 MB after each large URLseen merge and stayed):

- *the dynamic mmap threshold*: an allocation above ``M_MMAP_THRESHOLD`` (128 KiB at
  start) gets its own mapping, returned to the OS when freed; but each such free raises
  the threshold to the freed size, up to 32 MiB, so the next merge's arrays come from
  the heap, and the heap only shrinks from its top. :func:`pin_mmap_threshold` sets the
  threshold once, which also switches the dynamic adjustment off: every array of
  :data:`MMAP_THRESHOLD` or more is mapped and unmapped.
- *free memory kept in the middle of the heap and in the worker thread's arena*:
  :func:`release_free_memory` (``malloc_trim(0)``) returns every free page of every
  arena to the OS (``madvise(MADV_DONTNEED)``); the merge thread calls it before each
  merge (for what the previous delivery freed) and after it.

Both are no-ops where the C library is not glibc (musl, macOS, Windows): nothing there
has these functions, and nothing else changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from typing import Any

#: Allocations of this size or more are always their own mapping (glibc's initial
#: threshold; Python's small objects come from pymalloc's arenas, below it).
MMAP_THRESHOLD = 128 * 1024
_M_MMAP_THRESHOLD = -3  # mallopt parameter number, glibc's malloc.h

_lock = threading.Lock()
_pinned = False


def _glibc() -> Any:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    if not hasattr(libc, "malloc_trim") or not hasattr(libc, "mallopt"):
        return None
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return libc


_LIBC = _glibc()


def pin_mmap_threshold() -> bool:
    """Fix glibc's mmap threshold at :data:`MMAP_THRESHOLD` (once per process); True if
    this C library has it."""
    global _pinned
    if _LIBC is None:
        return False
    with _lock:
        if not _pinned:
            _pinned = bool(_LIBC.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    return _pinned


def release_free_memory() -> bool:
    """Return free heap pages to the OS; True if any were returned."""
    if _LIBC is None:
        return False
    return bool(_LIBC.malloc_trim(0))
