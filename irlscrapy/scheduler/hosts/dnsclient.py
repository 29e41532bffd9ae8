"""``PooledPortResolver``: twisted.names' DNS client without a new UDP port per query.

Theory of operation
-------------------
``twisted.names.client.Resolver`` binds a fresh UDP port for every query and closes it
when the answer comes (source-port randomization, against spoofed answers). Binding a
socket and registering it with the reactor costs about 0.6 ms of the reactor thread,
and the frontier resolves each new host once, in bursts when a BEAST queue brings many
new hosts: tens of milliseconds of stall per burst (measured in issue 4).

This resolver keeps :data:`PORTS` UDP ports open and sends each query through the next
one in turn; DNSDatagramProtocol matches answers to queries by their random 16-bit id,
so many queries share a port. A port is retired after :data:`QUERIES_PER_PORT` queries
(closed once its last answer is in) and a new random one takes its place, so the source
port an attacker must guess still changes, every few hundred queries instead of every
query: the trade-off is 1/PORTS of a port bind per query. IPv6 nameservers get
Twisted's own per-query ports. :meth:`close` closes every port.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.abstract import isIPv6Address
from twisted.internet.defer import Deferred
from twisted.names import client, dns

#: UDP ports open at once.
PORTS = 8
#: Queries a port carries before it is replaced by a new random one.
QUERIES_PER_PORT = 256


class PooledPortResolver(client.Resolver):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ports: list[dns.DNSDatagramProtocol] = []
        self._uses: dict[dns.DNSDatagramProtocol, int] = {}
        self._retired: set[dns.DNSDatagramProtocol] = set()
        self._turn = 0

    def _query(self, *args: Any) -> Deferred[Any]:
        if isIPv6Address(args[0][0]):
            return super()._query(*args)
        protocol = self._port()
        d: Deferred[Any] = protocol.query(*args)
        d.addBoth(self._answered, protocol)
        return d

    def _port(self) -> dns.DNSDatagramProtocol:
        """The next port in turn; a new one where the pool is short."""
        if len(self._ports) < PORTS:
            self._turn = len(self._ports)
            self._ports.append(self._connectedProtocol())
            self._uses[self._ports[-1]] = 0
        else:
            self._turn = (self._turn + 1) % PORTS
        protocol = self._ports[self._turn]
        self._uses[protocol] += 1
        if self._uses[protocol] >= QUERIES_PER_PORT:  # this query is its last
            del self._uses[protocol]
            self._retired.add(protocol)
            self._ports[self._turn] = fresh = self._connectedProtocol()
            self._uses[fresh] = 0
        return protocol

    def _answered(self, result: Any, protocol: dns.DNSDatagramProtocol) -> Any:
        if protocol in self._retired and not protocol.liveMessages:
            self._retired.discard(protocol)
            _stop(protocol)
        return result

    def close(self) -> None:
        """Close every port (queries still waiting fail with a timeout)."""
        for protocol in [*self._ports, *self._retired]:
            _stop(protocol)
        self._ports.clear()
        self._uses.clear()
        self._retired.clear()


def _stop(protocol: dns.DNSDatagramProtocol) -> None:
    port: Any = protocol.transport  # a udp.Port (typed as the abstract transport)
    if port is not None:
        port.stopListening()
