"""Query a DNS server with twisted.names' own client; print one JSON object of results.

python tests/e2e/dns_client.py HOST:PORT NAME [AAAA:NAME ...]
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from twisted.internet import defer, task
from twisted.names import client, dns, error

TIMEOUT = (2,)  # one try, two seconds


@defer.inlineCallbacks
def main(reactor: Any, server: str, *names: str) -> Any:
    host, port = server.rsplit(":", 1)
    resolver = client.Resolver(servers=[(host, int(port))], reactor=reactor)
    results = {}
    for query in names:
        aaaa = query.startswith("AAAA:")
        name = query.removeprefix("AAAA:")
        started = time.monotonic()
        result: dict[str, Any] = {"error": None}
        try:
            lookup = resolver.lookupIPV6Address if aaaa else resolver.lookupAddress
            answers, _, _ = yield lookup(name, timeout=TIMEOUT)
            result["ips"] = [a.payload.dottedQuad() for a in answers if a.type == dns.A]
            result["records"] = len(answers)
            result["ttl"] = answers[0].ttl if answers else None
        except error.DNSNameError:
            result["error"] = "NXDOMAIN"
        except error.DNSServerError:
            result["error"] = "SERVFAIL"
        except (defer.TimeoutError, error.DNSQueryTimeoutError):
            result["error"] = "timeout"
        result["seconds"] = time.monotonic() - started
        results[query] = result
    print(json.dumps(results))


if __name__ == "__main__":
    task.react(main, sys.argv[1:])
