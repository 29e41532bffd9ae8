"""The TLS side of the in-vitro web's https origins: a certificate per host.

Crawlers reach an https URL through the proxy with ``CONNECT host:443``; for a host that
serves https the proxy answers 200 and speaks TLS on the same connection, presenting a
certificate for that host name (a subjectAltName, so a client that checks the name, as
Scrapy does before it logs a warning, finds it right; the issuer is the certificate
itself, which crawlers do not verify by default). One key signs them all; it is made on
first use in the server process, so a web without https origins never pays for it, and
it is no part of the web's content, which stays a function of (seed, host, path).
"""

from __future__ import annotations

import datetime
from functools import cache, lru_cache
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

#: Certificates kept ready (one per host name met lately).
CACHED_HOSTS = 4096
_VALID_FROM = datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC)
_VALID_TO = datetime.datetime(2100, 1, 1, tzinfo=datetime.UTC)


@cache
def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@lru_cache(maxsize=CACHED_HOSTS)
def server_options(host: str) -> Any:
    """Twisted ``CertificateOptions`` for the server end of a tunnel to ``host``
    (untyped: mypy cannot read Twisted's zope interfaces without a plugin)."""
    from twisted.internet import ssl

    key = _key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_VALID_FROM)
        .not_valid_after(_VALID_TO)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ) + cert.public_bytes(serialization.Encoding.PEM)
    return ssl.PrivateCertificate.loadPEM(pem).options()
