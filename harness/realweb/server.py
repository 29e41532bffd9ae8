"""The real web's files: nginx's configuration, robots.txt, and the namespace's name service.

:func:`build` writes, under one directory (the *web directory*)::

    robots/<host>.txt     each site's robots.txt (none for a site without one)
    etc/hosts             every site's name -> its 127.0.x.y address, nothing else
    etc/nsswitch.conf     the machine's, with "hosts: files": any other name fails at
                          once with EAI_NONAME (as a name that does not exist would)
    seeds.txt             the seed URLs, one a line (``scrapy crawl broad -a seeds=FILE``)

and :meth:`RealWeb.nginx_conf` writes each run's ``nginx.conf``, which logs to the run's
own directory. The pages themselves are never copied: nginx serves each package's
directory under /usr/share/doc in place (``alias``). Only inside the test's namespace do
the names resolve (:mod:`harness.realweb.netns` bind-mounts the two files over
/etc/hosts and /etc/nsswitch.conf there); the machine's own files are never touched.

The access log (format ``realweb``, one JSON object a line) has what the audit needs:
``msec`` (when the request ended, ms), ``request_time`` (its duration, so it started at
``msec - request_time``), host, server address, method, raw URI, status, the
Content-Length sent, the body bytes sent, ``complete`` ("OK" when the whole response
went out) and the user agent.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .sites import SITES, Site

#: Where Debian's nginx installs its binary (not on a non-root user's PATH).
NGINX_PATHS = ("/usr/sbin/nginx",)
MIME_TYPES = Path("/etc/nginx/mime.types")
LOG_FORMAT = (
    '{"msec":$msec,"request_time":$request_time,"host":"$host","ip":"$server_addr",'
    '"method":"$request_method","uri":"$request_uri","status":$status,'
    '"length":"$sent_http_content_length","sent":$body_bytes_sent,'
    '"complete":"$request_completion","agent":"$http_user_agent"}'
)
#: The namespaces a run gets (:mod:`harness.realweb.netns`).
NAMESPACES = ("--mount", "--net", "--pid", "--fork", "--kill-child", "--mount-proc")
#: How to get what :func:`missing` lists (for skip messages).
INSTALL_HINT = "sh tests/system-packages.sh (as root) installs them"


def nginx_binary() -> str | None:
    found = shutil.which("nginx")
    return found or next((p for p in NGINX_PATHS if os.access(p, os.X_OK)), None)


def missing(sites: tuple[Site, ...] = SITES) -> list[str]:
    """What keeps this machine from serving the real web (empty: nothing)."""
    reasons = []
    if os.geteuid() != 0:
        reasons.append("not root (a mount and network namespace needs root)")
    packages = [] if nginx_binary() and MIME_TYPES.is_file() else ["nginx"]
    packages += [site.package for site in sites if not site.seed_file.is_file()]
    if packages:
        reasons.append(f"not installed: {', '.join(packages)}")
    if reasons:
        return reasons
    tools = [t for t in ("unshare", "ip", "mount") if shutil.which(t) is None]
    if tools:
        reasons.append(f"no {', '.join(tools)} (packages util-linux, iproute2, mount)")
    else:
        probe = subprocess.run(
            ["unshare", *NAMESPACES, "true"], capture_output=True, text=True, check=False
        )
        if probe.returncode != 0:
            reasons.append(f"unshare cannot make namespaces here: {probe.stderr.strip()}")
    return reasons


@dataclass(frozen=True)
class RealWeb:
    """A built web directory (see the module docstring) and the sites it serves."""

    root: Path
    sites: tuple[Site, ...]

    @property
    def hosts_file(self) -> Path:
        return self.root / "etc" / "hosts"

    @property
    def nsswitch_file(self) -> Path:
        return self.root / "etc" / "nsswitch.conf"

    @property
    def seeds_file(self) -> Path:
        return self.root / "seeds.txt"

    @property
    def addresses(self) -> list[str]:
        """Every address nginx listens on (port 80), each once."""
        return sorted({site.ip for site in self.sites})

    def nginx_conf(self, run: Path) -> Path:
        """Write ``run/nginx.conf``: one server per site on its address, logging to
        ``run/access.log``; return its path."""
        (run / "temp").mkdir(parents=True, exist_ok=True)
        servers = "\n".join(self._server(site) for site in self.sites)
        temp = run / "temp"
        conf = f"""# written by harness/realweb/server.py
# root workers: the robots files live in a directory only root may read
user root;
worker_processes 2;
pid {run / "nginx.pid"};
error_log {run / "error.log"} warn;
events {{ worker_connections 1024; }}
http {{
    include {MIME_TYPES};
    default_type application/octet-stream;
    log_format realweb escape=json '{LOG_FORMAT}';
    access_log {run / "access.log"} realweb;
    sendfile on;
    server_tokens off;
    keepalive_requests 100000;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
{servers}
}}
"""
        path = run / "nginx.conf"
        path.write_text(conf, encoding="utf-8")
        return path

    def _server(self, site: Site) -> str:
        robots = (
            f"alias {self.root / 'robots' / site.host}.txt; default_type text/plain;"
            if site.robots is not None
            else "return 404;"
        )
        docs = site.docs.rstrip("/") + "/"
        inject = ""
        if site.inject_https:
            inject = (
                "sub_filter '</body>' "
                "'<p><a href=\"https://$host$request_uri\">this page over https</a></p></body>'; "
                "sub_filter_once on;"
            )
        rest = "" if site.prefix == "/" else "location / { return 404; }"
        return f"""    server {{
        listen {site.ip}:80;
        server_name {site.host};
        location = /robots.txt {{ {robots} }}
        location {site.prefix} {{ alias {docs}; {inject} }}
        {rest}
    }}"""


def build(root: Path, sites: tuple[Site, ...] = SITES) -> RealWeb:
    """Write the web directory (module docstring) under ``root``."""
    web = RealWeb(root, sites)
    (root / "robots").mkdir(parents=True, exist_ok=True)
    (root / "etc").mkdir(exist_ok=True)
    for site in sites:
        if site.robots is not None:
            (root / "robots" / f"{site.host}.txt").write_text(site.robots, encoding="utf-8")
    hosts = ["127.0.0.1 localhost", "::1 localhost"]
    hosts += [f"{site.ip} {site.host}" for site in sites]
    web.hosts_file.write_text("\n".join(hosts) + "\n", encoding="utf-8")
    web.nsswitch_file.write_text(_nsswitch(Path("/etc/nsswitch.conf")), encoding="utf-8")
    web.seeds_file.write_text("".join(f"{site.seed_url}\n" for site in sites), encoding="utf-8")
    return web


def _nsswitch(machine: Path) -> str:
    """The machine's nsswitch.conf with its hosts line replaced by ``hosts: files``."""
    lines = machine.read_text(encoding="utf-8").splitlines() if machine.exists() else []
    kept = [line for line in lines if not line.strip().startswith("hosts:")]
    return "\n".join([*kept, "hosts: files"]) + "\n"
