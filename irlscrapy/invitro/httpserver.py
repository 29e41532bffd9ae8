"""The in-vitro web's HTTP server, reached by crawlers as an HTTP proxy.

Theory of operation
-------------------
Crawlers send absolute-URI requests (``GET http://www.w3.com/news/8.html HTTP/1.1``),
as Scrapy does through ``http_proxy``; origin-form requests with a ``Host`` header are
served the same way, so a load generator can talk to it directly. The reply is
:meth:`InVitroWeb.respond` of the host and path: nothing is stored.

The protocol is a small HTTP/1.1 server of its own rather than ``twisted.web``: the
server must never be the bottleneck of a crawler (2,000 pages/s on one core), and it has
to misbehave on purpose (resets, hangs, chunked bodies) in ways a full server makes hard.

One request is served at a time per connection, in order (pipelined requests wait in
the buffer). Bad input never crashes the server: a malformed request line or header
gets 400, a header block over :data:`MAX_HEADER_BYTES` gets 431, other methods 405,
URIs of other schemes 501; each such reply closes the connection.

https, as Scrapy sends it through an http proxy: ``CONNECT host:443``. For a host that
serves https (:meth:`irlscrapy.invitro.host.Host.serves`) the proxy answers 200 and then
speaks TLS on the connection (:mod:`irlscrapy.invitro.tls`: a certificate for the host
name); the requests inside the tunnel are origin-form and are served as
``https://host/path``. For a host that does not, nothing listens on port 443: the
proxy answers 502 and closes, as a proxy does when the origin refuses the connection
(Scrapy raises ``TunnelError``, one of its ``RETRY_EXCEPTIONS``: a connection-level
failure of the https origin while the host's http answers). The tunnel never opened, so
the server never learns the path. A CONNECT to another port is refused the same way,
one to an unknown host gets 502 as a dns-error. An absolute ``https://`` URI (what a
client that lets the proxy speak TLS sends) is served the same, with its path; refused:
502, connection kept.

Request log
-----------
One JSON object per request, one per line (:class:`RequestLog`)::

    t_start     float  server clock (time.time) when the request was fully received
    t_end       float  when the last byte was handed to the kernel, or the client left
    scheme      str    http, or https (inside a CONNECT tunnel, or an absolute https URI)
    host, ip    str    the host asked for and the address the in-vitro DNS gives it
    path        str    path with query; "" for a refused CONNECT (the path is never sent)
    status      int    0 for a reset or a hang the server caused, or a client that left
                       before the reply began; 502 for a refused connection
    bytes       int    body bytes sent (after gzip, before chunk framing)
    kind        str    page, robots, redirect, error, nonhtml, reset, timeout,
                       dns-error, aborted, bad-request, refused (a connection to a
                       port nobody serves: https on a host that serves no https)
    user_agent  str
    pld         str    ground truth: the host's registered domain ("" if unknown)
    spam        bool   the host belongs to a spam farm
    trap        bool   the URL lies inside a crawler trap
"""

from __future__ import annotations

import json
import socket
import struct
import time
from collections.abc import Callable
from typing import IO, Any

from twisted.internet import interfaces
from twisted.internet.interfaces import IReactorTime
from twisted.internet.protocol import Factory, Protocol
from zope.interface import implementer

from irlscrapy.invitro.content import Reply, plain, reason
from irlscrapy.invitro.tls import server_options
from irlscrapy.invitro.web import InVitroWeb

MAX_HEADER_BYTES = 64 * 1024
#: Bodies above this are streamed so that t_end is when the last byte really left.
STREAM_THRESHOLD = 256 * 1024
CHUNK_BYTES = 64 * 1024
#: The one port on which a CONNECT tunnel can open.
HTTPS_PORT = 443


class RequestLog:
    """JSON-lines request log. Buffered; :meth:`flush` makes every record so far visible."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, record: dict[str, Any]) -> None:
        self._stream.write(json.dumps(record, separators=(",", ":")) + "\n")

    def flush(self) -> None:
        self._stream.flush()


class ProxyFactory(Factory):
    def __init__(
        self,
        web: InVitroWeb,
        log: RequestLog | None,
        clock: IReactorTime,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.web = web
        self.log = log
        self.clock = clock
        self.now = now

    def buildProtocol(self, addr: Any) -> ProxyProtocol:
        return ProxyProtocol(self)


@implementer(interfaces.IPullProducer)
class _BodyStreamer:
    """Feeds a large reply to the transport as it drains; calls back once all is sent."""

    def __init__(self, transport: Any, data: bytes, done: Callable[[], None]) -> None:
        self._transport = transport
        self._data = memoryview(data)
        self._offset = 0
        self._done = done

    def resumeProducing(self) -> None:
        if self._offset >= len(self._data):
            self._transport.unregisterProducer()
            self._done()
            return
        end = self._offset + CHUNK_BYTES
        self._transport.write(self._data[self._offset : end].tobytes())
        self._offset = end

    def stopProducing(self) -> None:
        self._offset = len(self._data)


class ProxyProtocol(Protocol):
    def __init__(self, factory: ProxyFactory) -> None:
        self.factory = factory
        self._buffer = bytearray()
        self._busy = False  # a reply is being prepared or sent
        self._closed = False
        self._pending: dict[str, Any] | None = None  # log record of the request in progress
        self._timer: Any = None  # the IDelayedCall of a delayed reply or a hang
        self._tunnel: str | None = None  # the host whose TLS tunnel this connection carries

    @property
    def _conn(self) -> Any:
        """The transport. Untyped: mypy cannot read Twisted's zope interfaces without a plugin."""
        return self.transport

    # -- input ---------------------------------------------------------------------------
    def dataReceived(self, data: bytes) -> None:
        self._buffer += data
        if not self._busy:
            self._serve_buffered()

    def _serve_buffered(self) -> None:
        while not self._busy and not self._closed:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buffer) > MAX_HEADER_BYTES:
                    self._refuse(431, "header block too large")
                return
            if end > MAX_HEADER_BYTES:
                self._refuse(431, "header block too large")
                return
            lines = bytes(self._buffer[:end]).split(b"\r\n")
            parsed = _parse_head(lines)
            if isinstance(parsed, str):
                self._refuse(400, parsed)
                return
            method, target, version, headers = parsed
            length = headers.get(b"content-length", b"0")
            if not length.isdigit() or b"transfer-encoding" in headers:
                self._refuse(400, "request bodies must have a Content-Length")
                return
            total = end + 4 + int(length)
            if len(self._buffer) < total:
                return
            del self._buffer[:total]
            self._handle(method, target, version, headers)

    # -- one request -----------------------------------------------------------------------
    def _handle(
        self, method: bytes, target: bytes, version: bytes, headers: dict[bytes, bytes]
    ) -> None:
        factory = self.factory
        keep_alive = version == b"HTTP/1.1" and headers.get(b"connection", b"").lower() != b"close"
        if method == b"CONNECT":
            self._connect(target, headers)
            return
        scheme = "http"
        if self._tunnel is not None:
            if not target.startswith(b"/"):
                self._refuse(400, "requests inside a tunnel are origin-form")
                return
            host_field, path_bytes, scheme = self._tunnel.encode("ascii"), target, "https"
        elif target.startswith(b"/"):
            host_field = headers.get(b"host", b"")
            path_bytes = target
        elif target[:7].lower() == b"http://":
            host_field, slash, rest = target[7:].partition(b"/")
            path_bytes = slash + rest if slash else b"/"
        elif target[:8].lower() == b"https://":
            host_field, slash, rest = target[8:].partition(b"/")
            path_bytes = slash + rest if slash else b"/"
            scheme = "https"
        else:
            self._refuse(501, "only http(s):// absolute URIs and origin-form targets are served")
            return
        try:
            host_name = host_field.decode("ascii").split(":", 1)[0].lower()
            path = path_bytes.decode("ascii").split("#", 1)[0]
        except UnicodeDecodeError:
            self._refuse(400, "request target is not ASCII")
            return
        if method not in (b"GET", b"HEAD"):
            self._refuse(405, f"method {method.decode('ascii', 'replace')} not allowed")
            return
        web = factory.web
        accept_gzip = b"gzip" in headers.get(b"accept-encoding", b"")
        reply = web.respond(host_name, path, accept_gzip, scheme)
        if reply.action == "refuse":  # what a proxy answers when the origin refuses
            reply = plain(502, "refused", f"connection to {host_name} refused\n")
        self._busy = True
        self._pending = self._record(scheme, host_name, path, reply.kind, headers)
        if reply.action == "reset":
            self._reset()
        elif reply.action == "hang":
            self._timer = factory.clock.callLater(reply.delay, self._hang_up)
        elif reply.delay > 0:
            self._timer = factory.clock.callLater(
                reply.delay, self._send, reply, method == b"HEAD", keep_alive
            )
        else:
            self._send(reply, method == b"HEAD", keep_alive)

    def _record(
        self, scheme: str, host_name: str, path: str, kind: str, headers: dict[bytes, bytes]
    ) -> dict[str, Any]:
        """A log record for a request just received (its end and status come later)."""
        web = self.factory.web
        host = web.host(host_name)
        return {
            "t_start": self.factory.now(),
            "t_end": None,
            "scheme": scheme,
            "host": host_name,
            "ip": host.ip if host else "",
            "path": path,
            "status": 0,
            "bytes": 0,
            "kind": kind,
            "user_agent": headers.get(b"user-agent", b"").decode("latin-1"),
            "pld": host.pld if host else "",
            "spam": bool(host and host.spam),
            "trap": bool(host and path and web.is_trap(host, path)),
        }

    def _connect(self, target: bytes, headers: dict[bytes, bytes]) -> None:
        """``CONNECT host:port``: open a TLS tunnel to a host that serves https, else
        refuse as a proxy does when nothing listens there (see the module docstring)."""
        host_field, colon, port = target.rpartition(b":")
        if self._tunnel is not None or not colon or not port.isdigit():
            self._refuse(400, "malformed CONNECT target (need host:port, outside a tunnel)")
            return
        try:
            host_name = host_field.decode("ascii").lower()
        except UnicodeDecodeError:
            self._refuse(400, "request target is not ASCII")
            return
        host = self.factory.web.host(host_name)
        port_text = port.decode("ascii")
        if host is None or host.dns in ("nxdomain", "servfail", "timeout"):
            failure = (502, "dns-error", f"cannot resolve {host_name}")
        elif int(port) != HTTPS_PORT or not host.serves("https"):
            failure = (502, "refused", f"connection to {host_name}:{port_text} refused")
        elif self._buffer:  # the client may send nothing before the tunnel's answer
            failure = (400, "bad-request", "data sent before the tunnel was open")
        else:
            failure = None
        if failure is not None:
            status, kind, message = failure
            self._close_with(status, message, self._record("https", host_name, "", kind, headers))
            return
        self._tunnel = host_name
        self._conn.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self._conn.startTLS(server_options(host_name))

    def _send(self, reply: Reply, head_only: bool, keep_alive: bool) -> None:
        self._timer = None
        body = b"" if head_only else reply.body
        payload = _chunked(body) if reply.chunked and not head_only else body
        wire = wire_head(reply, head_only, keep_alive) + payload
        assert self._pending is not None
        self._pending["status"] = reply.status
        self._pending["bytes"] = len(body)
        if len(wire) > STREAM_THRESHOLD:
            self._conn.registerProducer(
                _BodyStreamer(self.transport, wire, lambda: self._sent(keep_alive)), False
            )
        else:
            self._conn.write(wire)
            self._sent(keep_alive)

    def _sent(self, keep_alive: bool) -> None:
        self._finish()
        if not keep_alive:
            self._closed = True
            self._conn.loseConnection()
        else:
            self._serve_buffered()

    def _finish(self, status: int | None = None, kind: str | None = None) -> None:
        record, self._pending = self._pending, None
        self._busy = False
        if record is None:
            return
        record["t_end"] = self.factory.now()
        if status is not None:
            record["status"] = status
        if kind is not None:
            record["kind"] = kind
        if self.factory.log is not None:
            self.factory.log.write(record)

    def _reset(self) -> None:
        """Abort with a TCP RST: nothing is sent."""
        self._finish(status=0)
        self._closed = True
        # inside a TLS tunnel getHandle() is the TLS connection; the socket is below it
        sock = getattr(self._conn, "socket", None) or self._conn.getHandle()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self._conn.abortConnection()

    def _hang_up(self) -> None:
        self._timer = None
        self._finish(status=0)
        self._closed = True
        self._conn.loseConnection()

    def _refuse(self, status: int, message: str) -> None:
        """Reply to bad input with an error and close; logged as kind bad-request."""
        record = self._record("https" if self._tunnel else "http", "", "", "bad-request", {})
        self._close_with(status, message, record)

    def _close_with(self, status: int, message: str, record: dict[str, Any]) -> None:
        """Send an error reply, log ``record`` with it, and close."""
        self._closed = True
        body = (message + "\n").encode()
        self._conn.write(
            f"HTTP/1.1 {status} {reason(status)}\r\nContent-Type: text/plain\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        if self.factory.log is not None:
            record.update(t_end=record["t_start"], status=status, bytes=len(body))
            self.factory.log.write(record)
        self._conn.loseConnection()

    def connectionLost(self, reason: Any = None) -> None:
        self._closed = True
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
        if self._pending is not None:
            # the client left first: a hang it timed out on, or a reply not yet begun
            started = self._pending["status"] != 0
            self._finish(kind=None if started or self._pending["kind"] == "timeout" else "aborted")


def _parse_head(lines: list[bytes]) -> tuple[bytes, bytes, bytes, dict[bytes, bytes]] | str:
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[2].startswith(b"HTTP/1."):
        return "malformed request line"
    headers: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            return "malformed header line"
        headers[name.lower()] = value.strip()
    return parts[0], parts[1], parts[2], headers


def wire_head(reply: Reply, head_only: bool, keep_alive: bool) -> bytes:
    """The status line and headers the server sends for ``reply``, through the blank
    line (what a WARC of the crawl must record byte for byte)."""
    lines = [f"HTTP/1.1 {reply.status} {reason(reply.status)}"]
    lines.extend(f"{name}: {value}" for name, value in reply.headers)
    if reply.chunked and not head_only:
        lines.append("Transfer-Encoding: chunked")
    else:
        lines.append(f"Content-Length: {len(reply.body)}")
    if not keep_alive:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _chunked(body: bytes) -> bytes:
    out = bytearray()
    for i in range(0, len(body), 8192):
        piece = body[i : i + 8192]
        out += b"%x\r\n" % len(piece) + piece + b"\r\n"
    out += b"0\r\n\r\n"
    return bytes(out)
