"""The TLS side of the in-vitro web's https origins: one self-signed certificate.

Crawlers reach an https URL through the proxy with ``CONNECT host:443``; for a host that
serves https the proxy answers 200 and speaks TLS on the same connection, presenting
this certificate for every host (crawlers do not verify certificates by default: Scrapy
does not). The key is made once per server process on first use, so a web without
https origins never pays for it; it is no part of the web's content, which stays a
function of (seed, host, path).
"""

from __future__ import annotations

import datetime
from functools import cache
from typing import Any

#: The certificate's subject and issuer common name.
COMMON_NAME = "irlscrapy in-vitro web"


@cache
def server_options() -> Any:
    """Twisted ``CertificateOptions`` for the server end of a tunnel (untyped: mypy
    cannot read Twisted's zope interfaces without a plugin)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    from twisted.internet import ssl

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, COMMON_NAME)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC))
        .not_valid_after(datetime.datetime(2100, 1, 1, tzinfo=datetime.UTC))
        .sign(key, hashes.SHA256())
    )
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ) + cert.public_bytes(serialization.Encoding.PEM)
    return ssl.PrivateCertificate.loadPEM(pem).options()
