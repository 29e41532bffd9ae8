"""The address guard: a broad crawl never connects to a host that resolves to an
address it must not reach (docs/architecture.md, section 2).

A broad crawler follows links chosen by strangers; a page that links to
``http://169.254.169.254/`` or to a name resolving to ``10.0.0.5`` would otherwise make
the crawler fetch from the cloud's metadata service or the operator's own network
(server-side request forgery). The check is made on the *resolved* address, the one the
downloader will connect to (the IRL resolver answers from the same DNS cache), when a
host joins the workbench; a redirect to another host is a URL of that host and is
checked the same way.

Blocked by default, IPv4 and IPv6 (an IPv4-mapped or 6to4 IPv6 address is judged as
the IPv4 address inside it), every address that is not globally routable:

    loopback        127.0.0.0/8, ::1
    private         10/8, 172.16/12, 192.168/16 (RFC 1918), fc00::/7
    link-local      169.254.0.0/16 (cloud metadata: 169.254.169.254), fe80::/10
    CGNAT           100.64.0.0/10 (RFC 6598)
    multicast       224.0.0.0/4, ff00::/8
    reserved        0.0.0.0/8, 240.0.0.0/4, 255.255.255.255, ::, and every other range
                    Python's ``ipaddress`` does not call global (documentation,
                    benchmarking, NAT64 ...)
    cloud metadata  169.254.169.254 (link-local), fd00:ec2::254 (in fc00::/7)

``IRL_ALLOW_PRIVATE_ADDRESSES`` opens the guard: ``true`` allows every address; a
comma-separated list of networks (``127.0.0.0/8,10.1.0.0/16``) allows those only. The
in-vitro web's preset allows 127.0.0.0/8 (its hosts live there) and nothing else.

Each refusal is counted in ``irl/guard/refused_lookups`` (an event: a host whose URLs
keep coming is resolved and refused again, each time with the URLs waiting for it), and
the first is logged
(:mod:`irlscrapy.runtime.troubles`); the frontier counts its URLs (``irl/guard/refused_urls``).
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable
from typing import Any

from irlscrapy import defaults
from irlscrapy.exceptions import ConfigurationError
from irlscrapy.runtime.troubles import tally

logger = logging.getLogger(__name__)

#: How the reason of a URL refused by the address guard begins.
GUARD_REFUSAL = "address guard:"

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_CGNAT = ipaddress.ip_network("100.64.0.0/10")


def _judged(address: Address) -> Address:
    """The address a connection really reaches: the IPv4 address inside an IPv4-mapped
    (``::ffff:a.b.c.d``) or 6to4 (``2002:aabb:ccdd::/48``) IPv6 address, else itself."""
    if isinstance(address, ipaddress.IPv6Address):
        return address.ipv4_mapped or address.sixtofour or address
    return address


def blocked_kind(address: Address) -> str | None:
    """Why ``address`` is blocked by default (``"loopback"``, ``"private"``, ...), or
    None when it is a public address."""
    address = _judged(address)
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if address.version == 4 and address in _CGNAT:
        return "cgnat"
    if address.is_unspecified or address.is_reserved:
        return "reserved"
    if address.is_private:
        return "private"
    if not address.is_global:
        return "reserved"
    return None


class AddressGuard:
    """Decides whether the crawl may connect to an address.

    ``allow``: True allows everything (the guard is off); otherwise the networks whose
    addresses are allowed even though they are blocked by default.
    """

    def __init__(self, allow: bool | Iterable[str] = ()) -> None:
        self.off = allow is True
        self.allowed: tuple[Network, ...] = ()
        if not isinstance(allow, bool):
            self.allowed = tuple(_network(text) for text in allow)
        #: the first host refused, as (host, ip, kind): what a crawl that could fetch
        #: nothing says (irlscrapy.scheduler.emptycrawl)
        self.first_refused: tuple[str, str, str] | None = None

    @classmethod
    def from_settings(cls, settings: Any) -> AddressGuard:
        return cls.parse(defaults.get(settings, "IRL_ALLOW_PRIVATE_ADDRESSES"))

    @classmethod
    def parse(cls, value: object) -> AddressGuard:
        """From ``IRL_ALLOW_PRIVATE_ADDRESSES``'s value: a bool, or networks as a list or
        a comma-separated string (``"true"``/``"false"`` as strings too, from ``-s``)."""
        if isinstance(value, bool):
            return cls(value)
        if isinstance(value, str):
            text = value.strip()
            if text.lower() in ("1", "true", "yes"):
                return cls(True)
            if text.lower() in ("", "0", "false", "no"):
                return cls(False)
            return cls(part.strip() for part in text.split(",") if part.strip())
        if isinstance(value, list | tuple):
            return cls(str(part) for part in value)
        raise ConfigurationError(
            f"IRL_ALLOW_PRIVATE_ADDRESSES={value!r}: expected true/false or a list of "
            "networks such as '127.0.0.0/8'"
        )

    def refuses(self, ip: str) -> str | None:
        """Why the crawl must not connect to ``ip`` (a kind, see :func:`blocked_kind`),
        or None when it may. A string that is no address is refused as ``"invalid"``."""
        if self.off:
            return None
        try:
            address = ipaddress.ip_address(ip)
        except ValueError:
            return "invalid"
        kind = blocked_kind(address)
        if kind is None:
            return None
        address = _judged(address)
        if any(address in net for net in self.allowed if net.version == address.version):
            return None
        return kind

    def refusal(self, host: str, ip: str, stats: Any) -> str | None:
        """Why the crawl must not connect to ``host``, resolved to ``ip`` (the reason its
        URLs are refused with), or None when it may. A refusal is counted in ``stats``
        (``irl/guard/refused_lookups``); the first is logged."""
        kind = self.refuses(ip)
        if kind is None:
            return None
        why = f"{GUARD_REFUSAL} {host} resolves to {ip}, a {kind} address"
        if self.first_refused is None:
            self.first_refused = (host, ip, kind)
        tally(logger, stats, "irl/guard/refused_lookups", "%s (IRL_ALLOW_PRIVATE_ADDRESSES)", why)
        return why

    @staticmethod
    def network_of(ip: str) -> str:
        """The network to allow for ``ip`` (IRL_ALLOW_PRIVATE_ADDRESSES): the
        well-known block it lies in (127.0.0.0/8, 10.0.0.0/8, ...), else the address."""
        address = _judged(ipaddress.ip_address(ip))
        for network in _WELL_KNOWN:
            if network.version == address.version and address in network:
                return str(network)
        return str(ipaddress.ip_network(address))


#: The blocks :meth:`AddressGuard.network_of` suggests to allow, one per kind.
_WELL_KNOWN = tuple(
    ipaddress.ip_network(text)
    for text in (
        "127.0.0.0/8",
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "100.64.0.0/10",
        "169.254.0.0/16",
        "::1/128",
        "fc00::/7",
        "fe80::/10",
    )
)


def _network(text: str) -> Network:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError as exc:
        raise ConfigurationError(
            f"IRL_ALLOW_PRIVATE_ADDRESSES={text}: not a network ({exc}); give true, false or "
            "networks such as 127.0.0.0/8,10.0.0.0/8"
        ) from None
