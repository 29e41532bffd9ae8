"""The real web's sites: which Debian package serves which host, on which address, with
which robots.txt.

Each site is the HTML documentation a Debian package installs, served under the
project's own host name and URL prefix (``http://www.postgresql.org/docs/15/``), so the
pages' absolute links to their own site (``https://www.sqlite.org/lang.html``) point back
into this web. Links to any other name (github.com, en.wikipedia.org) fail to resolve:
the namespace's resolver knows only these hosts.

What the sites are there to show:

- *Shared IPs*: flask, requests and www.debian.org share 127.0.5.1 (as sites behind one
  hosting provider do); every other host has an address of its own.
- *robots.txt variants*: requests.readthedocs.io forbids the crawler's user agent (both
  crawlers run as :data:`USER_AGENT`, whose product token is ``irlscrapy``); www.sqlite.org
  has none (404: all allowed); www.postgresql.org, the largest site (about 1,200 pages),
  asks for ``Crawl-delay: 0.1``; the others disallow part of their site for every agent.
- *Refused https*: nothing listens on port 443, and most sites' pages link to ``https://``
  URLs of their own host (sqlite's docs do on nearly every page). A site whose
  package has no such link gets one injected (:attr:`Site.inject_https`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from protego import Protego

#: The project's user agent (settings/broad.py), given to both crawlers so
#: that they obey the same robots.txt groups.
USER_AGENT = "irlscrapy/0.1 (broad crawl; Scrapy)"
#: The robots.txt product token that names this crawler.
AGENT_TOKEN = "irlscrapy"
#: Crawl-delay that www.postgresql.org's robots.txt asks for (seconds).
CRAWL_DELAY = 0.1


@dataclass(frozen=True)
class Site:
    """One host of the real web.

    ``docs`` is the directory ``package`` installs, served at ``prefix`` (``/`` serves it
    at the root). ``robots`` is the body of /robots.txt; ``None`` means the host has no
    robots.txt (nginx answers 404). ``seed`` is the path the crawl starts from.
    ``inject_https``: nginx appends to every HTML page of this host a link to the same
    page over https (``sub_filter``), because the package's own pages have no such link.
    """

    host: str
    ip: str
    package: str
    docs: str
    prefix: str
    seed: str
    robots: str | None
    inject_https: bool = False

    @property
    def seed_url(self) -> str:
        return f"http://{self.host}{self.seed}"

    @property
    def seed_file(self) -> Path:
        """The file the seed URL serves (the package's, so it says it is installed)."""
        assert self.seed.startswith(self.prefix), (self.seed, self.prefix)
        name = self.seed[len(self.prefix) :]
        return Path(self.docs) / (name if name and not name.endswith("/") else f"{name}index.html")


SHARED_IP = "127.0.5.1"

SITES: tuple[Site, ...] = (
    Site(
        host="www.postgresql.org",
        ip="127.0.1.1",
        package="postgresql-doc-15",
        docs="/usr/share/doc/postgresql-doc-15/html",
        prefix="/docs/15/",
        seed="/docs/15/index.html",
        robots=f"User-agent: *\nCrawl-delay: {CRAWL_DELAY}\nDisallow: /search/\n",
    ),
    Site(
        host="docs.python.org",
        ip="127.0.2.1",
        package="python3.11-doc",
        docs="/usr/share/doc/python3.11/html",
        prefix="/3.11/",
        seed="/3.11/",
        robots="User-agent: *\nDisallow: /3.11/_sources/\nDisallow: /3.11/genindex-\n",
    ),
    Site(
        host="www.sqlite.org",
        ip="127.0.3.1",
        package="sqlite3-doc",
        docs="/usr/share/doc/sqlite3",
        prefix="/",
        seed="/index.html",
        robots=None,
    ),
    Site(
        host="git-scm.com",
        ip="127.0.4.1",
        package="git-doc",
        docs="/usr/share/doc/git-doc",
        prefix="/docs/",
        seed="/docs/index.html",
        robots="User-agent: *\nDisallow: /docs/howto/\n",
    ),
    Site(
        host="flask.palletsprojects.com",
        ip=SHARED_IP,
        package="python-flask-doc",
        docs="/usr/share/doc/python-flask-doc/html",
        prefix="/en/2.2.x/",
        seed="/en/2.2.x/",
        robots="User-agent: *\nDisallow: /en/2.2.x/_sources/\n",
        inject_https=True,
    ),
    Site(
        host="requests.readthedocs.io",
        ip=SHARED_IP,
        package="python-requests-doc",
        docs="/usr/share/doc/python-requests-doc/html",
        prefix="/en/latest/",
        seed="/en/latest/",
        robots=f"User-agent: {AGENT_TOKEN}\nDisallow: /\n\nUser-agent: *\nDisallow:\n",
    ),
    Site(
        host="www.debian.org",
        ip=SHARED_IP,
        package="debian-policy",
        docs="/usr/share/doc/debian-policy",
        prefix="/doc/debian-policy/",
        seed="/doc/debian-policy/policy.html/",
        robots="User-agent: *\nDisallow: /doc/debian-policy/fhs/\n",
    ),
)
BY_HOST = {site.host: site for site in SITES}


def host_delay(host: str, tau_h: float) -> float:
    """The least gap a polite crawler with host delay ``tau_h`` leaves between two
    requests to ``host``: the Crawl-delay its robots.txt asks of :data:`USER_AGENT`,
    when that is larger."""
    site = BY_HOST.get(host)
    if site is None or site.robots is None:
        return tau_h
    return max(tau_h, Protego.parse(site.robots).crawl_delay(USER_AGENT) or 0.0)


def ip_of(host: str) -> str:
    return BY_HOST[host].ip
