"""Run the in-vitro web: HTTP proxy and DNS server on ephemeral loopback ports.

:func:`serve` prints ONE JSON line on stdout, then serves until SIGINT or SIGTERM::

    {"proxy": "http://127.0.0.1:PORT", "dns": "127.0.0.1:PORT", "seeds": [...],
     "settings": {...}, "env": {...}, "profile": "tiny", "seed": 0, "pid": 1234,
     "log": "/path/or/null"}

``settings`` are Scrapy settings (for ``-s NAME=VALUE``) and ``env`` environment
variables (``http_proxy`` and ``https_proxy``: https URLs reach the web through the same
proxy, as CONNECT tunnels) that point a crawl at this web; for a test web
(:data:`TEST_WEB_SETTINGS`) they also shorten timeouts, back-off and retirement, and
nothing else, so its crawl ends in seconds rather than hours.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path
from typing import IO, Any

from irlscrapy.invitro.profiles import get_profile
from irlscrapy.invitro.web import InVitroWeb

LOOPBACK = "127.0.0.1"
#: A test web's crawl settings: its hanging servers hold a request 20 s and its flaky
#: ones fail on purpose, so the production defaults (a 20 s timeout, back-off from 10 s
#: to 10 minutes, retirement for an hour, 30 s before giving up) would make a crawl of a
#: few thousand pages last an hour. Politeness is left as the crawl sets it.
TEST_WEB_SETTINGS: dict[str, dict[str, Any]] = {
    "tiny": {
        "DOWNLOAD_TIMEOUT": 6,
        "IRL_HEALTH_BACKOFF_BASE": 0.5,
        "IRL_HEALTH_BACKOFF_MAX": 4.0,
        "IRL_HEALTH_RETIRE_DELAY": 30.0,
        "IRL_CRAWL_GIVE_UP_AFTER": 2.0,
    },
}
LOG_FLUSH_SECONDS = 0.5


def describe(web: InVitroWeb, proxy_port: int, dns_port: int, log: Path | None) -> dict[str, Any]:
    proxy = f"http://{LOOPBACK}:{proxy_port}"
    dns = f"{LOOPBACK}:{dns_port}"
    return {
        "proxy": proxy,
        "dns": dns,
        "seeds": web.seeds(),
        # Its hosts live in 127.0.0.0/8, which the address guard refuses by default.
        "settings": {
            "IRL_DNS_SERVERS": dns,
            "IRL_ALLOW_PRIVATE_ADDRESSES": "127.0.0.0/8",
            **TEST_WEB_SETTINGS.get(web.profile.name, {}),
        },
        "env": {"http_proxy": proxy, "https_proxy": proxy},
        "profile": web.profile.name,
        "seed": web.seed,
        "pid": os.getpid(),
        "log": str(log) if log else None,
    }


def serve(profile: str, seed: int, log: Path | None = None, out: IO[str] = sys.stdout) -> None:
    from twisted.internet import reactor as default_reactor
    from twisted.internet import task

    from irlscrapy.invitro.dnsserver import dns_protocol
    from irlscrapy.invitro.httpserver import ProxyFactory, RequestLog

    reactor: Any = default_reactor  # untyped: mypy cannot read Twisted's zope interfaces
    web = InVitroWeb(get_profile(profile), seed)
    with contextlib.ExitStack() as stack:
        request_log = None
        if log is not None:
            request_log = RequestLog(stack.enter_context(open(log, "a", buffering=1 << 20)))
            task.LoopingCall(request_log.flush).start(LOG_FLUSH_SECONDS, now=False)
        factory = ProxyFactory(web, request_log, reactor)
        http_port = reactor.listenTCP(0, factory, backlog=1024, interface=LOOPBACK)
        dns_port = reactor.listenUDP(0, dns_protocol(web, reactor), interface=LOOPBACK)
        info = describe(web, http_port.getHost().port, dns_port.getHost().port, log)
        out.write(json.dumps(info) + "\n")
        out.flush()
        reactor.run()  # Twisted stops it on SIGINT and SIGTERM; the log is closed after
