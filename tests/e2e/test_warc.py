"""WARC files of a real crawl of the tiny web, read back and checked against what the
in-vitro server generated for each URL, byte for byte."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import subprocess
import sys
from base64 import b32encode
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator

from irlscrapy.invitro.httpserver import wire_head
from irlscrapy.invitro.profiles import get_profile
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.audit import request_url
from irlscrapy.warc.exchange import record_head
from tests.e2e.conftest import SEED, read_log

pytestmark = pytest.mark.e2e

NAME = re.compile(r"^irlscrapy-\d{14}-(\d{5})-[A-Za-z0-9._]+\.warc\.gz$")


class Archive:
    """Every record of the crawl's WARC files, in order, with the file it is in."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.files = sorted(directory.glob("*.warc.gz"))
        self.records: list[dict[str, Any]] = []
        for path in self.files:
            with open(path, "rb") as f:
                it = ArchiveIterator(f)
                for record in it:
                    head = record.http_headers
                    raw = record.raw_stream.read()
                    it.read_to_end(record)
                    self.records.append(
                        {
                            "file": path,
                            "type": record.rec_type,
                            "warc": dict(record.rec_headers.headers),
                            "http": head,
                            "payload": raw,
                            "offset": it.get_record_offset(),
                            "length": it.get_record_length(),
                        }
                    )

    def of_type(self, *types: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r["type"] in types]


@pytest.fixture(scope="module")
def crawl(
    irl_crawl: tuple[subprocess.CompletedProcess[str], Path, Path],
) -> tuple[Archive, dict[str, Any], Path]:
    """The shared IRL crawl of the tiny web (conftest.irl_crawl), read back."""
    result, log, warc_dir = irl_crawl
    assert result.returncode == 0, result.stderr[-3000:]
    return Archive(warc_dir), _stats(result.stderr), log


def _stats(log: str) -> dict[str, Any]:
    """The stats Scrapy dumps at the end of the crawl's log."""
    text = log[log.rindex("Dumping Scrapy stats:") :]
    body = text[text.index("{") : text.index("}") + 1]
    pairs = re.findall(r"'([^']+)': ([^,\n}]+)", body)
    return {k: v.strip() for k, v in pairs}


def _web() -> InVitroWeb:
    return InVitroWeb(get_profile("tiny"), SEED)


def _sent(record: dict[str, Any], archive: Archive) -> dict[str, Any]:
    """The request record concurrent to a response or revisit record."""
    target = record["warc"]["WARC-Record-ID"]
    (request,) = [
        r for r in archive.of_type("request") if r["warc"]["WARC-Concurrent-To"] == target
    ]
    return request


def _expected(web: InVitroWeb, url: str, request: dict[str, Any]) -> tuple[bytes, bytes]:
    """The head and body the server generated for the recorded request."""
    parts = urlsplit(url)
    path = parts.path + ("?" + parts.query if parts.query else "")
    head = request["http"]
    accept_gzip = "gzip" in (head.get_header("Accept-Encoding") or "")
    keep_alive = (head.get_header("Connection") or "").lower() != "close"
    reply = web.respond(parts.hostname or "", path, accept_gzip, parts.scheme)
    return wire_head(reply, False, keep_alive), reply.body


def test_the_files_pass_warcio_check_and_index(crawl: Any) -> None:
    archive, stats, _ = crawl
    assert len(archive.files) >= 2, "the tiny web should fill more than one file"
    assert int(stats["irl/warc/files"]) == len(archive.files)
    for path in archive.files:
        check = subprocess.run(
            [sys.executable, "-m", "warcio.cli", "check", "-v", str(path)],
            capture_output=True,
            text=True,
        )
        assert check.returncode == 0, check.stdout[-2000:] + check.stderr[-2000:]
        assert "digest pass" in check.stdout
        index = subprocess.run(
            [sys.executable, "-m", "warcio.cli", "index", str(path)],
            capture_output=True,
            text=True,
        )
        assert index.returncode == 0, index.stderr[-2000:]
        in_file = [r for r in archive.records if r["file"] == path]
        assert len(index.stdout.splitlines()) == len(in_file)


def test_every_payload_and_head_is_what_the_server_generated(crawl: Any) -> None:
    archive, stats, _ = crawl
    assert "irl/warc/head_rebuilt" not in stats  # every head came from the wire
    web = _web()
    seen = {"gzip": 0, "chunked": 0, "redirect": 0, "robots": 0}
    for record in archive.of_type("response"):
        url = record["warc"]["WARC-Target-URI"]
        server_head, body = _expected(web, url, _sent(record, archive))
        assert record["payload"] == body, url
        assert record["http"].headers_buff is None  # parsed by the reader, not rebuilt
        recorded_head = _recorded_head(record)
        assert recorded_head == record_head(server_head, len(body)), url
        seen["gzip"] += b"Content-Encoding: gzip" in recorded_head
        seen["chunked"] += b"X-Crawler-Transfer-Encoding: chunked" in recorded_head
        seen["redirect"] += recorded_head.split(b" ", 2)[1].startswith(b"3")
        seen["robots"] += url.endswith("/robots.txt")
    assert all(seen.values()), seen


def _recorded_head(record: dict[str, Any]) -> bytes:
    """The record's HTTP head bytes, read from the file itself."""
    with open(record["file"], "rb") as f:
        f.seek(record["offset"])
        member = gzip.GzipFile(fileobj=io.BytesIO(f.read(record["length"]))).read()
    block = member.split(b"\r\n\r\n", 1)[1]
    return block[: block.index(b"\r\n\r\n") + 4]


def test_gzip_payloads_are_recorded_compressed(crawl: Any) -> None:
    archive, _, _ = crawl
    compressed = [
        r for r in archive.of_type("response") if r["http"].get_header("Content-Encoding")
    ]
    assert compressed
    for record in compressed:
        assert record["payload"][:2] == b"\x1f\x8b"


def test_revisits_repeat_an_earlier_capture_of_the_same_body(crawl: Any) -> None:
    archive, stats, _ = crawl
    web = _web()
    revisits = archive.of_type("revisit")
    assert revisits
    assert int(stats["irl/content/duplicates"]) == len(revisits)
    # duplicate pages reach the engine flagged (those RetryMiddleware and
    # RedirectMiddleware turn into new requests never do; every 2xx one does); robots.txt
    # bodies, which no spider sees, are recorded as revisits but not held to be flagged
    pages = [r for r in revisits if not r["warc"]["WARC-Target-URI"].endswith("/robots.txt")]
    assert len(pages) < len(revisits)
    answered = [r for r in pages if r["http"].get_statuscode().startswith("2")]
    assert answered
    assert len(answered) <= int(stats["test/flagged_duplicates"]) <= len(pages)
    assert "test/flagged_robots" not in stats
    assert int(stats["irl/warc/revisits"]) == len(revisits)
    first: dict[str, str] = {}
    for record in archive.records:
        digest = record["warc"].get("WARC-Payload-Digest")
        if record["type"] == "response":
            first.setdefault(digest, record["warc"]["WARC-Date"])
        elif record["type"] == "revisit":
            url = record["warc"]["WARC-Target-URI"]
            _, body = _expected(web, url, _sent(record, archive))
            assert digest == "sha1:" + b32encode(hashlib.sha1(body).digest()).decode()
            assert record["payload"] == b""
            assert first[digest] == record["warc"]["WARC-Refers-To-Date"]
            assert record["warc"]["WARC-Profile"].endswith("identical-payload-digest")


def test_requests_are_in_origin_form_without_proxy_headers(crawl: Any) -> None:
    archive, _, _ = crawl
    for request in archive.of_type("request"):
        head = request["http"]
        url = urlsplit(request["warc"]["WARC-Target-URI"])
        method, target, _ = head.protocol, *head.statusline.split(" ", 1)
        assert method == "GET"
        assert target == url.path + ("?" + url.query if url.query else "")
        assert head.get_header("Host") == url.netloc
        names = {name.lower() for name, _ in head.headers}
        assert not names & {"proxy-authorization", "proxy-connection"}


def test_ip_addresses_are_the_hosts_not_the_proxys(crawl: Any) -> None:
    archive, _, _ = crawl
    web = _web()
    for record in archive.of_type("response", "revisit", "request"):
        host = urlsplit(record["warc"]["WARC-Target-URI"]).hostname
        info = web.host(host or "")
        assert info is not None
        assert record["warc"]["WARC-IP-Address"] == info.ip


def test_each_file_opens_with_warcinfo_and_holds_whole_exchanges(crawl: Any) -> None:
    archive, _, _ = crawl
    serials = []
    for path in archive.files:
        match = NAME.match(path.name)
        assert match, path.name
        serials.append(int(match[1]))
        records = [r for r in archive.records if r["file"] == path]
        assert records[0]["type"] == "warcinfo"
        info_id = records[0]["warc"]["WARC-Record-ID"]
        ids = {r["warc"]["WARC-Record-ID"] for r in records}
        for record in records[1:]:
            assert record["warc"]["WARC-Warcinfo-ID"] == info_id
            if record["type"] == "request":
                assert record["warc"]["WARC-Concurrent-To"] in ids
    assert serials == list(range(1, len(archive.files) + 1))
    assert not list(archive.directory.glob("*.open"))


def test_robots_txt_fetches_are_recorded(crawl: Any) -> None:
    archive, _, log = crawl
    fetched = {request_url(r) for r in read_log(log) if r["path"] == "/robots.txt" and r["status"]}
    recorded = {
        r["warc"]["WARC-Target-URI"]
        for r in archive.of_type("response", "revisit")
        if r["warc"]["WARC-Target-URI"].endswith("/robots.txt")
    }
    assert fetched and fetched == recorded


def test_the_cdxj_index_points_at_each_response_record(crawl: Any) -> None:
    archive, _, _ = crawl
    lines = 0
    for path in archive.files:
        index = path.with_name(path.name.removesuffix(".warc.gz") + ".cdxj")
        records = {r["offset"]: r for r in archive.records if r["file"] == path}
        for line in index.read_text().splitlines():
            key, stamp, fields_text = line.split(" ", 2)
            fields = json.loads(fields_text)
            record = records[int(fields["offset"])]
            assert record["length"] == int(fields["length"])
            assert record["warc"]["WARC-Target-URI"] == fields["url"]
            assert fields["filename"] == path.name
            assert len(stamp) == 14 and key.split(")", 1)[0].count(",") >= 1
            lines += 1
    assert lines == len(archive.of_type("response", "revisit"))
