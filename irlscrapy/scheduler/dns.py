"""The resolver's settings path, kept for projects that name it:
``TWISTED_DNS_RESOLVER = "irlscrapy.scheduler.dns.IRLResolver"``. The DNS cache and
resolver live in :mod:`irlscrapy.scheduler.hosts.dns`."""

from irlscrapy.scheduler.hosts.dns import IRLResolver

__all__ = ["IRLResolver"]
