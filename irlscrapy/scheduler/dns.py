"""The resolver's settings path, kept for projects that name it:
``TWISTED_DNS_RESOLVER = "irlscrapy.scheduler.dns.IRLResolver"``. The DNS cache and
IRLResolver live in :mod:`irlscrapy.scheduler.hosts.dns`, the lookups the cache makes in
:mod:`irlscrapy.scheduler.hosts.resolver`."""

from irlscrapy.scheduler.hosts.dns import IRLResolver

__all__ = ["IRLResolver"]
