"""The in-vitro HTTP proxy over real loopback sockets."""

from __future__ import annotations

import gzip
import http.client
import socket
import ssl
import time
from typing import Any

import pytest
from cryptography import x509

from irlscrapy.invitro.process import InVitroProcess
from irlscrapy.invitro.profiles import TINY
from irlscrapy.invitro.web import InVitroWeb
from irlscrapy.oracle.groundtruth import CrawlPolicy, crawl_order, split_url, url_scheme

from .conftest import SEED, fetch, proxy_address, read_log

WEB = InVitroWeb(TINY, SEED)


def first_host(any_scheme: bool = False, **facets: object) -> str:
    """The first host of tiny with these facets whose pages are on http, unless
    ``any_scheme`` or a scheme kind is asked for."""
    if not any_scheme:
        facets.setdefault("scheme", "http")
    for pid in range(WEB.total_plds):
        for k in range(WEB.hosts_in_pld(pid) or 3):
            host = WEB.host(WEB.host_name(pid, k))
            if host and all(getattr(host, f) == v for f, v in facets.items()):
                return host.name
    raise AssertionError(f"no host with {facets} in tiny")


def raw_exchange(info: dict[str, Any], data: bytes, timeout: float = 5.0) -> bytes:
    """Send raw bytes, read until the server closes the connection."""
    with socket.create_connection(proxy_address(info), timeout=timeout) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


class TestServesTheModel:
    def test_bodies_over_the_wire_equal_the_model(self, invitro: dict[str, Any]) -> None:
        urls = [
            u
            for u, r in crawl_order(WEB, CrawlPolicy(robots="scrapy"))
            if r.action == "send" and r.delay == 0
        ][:150]
        assert {url_scheme(u) for u in urls} == {"http", "https"}
        for url in urls:
            host, path = split_url(url)
            expected = WEB.respond(host, path, scheme=url_scheme(url))
            status, headers, body = fetch(invitro, url)
            assert status == expected.status, url
            assert body == expected.body, url
            assert headers.get("content-type") == dict(expected.headers).get("Content-Type")

    def test_a_second_server_with_the_same_seed_serves_identical_bytes(
        self, invitro: dict[str, Any]
    ) -> None:
        urls = [
            u
            for u, r in crawl_order(WEB, CrawlPolicy(robots="scrapy"))
            if r.action == "send" and r.delay == 0
        ][:40]
        with InVitroProcess("tiny", SEED) as other:
            for url in urls:
                assert fetch(invitro, url)[2] == fetch(other.info, url)[2]
        with InVitroProcess("tiny", SEED + 1) as different:
            bodies = [fetch(different.info, u)[2] for u in urls[:10]]
        assert bodies != [fetch(invitro, u)[2] for u in urls[:10]]

    def test_gzip_when_accepted_and_chunked_framing(self, invitro: dict[str, Any]) -> None:
        host = first_host(gzip=True, chunked=True, server="normal", dns="ok")
        status, headers, body = fetch(invitro, f"http://{host}/", {"Accept-Encoding": "gzip"})
        assert status == 200 and headers["content-encoding"] == "gzip"
        assert headers["transfer-encoding"] == "chunked" and "content-length" not in headers
        assert gzip.decompress(body) == WEB.respond(host, "/").body
        assert "content-encoding" not in fetch(invitro, f"http://{host}/")[1]

    def test_robots_variants_are_served(self, invitro: dict[str, Any]) -> None:
        assert (
            fetch(invitro, f"http://{first_host(robots='missing', dns='ok')}/robots.txt")[0] == 404
        )
        assert fetch(invitro, f"http://{first_host(robots='error', dns='ok')}/robots.txt")[0] in (
            500,
            503,
        )
        status, headers, _ = fetch(
            invitro, f"http://{first_host(robots='redirect', dns='ok')}/robots.txt"
        )
        assert status == 301 and headers["location"].endswith("/robots-real.txt")
        with pytest.raises(ConnectionError):
            fetch(invitro, f"http://{first_host(robots='unreachable', dns='ok')}/robots.txt")
        big = fetch(invitro, f"http://{first_host(robots='oversized', dns='ok')}/robots.txt")[2]
        assert len(big) > 500 * 1024

    def test_unknown_and_unresolvable_hosts_get_502(self, invitro: dict[str, Any]) -> None:
        assert fetch(invitro, "http://www.unknown.example/")[0] == 502
        assert fetch(invitro, f"http://{first_host(True, dns='nxdomain')}/")[0] == 502

    def test_slow_server_delays_its_reply(self, invitro: dict[str, Any]) -> None:
        host = first_host(server="slow", dns="ok")
        started = time.monotonic()
        assert fetch(invitro, f"http://{host}/")[0] == 200
        assert time.monotonic() - started >= TINY.slow_delay * 0.95


class TestBadInput:
    @pytest.mark.parametrize(
        ("request_bytes", "status"),
        [
            (b"GARBAGE\r\n\r\n", b"400"),
            (b"GET /\r\n\r\n", b"400"),
            (b"GET http://www.w0.com/ HTTP/1.1\r\nno colon here\r\n\r\n", b"400"),
            (b"GET http://www.w0.com/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", b"400"),
            (b"POST http://www.w0.com/ HTTP/1.1\r\nContent-Length: 2\r\n\r\nab", b"405"),
            (b"CONNECT www.w0.com HTTP/1.1\r\n\r\n", b"400"),
            (b"GET ftp://www.w0.com/ HTTP/1.1\r\n\r\n", b"501"),
            (b"GET http://www.w0.com/\xff HTTP/1.1\r\n\r\n", b"400"),
            (b"GET http://www.w0.com/ HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", b"431"),
            (b"GET http://www.w0.com/ HTTP/1.1\r\nX-Endless: " + b"a" * 70_000, b"431"),
        ],
    )
    def test_bad_requests_get_an_http_error_and_the_server_lives_on(
        self, invitro: dict[str, Any], request_bytes: bytes, status: bytes
    ) -> None:
        reply = raw_exchange(invitro, request_bytes)
        assert reply.split(b" ", 2)[1] == status
        assert fetch(invitro, invitro["seeds"][0])[0] == 200

    def test_pipelined_requests_are_answered_in_order(self, invitro: dict[str, Any]) -> None:
        seeds = invitro["seeds"]
        pipelined = b"".join(f"GET {u} HTTP/1.1\r\nHost: x\r\n\r\n".encode() for u in seeds)
        reply = raw_exchange(
            invitro, pipelined + f"GET {seeds[0]} HTTP/1.1\r\nConnection: close\r\n\r\n".encode()
        )
        titles = [t.split(b"<")[0].split()[0] for t in reply.split(b"<title>")[1:]]
        assert titles == [u.split("/")[2].encode() for u in [*seeds, seeds[0]]]

    def test_origin_form_requests_use_the_host_header(self, invitro: dict[str, Any]) -> None:
        host = invitro["seeds"][0].split("/")[2]
        reply = raw_exchange(
            invitro, f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()
        )
        assert reply.startswith(b"HTTP/1.1 200") and reply.endswith(WEB.respond(host, "/").body)


class TestRequestLog:
    def test_log_records_every_field_with_ground_truth(self, invitro: dict[str, Any]) -> None:
        spam_host = first_host(farm=0, dns="ok", server="normal")
        fetch(invitro, f"http://{spam_host}/", {"User-Agent": "log-test/1"})
        slow_host = first_host(server="slow", dns="ok")
        fetch(invitro, f"http://{slow_host}/", {"User-Agent": "log-test/1"})
        time.sleep(1.0)  # the server flushes its log every 0.5 s
        records = [r for r in read_log(invitro["log_path"]) if r["user_agent"] == "log-test/1"]
        by_host = {r["host"]: r for r in records}
        spam, slow = by_host[spam_host], by_host[slow_host]
        assert set(spam) == {
            "t_start",
            "t_end",
            "scheme",
            "host",
            "ip",
            "path",
            "status",
            "bytes",
            "kind",
            "user_agent",
            "pld",
            "spam",
            "trap",
        }
        assert spam["spam"] is True and spam["pld"] == WEB.host(spam_host).pld  # type: ignore[union-attr]
        assert spam["ip"] == WEB.host(spam_host).ip and spam["status"] == 200  # type: ignore[union-attr]
        assert spam["bytes"] == len(WEB.respond(spam_host, "/").body) and spam["kind"] == "page"
        assert slow["t_end"] - slow["t_start"] >= TINY.slow_delay * 0.95
        assert slow["spam"] is False

    def test_resets_and_hangs_log_status_zero(self, invitro: dict[str, Any]) -> None:
        host = first_host(robots="unreachable", dns="ok")
        with pytest.raises(ConnectionError):
            fetch(invitro, f"http://{host}/robots.txt", {"User-Agent": "reset-test"})
        hanging = next(
            u for u, r in crawl_order(WEB, CrawlPolicy(robots="scrapy")) if r.action == "hang"
        )
        with pytest.raises(TimeoutError):
            fetch(invitro, hanging, {"User-Agent": "reset-test"}, timeout=0.5)
        time.sleep(1.0)
        records = [r for r in read_log(invitro["log_path"]) if r["user_agent"] == "reset-test"]
        assert sorted((r["kind"], r["status"]) for r in records) == [("reset", 0), ("timeout", 0)]
        trap = next(
            u
            for u, _ in crawl_order(WEB, CrawlPolicy(robots="scrapy"))
            if WEB.is_trap(WEB.host(split_url(u)[0]), split_url(u)[1])
        )  # type: ignore[arg-type]
        fetch(invitro, trap, {"User-Agent": "trap-test"})
        time.sleep(1.0)
        assert [
            r["trap"] for r in read_log(invitro["log_path"]) if r["user_agent"] == "trap-test"
        ] == [True]


def tunnel(info: dict[str, Any], host: str, port: int = 443) -> http.client.HTTPSConnection:
    """An https connection to ``host`` through the proxy's CONNECT tunnel, as Scrapy
    makes one (the certificate is not verified)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    conn = http.client.HTTPSConnection(*proxy_address(info), timeout=5, context=context)
    conn.set_tunnel(host, port, headers={"User-Agent": "tunnel-test"})
    return conn


def tunnel_get(info: dict[str, Any], host: str, path: str) -> tuple[int, dict[str, str], bytes]:
    conn = tunnel(info, host)
    try:
        conn.request("GET", path, headers={"User-Agent": "tunnel-test"})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


class TestSchemes:
    """https reaches the web as Scrapy sends it: CONNECT host:443, then TLS."""

    def test_a_tunnel_to_a_host_that_serves_https_speaks_tls_and_serves_the_model(
        self, invitro: dict[str, Any]
    ) -> None:
        host = first_host(scheme="upgrade", robots="allow", server="normal", dns="ok")
        conn = tunnel(invitro, host)
        try:
            for path in ("/", "/robots.txt", "/go/1", "/missing/3"):  # keep-alive in the tunnel
                conn.request("GET", path, headers={"User-Agent": "tunnel-test"})
                resp = conn.getresponse()
                expected = WEB.respond(host, path, scheme="https")
                assert (resp.status, resp.read()) == (expected.status, expected.body), path
            # the certificate names the host, so a client that checks the name (Scrapy
            # logs a warning otherwise) finds it right
            der = conn.sock.getpeercert(binary_form=True)  # type: ignore[union-attr]
            names = x509.load_der_x509_certificate(der).extensions.get_extension_for_class(
                x509.SubjectAlternativeName
            )
            assert names.value.get_values_for_type(x509.DNSName) == [host]
        finally:
            conn.close()
        status, headers, _ = fetch(invitro, f"http://{host}/news")
        assert (status, headers["location"]) == (301, f"https://{host}/news")

    def test_https_on_a_downgrade_host_redirects_to_http(self, invitro: dict[str, Any]) -> None:
        host = first_host(scheme="downgrade", server="normal", dns="ok")
        status, headers, _ = tunnel_get(invitro, host, "/any/path?x=1")
        assert (status, headers["location"]) == (301, f"http://{host}/any/path?x=1")

    def test_a_tunnel_to_a_host_without_https_is_refused_and_logged(
        self, invitro: dict[str, Any]
    ) -> None:
        host = first_host(scheme="http", server="normal", dns="ok")
        with pytest.raises(OSError, match="502"):
            tunnel_get(invitro, host, "/")
        reply = raw_exchange(invitro, f"CONNECT {host}:8443 HTTP/1.1\r\n\r\n".encode())
        assert reply.startswith(b"HTTP/1.1 502 ")
        status, _, body = fetch(invitro, f"https://{host}/news/1.html")  # absolute-form
        assert status == 502 and b"refused" in body
        time.sleep(1.0)  # the server flushes its log every 0.5 s
        refused = [r for r in read_log(invitro["log_path"]) if r["kind"] == "refused"]
        ours = [(r["scheme"], r["path"], r["status"]) for r in refused if r["host"] == host]
        assert ours == [("https", "", 502), ("https", "", 502), ("https", "/news/1.html", 502)]
        assert all(r["ip"] == WEB.host(host).ip for r in refused if r["host"] == host)  # type: ignore[union-attr]

    def test_a_reset_inside_a_tunnel_is_a_reset(self, invitro: dict[str, Any]) -> None:
        host = first_host(scheme="upgrade", robots="unreachable", dns="ok")
        with pytest.raises(ConnectionError):
            tunnel_get(invitro, host, "/robots.txt")
        status, _, _ = tunnel_get(invitro, first_host(scheme="upgrade", dns="ok"), "/")
        assert status in (200, 301, 404, 429, 500, 503)  # the server lives on

    def test_requests_in_a_tunnel_are_logged_as_https(self, invitro: dict[str, Any]) -> None:
        host = first_host(scheme="upgrade", robots="allow", server="normal", dns="ok")
        tunnel_get(invitro, host, "/?logged")
        time.sleep(1.0)
        records = read_log(invitro["log_path"])
        (record,) = [r for r in records if r["host"] == host and r["path"] == "/?logged"]
        assert (record["scheme"], record["status"], record["user_agent"]) == (
            "https",
            404,
            "tunnel-test",
        )
