"""Debian's Chromium, headless, driven over the Chrome DevTools Protocol.

:func:`chromium` starts it with ``--remote-debugging-port=0`` (the port is read from the
"DevTools listening on ws://..." line it writes to stderr) and yields a :class:`Page`:
its first tab, over a WebSocket. The WebSocket client is the few lines the protocol
needs (RFC 6455: one handshake, masked text frames out, unmasked frames in), so the
tests need no WebSocket package. Where no ``chromium`` is installed the test skips,
saying how to get it (tests/system-packages.sh installs it).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from harness.childprocess import stop_child

START_SECONDS = 30


@contextmanager
def chromium(profile: Path) -> Iterator[Page]:
    binary = shutil.which("chromium")
    if binary is None:
        pytest.skip("Debian's chromium is not installed (sh tests/system-packages.sh installs it)")
    errors = profile.parent / f"{profile.name}.stderr"  # a file: a pipe left unread fills
    with errors.open("w") as stderr:
        process = subprocess.Popen(
            [
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-port=0",
                "--remote-debugging-address=127.0.0.1",
                f"--user-data-dir={profile}",
                "--window-size=1200,2000",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "no_proxy": "*"},
        )
    try:
        deadline = time.monotonic() + START_SECONDS
        port = None
        while port is None and time.monotonic() < deadline and process.poll() is None:
            if found := re.search(r"DevTools listening on ws://[^:]+:(\d+)/", errors.read_text()):
                port = int(found.group(1))
            time.sleep(0.1)
        if port is None:
            pytest.fail(
                f"chromium did not open its DevTools port (exit {process.poll()}):\n"
                + errors.read_text()[-2000:]
            )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"http://127.0.0.1:{port}/json/list", timeout=10) as answer:
            tabs = [t for t in json.load(answer) if t["type"] == "page"]
        page = Page(tabs[0]["webSocketDebuggerUrl"])
        try:
            yield page
        finally:
            page.close()
    finally:
        stop_child(process, 20)


class Page:
    """One tab: :meth:`call` sends a command and returns its result; the events that
    arrive meanwhile are kept in ``events`` (method, params), in order."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self._socket = socket.create_connection((parts.hostname, parts.port), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self._socket.sendall(
            (
                f"GET {parts.path} HTTP/1.1\r\nHost: {parts.netloc}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self._socket.recv(1)
            if not chunk:
                raise ConnectionError("chromium closed the WebSocket handshake")
            head += chunk
        assert head.startswith(b"HTTP/1.1 101"), head
        self._next_id = 0
        self.events: list[tuple[str, dict[str, Any]]] = []

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        ident = self._next_id
        self._send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self._receive())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            if "method" in message:
                self.events.append((message["method"], message.get("params", {})))

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (awaited if a promise)."""
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, seconds: float = 20) -> Any:
        """Evaluate ``expression`` until it is truthy; its value."""
        deadline = time.monotonic() + seconds
        while True:
            value = self.evaluate(expression)
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.2)

    def close(self) -> None:
        self._socket.close()

    # -- RFC 6455 frames -----------------------------------------------------------------
    def _send(self, text: str, opcode: int = 0x1) -> None:
        payload = text.encode()
        mask = os.urandom(4)
        size = len(payload)
        if size < 126:
            header = struct.pack("!BB", 0x80 | opcode, 0x80 | size)
        elif size < 1 << 16:
            header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, size)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, size)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self._socket.sendall(header + mask + masked)

    def _receive(self) -> str:
        message = b""
        while True:
            first, second = self._read(2)
            opcode, size = first & 0x0F, second & 0x7F
            if size == 126:
                (size,) = struct.unpack("!H", self._read(2))
            elif size == 127:
                (size,) = struct.unpack("!Q", self._read(8))
            payload = self._read(size)
            if opcode == 0x8:
                raise ConnectionError("chromium closed the WebSocket")
            if opcode == 0x9:  # ping
                self._send(payload.decode(), opcode=0xA)
                continue
            message += payload
            if first & 0x80:  # FIN
                return message.decode()

    def _read(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self._socket.recv(size - len(data))
            if not chunk:
                raise ConnectionError("chromium closed the WebSocket")
            data += chunk
        return data
