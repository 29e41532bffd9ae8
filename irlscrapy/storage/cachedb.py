"""The LevelDB database of an on-disk cache (DNS, robots.txt), with its format version.

A cache's directory holds its lock (``LOCK``, :mod:`irlscrapy.storage.dirlock`) and its
database (``cache/``); :class:`CacheStore` opens and closes the two together, with the
view of the database's host entries. The database holds ``b"!format" -> version``
beside its entries. Opening a
database written by another format version fails with a clear message: a cache holds
nothing that cannot be fetched again, so the remedy is to delete it.

LevelDB's own RAM is bounded for crawl scale: the block cache (:data:`BLOCK_CACHE`),
the write buffer (:data:`WRITE_BUFFER`, two of them while one is written out), and the
table cache (:data:`OPEN_TABLES` tables, each holding its index and Bloom filter in RAM:
with LevelDB's default of 1,000 open tables of 2 MB, a cache of 10^8 hosts would keep
~100 MB of filters in RAM).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import plyvel

from irlscrapy.exceptions import ConfigurationError, DamagedState, IrlscrapyError
from irlscrapy.storage.dirlock import DirectoryLock
from irlscrapy.storage.recovery import recovered

FORMAT_KEY = b"!format"
BLOCK_CACHE = 4 << 20
WRITE_BUFFER = 2 << 20
OPEN_TABLES = 128
#: The files that hold a LevelDB's data (a ``.log`` is its write-ahead log).
_DATA = (".ldb", ".sst", ".log")


def open_leveldb(path: Path, *, create: bool = True, **options: Any) -> plyvel.DB:
    """``plyvel.DB(path, **options)``, created if it does not exist and ``create``; a
    LevelDB damaged (a file of it cut, overwritten or deleted) as DamagedState.

    A directory without ``CURRENT`` is a LevelDB being created (a kill -9 after its
    first ``MANIFEST`` and before ``CURRENT`` leaves that, and LevelDB creates it again:
    a recovery, :mod:`irlscrapy.storage.recovery`) unless it holds data: then it is damage,
    which LevelDB would make worse by creating a new database and deleting the old
    tables (``irlscrapy repair`` recovers them)."""
    cut_short = False  # files of a creation a kill -9 cut short
    if not (path / "CURRENT").exists():
        data = [p for p in path.glob("*") if p.suffix in _DATA and p.stat().st_size]
        manifests = [p for p in path.glob("MANIFEST-*") if p.name != "MANIFEST-000001"]
        if data or manifests:
            raise DamagedState(path, "a LevelDB without its CURRENT file")
        if not create:
            raise DamagedState(path, "missing")
        cut_short = any(path.glob("*"))
    try:
        db = plyvel.DB(str(path), create_if_missing=create, **options)
    except plyvel.CorruptionError as exc:
        raise DamagedState(path, f"a damaged LevelDB ({exc})") from None
    except plyvel.IOError as exc:
        if "No such file" in str(exc):  # a table or log LevelDB knows of is gone
            raise DamagedState(path, f"a damaged LevelDB ({exc})") from None
        raise IrlscrapyError(f"cannot open the LevelDB {path}: {exc}") from exc
    if cut_short:
        recovered("first_open", path)
    return db


def read_through(db: plyvel.DB, path: Path) -> DamagedState | None:
    """Read every entry of the LevelDB ``db`` (at ``path``), its blocks' checksums
    verified: the damage found, if any."""
    try:
        for _ in db.iterator(verify_checksums=True, fill_cache=False):
            pass
    except plyvel.Error as exc:
        return DamagedState(path, f"a damaged LevelDB ({exc})")
    return None


def open_cache_db(path: Path, version: bytes, what: str) -> plyvel.DB:
    """Open (or create) the LevelDB at ``path`` holding ``what`` in format ``version``."""
    db = open_leveldb(
        path,
        bloom_filter_bits=10,
        lru_cache_size=BLOCK_CACHE,
        write_buffer_size=WRITE_BUFFER,
        max_open_files=OPEN_TABLES,
    )
    try:
        found = db.get(FORMAT_KEY)
        with db.iterator(include_value=False) as keys:
            empty = next(keys, None) is None
        if found is None and empty:
            db.put(FORMAT_KEY, version)
        elif found != version:
            raise ConfigurationError(
                f"{path.parent} holds {what} format {found!r}; this version reads "
                f"{version!r}. It is only a cache: delete it, or use another directory"
            )
    except BaseException:
        db.close()
        raise
    return db


class CacheStore:
    """A cache's directory, open: ``directory``'s lock taken, its database ``cache/`` of
    format ``version`` open (``db``), and ``hosts``, the view of the entries under
    ``prefix``. ``what`` names the cache in messages."""

    def __init__(self, directory: Path, version: bytes, what: str, prefix: bytes) -> None:
        self.directory, self.version, self.what, self.prefix = directory, version, what, prefix
        self._lock: DirectoryLock | None = None
        self.db: Any = None
        self.hosts: Any = None

    def open(self) -> None:
        """Lock the directory, then open the database (a failure releases the lock)."""
        self._lock = DirectoryLock(self.directory, self.what)
        self._lock.acquire()
        try:
            self.db = open_cache_db(self.directory / "cache", self.version, self.what)
            self.hosts = self.db.prefixed_db(self.prefix)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
        self.db = self.hosts = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None
