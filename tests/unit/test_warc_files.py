"""WARC files on disk (irlscrapy.warc.files): round trip, rotation, serials, recovery."""

from __future__ import annotations

import hashlib
import json
from base64 import b32encode
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.checker import Checker

from irlscrapy.exceptions import ConfigurationError
from irlscrapy.warc.files import Capture, WarcFiles, recover

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type:text/html;charset=utf-8\r\nX-Odd:  two  spaces \r\n\r\n"
REQUEST = b"GET /p HTTP/1.1\r\nHost: example.com\r\n\r\n"


def _capture(n: int, body: bytes | None = None, duplicate_of: float | None = None) -> Capture:
    payload = body if body is not None else b"<html>%d</html>" % n
    digest = "sha1:" + b32encode(hashlib.sha1(payload).digest()).decode()
    return Capture(
        url=f"http://example.com/p{n}",
        date=1_700_000_000 + n,
        request_head=REQUEST,
        request_body=b"",
        response_head=HEAD,
        payload=payload,
        payload_digest=digest,
        ip_address="192.0.2.7",
        duplicate_of=duplicate_of,
        mime="text/html",
    )


def _files(directory: Path, max_size: int = 10**9, cdxj: bool = True) -> WarcFiles:
    files = WarcFiles(
        directory,
        prefix="t",
        max_size=max_size,
        info={"software": "test"},
        cdxj=cdxj,
        hostname="host",
        clock=lambda: 1_700_000_000,
    )
    files.open()
    return files


def _kill(files: WarcFiles) -> None:
    """What a kill -9 does to the writer: its files are closed by the OS, not renamed."""
    for handle in (files._out, files._index):
        if handle is not None:
            handle.close()


def _records(path: Path) -> list[tuple[str, dict[str, str], bytes, bytes]]:
    out = []
    with open(path, "rb") as f:
        for record in ArchiveIterator(f):
            head = record.http_headers
            out.append(
                (
                    record.rec_type,
                    dict(record.rec_headers.headers),
                    head.to_bytes() if head else b"",
                    record.raw_stream.read(),
                )
            )
    return out


def test_a_written_exchange_reads_back_byte_for_byte(tmp_path: Path) -> None:
    files = _files(tmp_path)
    files.write(_capture(1))
    files.close()
    (path,) = tmp_path.glob("*.warc.gz")
    assert path.name == "t-20231114221320-00001-host.warc.gz"
    kinds = [r[0] for r in _records(path)]
    assert kinds == ["warcinfo", "response", "request"]
    raw = path.read_bytes()
    import gzip

    text = gzip.decompress(raw)  # all members
    assert HEAD + b"<html>1</html>" in text  # the head exactly as received
    assert REQUEST in text
    _, response, _, payload = _records(path)[1]
    assert payload == b"<html>1</html>"
    assert response["WARC-IP-Address"] == "192.0.2.7"
    assert response["WARC-Date"] == "2023-11-14T22:13:21Z"
    _, request, _, _ = _records(path)[2]
    assert request["WARC-Concurrent-To"] == response["WARC-Record-ID"]
    checker = Checker(cmd=type("Args", (), {"inputs": [str(path)], "verbose": False})())
    assert checker.process_all() == 0


def test_a_duplicate_is_written_as_a_revisit_without_payload(tmp_path: Path) -> None:
    files = _files(tmp_path)
    files.write(_capture(1, b"same"))
    files.write(_capture(2, b"same", duplicate_of=1_700_000_001))
    files.close()
    (path,) = tmp_path.glob("*.warc.gz")
    records = _records(path)
    kind, headers, _, payload = records[3]
    assert kind == "revisit" and payload == b""
    assert headers["WARC-Refers-To-Date"] == records[1][1]["WARC-Date"]
    assert headers["WARC-Payload-Digest"] == records[1][1]["WARC-Payload-Digest"]


def test_a_file_is_closed_once_it_reaches_the_size_limit(tmp_path: Path) -> None:
    files = _files(tmp_path, max_size=1)  # every exchange fills a file
    for n in range(3):
        files.write(_capture(n))
    assert files.current is None
    files.close()
    names = sorted(p.name for p in tmp_path.glob("*.warc.gz"))
    assert [name.split("-")[2] for name in names] == ["00001", "00002", "00003"]
    for name in names:
        assert [r[0] for r in _records(tmp_path / name)] == ["warcinfo", "response", "request"]


def test_a_reopened_directory_continues_the_serials(tmp_path: Path) -> None:
    first = _files(tmp_path)
    first.write(_capture(1))
    first.close()
    second = _files(tmp_path)
    second.write(_capture(2))
    second.close()
    serials = sorted(p.name.split("-")[2] for p in tmp_path.glob("*.warc.gz"))
    assert serials == ["00001", "00002"]


def test_a_crash_leaves_every_whole_record_and_cuts_the_torn_one(tmp_path: Path) -> None:
    files = _files(tmp_path)
    for n in range(3):
        files.write(_capture(n))
    files.flush()
    (left,) = tmp_path.glob("*.warc.gz.open")
    whole = left.read_bytes()
    files.write(_capture(3, b"x" * 5000))
    files.flush()
    torn = left.read_bytes()
    cut = len(whole) + (len(torn) - len(whole)) // 3  # inside the fourth exchange
    _kill(files)
    left.write_bytes(torn[:cut])  # as a kill -9 mid-write leaves it
    files = _files(tmp_path)  # a new run recovers it
    assert not list(tmp_path.glob("*.open"))
    (path,) = tmp_path.glob("*.warc.gz")
    kinds = [r[0] for r in _records(path)]
    assert kinds[: 1 + 3 * 2] == ["warcinfo"] + ["response", "request"] * 3
    assert len(kinds) <= 1 + 4 * 2 - 1  # the torn record is gone
    index = path.with_name(path.name.removesuffix(".warc.gz") + ".cdxj")
    offsets = [
        json.loads(line.split(" ", 2)[2])["offset"] for line in index.read_text().splitlines()
    ]
    assert len(offsets) == 3
    files.close()


def test_recovering_a_whole_file_keeps_all_of_it(tmp_path: Path) -> None:
    files = _files(tmp_path, cdxj=False)
    files.write(_capture(1))
    files.flush()
    _kill(files)
    (left,) = tmp_path.glob("*.open")
    size = left.stat().st_size
    final = recover(left)
    assert final.stat().st_size == size
    assert [r[0] for r in _records(final)] == ["warcinfo", "response", "request"]


@pytest.mark.parametrize(
    "kwargs", [{"max_size": 0}, {"prefix": ""}, {"prefix": "a/b"}, {"gzip_level": 10}]
)
def test_bad_settings_are_refused(tmp_path: Path, kwargs: dict[str, object]) -> None:
    options: dict[str, object] = {"prefix": "t", "max_size": 10, "info": {}, **kwargs}
    with pytest.raises(ConfigurationError):
        WarcFiles(tmp_path, **options)  # type: ignore[arg-type]
