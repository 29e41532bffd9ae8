"""``Host``: everything the in-vitro web says about one host, derived from its name alone
(:meth:`irlscrapy.invitro.web.InVitroWeb.host` builds it)."""

from __future__ import annotations

from typing import NamedTuple


class Host(NamedTuple):
    """Everything the web says about one host; derived from its name alone."""

    name: str
    pld: str
    pld_id: int  # legitimate PLDs by rank first, then spam farm members
    number: int  # host number inside its PLD; 0 is www
    farm: int  # spam farm number, -1 for a legitimate host
    ip: str
    robots: str  # one of profiles.ROBOTS_VARIANTS
    server: str  # one of profiles.SERVER_KINDS
    dns: str  # one of profiles.DNS_KINDS
    gzip: bool
    chunked: bool
    trap: str  # "" or one of TRAP_KINDS
    style: int  # index into paths.PAGE_STYLES
    pages: int | None  # None: unbounded
    scheme: str  # one of profiles.SCHEME_KINDS
    has_index: bool  # its home page is a huge index

    @property
    def spam(self) -> bool:
        return self.farm >= 0

    @property
    def canonical_scheme(self) -> str:
        """The scheme that serves the host's pages."""
        return "https" if self.scheme == "upgrade" else "http"

    @property
    def origin(self) -> str:
        """``scheme://host`` of the host's pages."""
        return f"{self.canonical_scheme}://{self.name}"

    def serves(self, scheme: str) -> bool:
        """True if a connection on ``scheme`` is answered (with pages or a redirect)."""
        return scheme == "http" or self.scheme != "http"
