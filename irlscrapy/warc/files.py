"""WARC 1.1 files on disk: naming, rotation, warcinfo, CDXJ, and recovery after a crash.

Plain and synchronous (no Scrapy, no threads): :class:`WarcFiles` is driven by one
worker thread of :class:`irlscrapy.warc.recorder.ExchangeRecorder`. Records are built
with warcio and written by its ``WARCWriter``, one gzip member per record.

Files under the WARC directory
------------------------------
::

    <prefix>-<YYYYmmddHHMMSS>-<serial:05d>-<host>.warc.gz        a finished file
    <prefix>-<YYYYmmddHHMMSS>-<serial:05d>-<host>.warc.gz.open   the file being written
    <same name>.cdxj (.cdxj.open)   the index beside it (IRL_WARC_CDXJ)

The IIPC's recommended naming: the timestamp is the file's opening time (UTC), the
serial counts up across the directory's whole history (a resumed crawl continues it),
``host`` is this machine's name. A file is renamed from ``.open`` when it is closed:
when it has reached ``max_size`` bytes (checked after each exchange, so a file ends
at most one exchange past it) and when the crawl closes.

Each file opens with a ``warcinfo`` record; every other record names it in
``WARC-Warcinfo-ID``. An exchange is a ``request`` record and a ``response`` (or
``revisit``) record in the same file, the request's ``WARC-Concurrent-To`` naming the
response.

CDXJ lines (one per response or revisit record, in file order)::

    <SURT> <14-digit timestamp> {"url", "mime", "status", "digest", "length", "offset", "filename"}

``offset`` and ``length`` are the record's gzip member in the WARC file; ``mime`` is
``warc/revisit`` for a revisit (pywb's convention).

Crash semantics
---------------
Records are handed to the OS after each batch (:meth:`WarcFiles.flush`); nothing is
fsynced. After a kill -9, :meth:`WarcFiles.open` finds the ``.open`` files, cuts each
after its last whole record (a torn gzip member is dropped, and its CDXJ lines with
it) and renames them: every record the OS received before the kill is kept. Each file
so closed is a recovery (``irl/recovered/warc_file``: :mod:`irlscrapy.storage.recovery`).
"""

from __future__ import annotations

import datetime
import glob
import json
import logging
import os
import re
import socket
import time
import uuid
import zlib
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import IO, Any

import surt
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordbuilder import RecordBuilder
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParser
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

from irlscrapy.exceptions import ConfigurationError
from irlscrapy.storage.recovery import recovered
from irlscrapy.warc.exchange import status_code

logger = logging.getLogger(__name__)

OPEN_SUFFIX = ".open"
WARC_SUFFIX = ".warc.gz"
CDXJ_SUFFIX = ".cdxj"
WARC_VERSION = "1.1"
REVISIT_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
_NAME = re.compile(r"^(?P<prefix>.+)-(?P<ts>\d{14})-(?P<serial>\d{5,})-(?P<host>[^/]*)\.warc\.gz")


class _GzipMembers:
    """A file warcio's writer (``gzip=False``) writes records into: each record's bytes
    become one gzip member at ``level``, ended when warcio flushes after the record.
    (warcio's own wrapper compresses at level 9: 9.6 times the CPU of level 1 on the
    in-vitro web's pages, for files 15% smaller.)"""

    def __init__(self, out: IO[bytes], level: int) -> None:
        self.out = out
        self.level = level
        self._member: Any = None

    def write(self, data: bytes) -> None:
        if self._member is None:
            self._member = zlib.compressobj(self.level, zlib.DEFLATED, zlib.MAX_WBITS + 16)
        self.out.write(self._member.compress(data))

    def flush(self) -> None:
        if self._member is not None:
            self.out.write(self._member.flush())
            self._member = None


class ExactHead(StatusAndHeaders):
    """warcio's parsed head that is written back as the exact bytes it was parsed from
    (warcio would otherwise rewrite every header line as ``name: value``)."""

    def __init__(self, raw: bytes) -> None:
        parsed = StatusAndHeadersParser([], verify=False).parse(BytesIO(raw))
        super().__init__(parsed.statusline, parsed.headers, parsed.protocol)
        self._raw = raw
        self.headers_buff = raw

    def compute_headers_buffer(self, header_filter: Any = None) -> None:
        self.headers_buff = self._raw


@dataclass
class Capture:
    """One exchange to record. ``date`` is seconds since the epoch (UTC)."""

    url: str
    date: float
    request_head: bytes  # the request block without its body (exchange.request_block)
    request_body: bytes
    response_head: bytes  # as recorded (exchange.record_head)
    payload: bytes
    payload_digest: str  # "sha1:<base32>" of the payload
    ip_address: str | None = None
    truncated: str | None = None  # WARC-Truncated reason ("length", "disconnect")
    #: the date (epoch seconds) of the capture this one's payload duplicates, if any:
    #: recorded as a revisit of it instead of a second copy
    duplicate_of: float | None = None
    mime: str = field(default="")


def warc_date(epoch: float) -> str:
    """WARC-Date with seconds precision (what content dedup stores of a first capture,
    so a revisit's WARC-Refers-To-Date equals the original's WARC-Date)."""
    moment = datetime.datetime.fromtimestamp(int(epoch), datetime.UTC).replace(tzinfo=None)
    return datetime_to_iso_date(moment)


class WarcFiles:
    """The WARC files of one crawl in one directory. See the module docstring.

    Invariant: *a record is in exactly one file, its CDXJ line (if any) in that file's
    index, and an exchange's records in the same file.*
    """

    def __init__(
        self,
        directory: Path | str,
        *,
        prefix: str,
        max_size: int,
        info: dict[str, str],
        cdxj: bool = False,
        gzip_level: int = 1,
        hostname: str | None = None,
        clock: Any = time.time,
    ) -> None:
        if max_size < 1:
            raise ConfigurationError(f"IRL_WARC_MAX_SIZE={max_size}: must be positive")
        if not 0 <= gzip_level <= 9:
            raise ConfigurationError(f"IRL_WARC_GZIP_LEVEL={gzip_level}: choose 0 to 9")
        if not prefix or "/" in prefix:
            raise ConfigurationError(f"IRL_WARC_PREFIX={prefix!r}: must be a non-empty name")
        self.directory = Path(directory)
        self.prefix = prefix
        self.max_size = max_size
        self.info = info
        self.cdxj = cdxj
        self.gzip_level = gzip_level
        self.hostname = re.sub(r"[^A-Za-z0-9.]", "_", hostname or socket.gethostname())
        self.clock = clock
        self.builder = RecordBuilder(warc_version=WARC_VERSION)
        self.serial = 0  # the last serial used
        self.files_written = 0
        self._path: Path | None = None  # the open file's final name
        self._out: IO[bytes] | None = None
        self._writer: WARCWriter | None = None
        self._index: IO[str] | None = None
        self._warcinfo_id = ""

    # -- lifecycle -----------------------------------------------------------------------
    def open(self) -> None:
        """Create the directory, recover ``.open`` files a crash left, find the serial."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for left in sorted(
            self.directory.glob(f"{glob.escape(self.prefix)}-*{WARC_SUFFIX}{OPEN_SUFFIX}")
        ):
            recover(left)
        for path in self.directory.iterdir():
            m = _NAME.match(path.name)
            if m and m["prefix"] == self.prefix:
                self.serial = max(self.serial, int(m["serial"]))

    def close(self) -> None:
        self._close_file()

    @property
    def current(self) -> Path | None:
        """The file being written (its final name), if one is open."""
        return self._path

    # -- writing -------------------------------------------------------------------------
    def write(self, capture: Capture) -> int:
        """Write one exchange; return the bytes it took. Rotates after it if the file
        has reached ``max_size``."""
        if self._writer is None:
            self._open_file()
        assert self._out is not None and self._writer is not None
        start = self._out.tell()
        response = self._response_record(capture)
        request = self._request_record(capture, response.rec_headers.get_header("WARC-Record-ID"))
        self._writer.write_record(response)
        end = self._out.tell()
        self._writer.write_record(request)
        if self._index is not None:
            self._index.write(self._cdxj_line(capture, start, end - start) + "\n")
        written = self._out.tell() - start
        if self._out.tell() >= self.max_size:
            self._close_file()
        return written

    def flush(self) -> None:
        """Hand what was written to the OS (see Crash semantics)."""
        if self._out is not None:
            self._out.flush()
        if self._index is not None:
            self._index.flush()

    def _common_headers(self, capture: Capture, record_type: str) -> dict[str, str]:
        headers = {  # in this order in the record (warcio appends what it adds)
            "WARC-Type": record_type,
            "WARC-Record-ID": f"<urn:uuid:{uuid.uuid4()}>",
            "WARC-Date": warc_date(capture.date),
            "WARC-Target-URI": capture.url,
            "WARC-Warcinfo-ID": self._warcinfo_id,
        }
        if capture.ip_address:
            headers["WARC-IP-Address"] = capture.ip_address
        return headers

    def _response_record(self, capture: Capture) -> Any:
        record_type = "response" if capture.duplicate_of is None else "revisit"
        headers = self._common_headers(capture, record_type)
        headers["WARC-Payload-Digest"] = capture.payload_digest
        head = ExactHead(capture.response_head)
        if capture.duplicate_of is not None:
            headers["WARC-Profile"] = REVISIT_PROFILE
            headers["WARC-Refers-To-Date"] = warc_date(capture.duplicate_of)
            return self.builder.create_warc_record(
                capture.url,
                "revisit",
                warc_content_type="application/http; msgtype=response",
                warc_headers_dict=headers,
                http_headers=head,
            )
        if capture.truncated:
            headers["WARC-Truncated"] = capture.truncated
        return self.builder.create_warc_record(
            capture.url,
            "response",
            payload=BytesIO(capture.payload),
            length=len(capture.payload),
            warc_headers_dict=headers,
            http_headers=head,
        )

    def _request_record(self, capture: Capture, response_id: str) -> Any:
        headers = self._common_headers(capture, "request")
        headers["WARC-Concurrent-To"] = response_id
        return self.builder.create_warc_record(
            capture.url,
            "request",
            payload=BytesIO(capture.request_body),
            length=len(capture.request_body),
            warc_headers_dict=headers,
            http_headers=ExactHead(capture.request_head),
        )

    def _cdxj_line(self, capture: Capture, offset: int, length: int) -> str:
        assert self._path is not None
        fields = {
            "url": capture.url,
            "mime": "warc/revisit" if capture.duplicate_of is not None else capture.mime or "-",
            "status": str(status_code(capture.response_head)),
            "digest": capture.payload_digest.removeprefix("sha1:"),
            "length": str(length),
            "offset": str(offset),
            "filename": self._path.name,
        }
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(int(capture.date)))
        return f"{surt.surt(capture.url)} {stamp} {json.dumps(fields)}"

    # -- files ---------------------------------------------------------------------------
    def _open_file(self) -> None:
        self.serial += 1
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(self.clock()))
        name = f"{self.prefix}-{stamp}-{self.serial:05d}-{self.hostname}{WARC_SUFFIX}"
        self._path = self.directory / name
        self._out = open(str(self._path) + OPEN_SUFFIX, "xb")  # noqa: SIM115 (closed in _close_file)
        members = _GzipMembers(self._out, self.gzip_level)
        self._writer = WARCWriter(members, gzip=False, warc_version=WARC_VERSION)
        info = self.builder.create_warcinfo_record(name, self.info)
        self._warcinfo_id = info.rec_headers.get_header("WARC-Record-ID")
        self._writer.write_record(info)
        if self.cdxj:
            self._index = open(_index_path(self._path, open_=True), "x", encoding="utf-8")  # noqa: SIM115

    def _close_file(self) -> None:
        if self._out is None or self._path is None:
            return
        self._out.close()
        os.replace(str(self._path) + OPEN_SUFFIX, self._path)
        if self._index is not None:
            self._index.close()
            os.replace(_index_path(self._path, open_=True), _index_path(self._path))
            self._index = None
        logger.info("WARC file %s written", self._path)
        self.files_written += 1
        self._out = self._writer = self._path = None


def _index_path(warc: Path, open_: bool = False) -> Path:
    name = warc.name.removesuffix(WARC_SUFFIX) + CDXJ_SUFFIX + (OPEN_SUFFIX if open_ else "")
    return warc.with_name(name)


def recover(left: Path) -> Path:
    """Cut a ``.open`` WARC file a crash left after its last whole record, drop the CDXJ
    lines past it, and give both their final names. Returns the final WARC path."""
    good = 0
    torn = ""
    with open(left, "rb") as f:
        records = ArchiveIterator(f)
        try:
            for record in records:
                record.content_stream().read()
                records.read_to_end(record)
                good = records.get_record_offset() + records.get_record_length()
        except (ArchiveLoadFailed, EOFError, OSError, ValueError) as exc:
            torn = f"; a torn record cut ({exc})"
    with open(left, "r+b") as f:
        f.truncate(good)
    final = left.with_name(left.name.removesuffix(OPEN_SUFFIX))
    os.replace(left, final)
    index = _index_path(final, open_=True)
    if index.exists():
        lines = index.read_text(encoding="utf-8").splitlines()
        kept = [line for line in lines if _ends_within(line, good)]
        index.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
        os.replace(index, _index_path(final))
    # no path: the stat is irl/recovered/warc_file wherever the WARC directory is
    recovered("warc_file", detail=f"{final}: {good} bytes{torn}")
    return final


def _ends_within(line: str, end: int) -> bool:
    try:
        fields = json.loads(line.split(" ", 2)[2])
        return int(fields["offset"]) + int(fields["length"]) <= end
    except (IndexError, ValueError, KeyError):
        return False
