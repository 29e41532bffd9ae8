"""The pace rule: which settings set a crawl's per-host and per-IP delays.

The per-host delay tau_h (the wait between the end of one request to a host and the
start of the next) comes from the first of these that applies:

1. ``IRL_HOST_DELAY``, when the user sets it (settings/broad.py, a broad crawl): STAR
   scales it down for well-linked domains, to ``IRL_HOST_DELAY_MIN``. A project's
   ``DOWNLOAD_DELAY`` still applies in Scrapy's downloader, between the starts of a
   host's requests, as in stock Scrapy: no host is asked faster than either says.
2. The project's own pace: ``DOWNLOAD_DELAY`` or ``CONCURRENT_REQUESTS_PER_DOMAIN`` set
   above Scrapy's default priority (in settings.py, as ``scrapy startproject`` writes
   both, a spider's ``custom_settings`` or ``download_delay``, another add-on, ``-s``):
   tau_h is ``DOWNLOAD_DELAY``, each wait drawn as Scrapy draws it (``DOWNLOAD_DELAY *
   (1 + uniform(-j, j))``, j the jitter: ``DOWNLOAD_DELAY_JITTER``, or 0.5 with the
   deprecated ``RANDOMIZE_DOWNLOAD_DELAY`` on and 0 with it off, which wins when set at a
   higher priority, as in Scrapy's downloader), and STAR never shortens it
   (``IRL_HOST_DELAY_MIN``, unset, is the delay itself). The workbench is then the one
   pacer: the scheduler switches the downloader's own delay off
   (:func:`irlscrapy.runtime.internals.switch_off_downloader_delay`), or each host would wait
   twice.
3. Neither: ``IRL_HOST_DELAY``'s default (irlscrapy.defaults), a pace for a focused
   crawl of a few sites.

``CONCURRENT_REQUESTS_PER_DOMAIN`` counts as the project setting its pace (alone, with
Scrapy's ``DOWNLOAD_DELAY`` 0: no delay), but the workbench keeps one request in flight
per host whatever it says. A value of 1 (the template's) is therefore kept exactly; with
more, Scrapy would overlap a host's requests only while a download lasts longer than the
delay (or with no delay), and the workbench fetches them one after another.

The floors and the IP delay, when the user leaves them unset, follow from tau_h:
``IRL_HOST_DELAY_MIN`` is the smaller of its default and half of tau_h (so STAR may at
most halve a short delay; case 2: tau_h itself); ``IRL_IP_DELAY`` the smaller of its
default and the shortest wait tau_h allows (``tau_h * (1 - j)``), and
``IRL_IP_DELAY_MIN`` the smaller of its default and the shortest wait at the floor of
tau_h, so the IP delay never slows a site alone on its IP below its host's pace. Every
derived value is also kept under the delay it floors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scrapy.settings import SETTINGS_PRIORITIES

from irlscrapy import defaults
from irlscrapy.exceptions import ConfigurationError

#: Where tau_h comes from (:attr:`Pace.source`).
USER = "IRL_HOST_DELAY"
PROJECT = "DOWNLOAD_DELAY"
DEFAULT = "default"
#: The Scrapy settings by which a project sets its own per-host pace.
PROJECT_PACE_SETTINGS = ("DOWNLOAD_DELAY", "CONCURRENT_REQUESTS_PER_DOMAIN")


@dataclass(frozen=True)
class Pace:
    host_delay: float  # tau_h
    host_delay_min: float
    ip_delay: float  # tau_s
    ip_delay_min: float
    jitter: float  # j: each host wait is tau_h * (1 + uniform(-j, j)); 0: exact
    source: str  # USER, PROJECT or DEFAULT

    @property
    def paces_download_delay(self) -> bool:
        """Is the project's DOWNLOAD_DELAY kept by the workbench (so the downloader's
        own delay must be off)?"""
        return self.source == PROJECT

    def __str__(self) -> str:
        """One line for the log: the delays in force and where they came from."""
        origin = {USER: "IRL_HOST_DELAY", PROJECT: "the project's DOWNLOAD_DELAY"}
        line = (
            f"politeness: {self.host_delay:g} s between two requests to a host (from "
            f"{origin.get(self.source, 'the default for a focused crawl')}"
        )
        if self.jitter and self.host_delay:
            low, high = (self.host_delay * (1 + j) for j in (-self.jitter, self.jitter))
            line += f", each wait {max(0.0, low):g} to {high:g} s"
        if self.host_delay_min < self.host_delay:
            line += f", down to {self.host_delay_min:g} s for well-linked domains"
        return line + f"), {self.ip_delay:g} s to an IP"


def is_set(settings: Any, name: str) -> bool:
    """Did the user (or a project, spider, add-on or command line) set ``name``, rather
    than Scrapy's defaults? An ``IRL_*`` setting is set wherever it is present, at any
    priority: irlscrapy's defaults live in :mod:`irlscrapy.defaults`, never in Scrapy's
    settings, so whatever put it there chose it (a harness that writes into Scrapy's
    default settings module, say)."""
    priority = settings.getpriority(name)
    if priority is None:
        return False
    return name.startswith("IRL_") or priority > SETTINGS_PRIORITIES["default"]


def scrapy_jitter(settings: Any) -> float:
    """The jitter of Scrapy's downloader delays: ``DOWNLOAD_DELAY_JITTER``, unless the
    deprecated ``RANDOMIZE_DOWNLOAD_DELAY`` is set at a higher priority (then 0.5 or 0).
    (Scrapy's own ``_default_jitter`` also warns of the deprecation; the downloader does.)"""
    randomize = settings.getpriority("RANDOMIZE_DOWNLOAD_DELAY") or 0
    jitter = settings.getpriority("DOWNLOAD_DELAY_JITTER") or 0
    if randomize > max(SETTINGS_PRIORITIES["default"], jitter):
        return 0.5 if settings.getbool("RANDOMIZE_DOWNLOAD_DELAY") else 0.0
    return _number(settings, "DOWNLOAD_DELAY_JITTER")


def _number(settings: Any, name: str) -> float:
    """Scrapy's setting ``name``, a number of 0 or more."""
    try:
        value = settings.getfloat(name)
    except ValueError:
        raise ConfigurationError(f"{name}={settings.get(name)!r} is not a number") from None
    if value < 0:
        raise ConfigurationError(f"{name}={value:g}: it must be 0 or more")
    return value


def pace_of(settings: Any) -> Pace:
    """The crawl's delays, by the rule of this module's docstring."""
    jitter = 0.0
    if is_set(settings, "IRL_HOST_DELAY"):
        source, host_delay = USER, defaults.get(settings, "IRL_HOST_DELAY")
    elif any(is_set(settings, name) for name in PROJECT_PACE_SETTINGS):
        source, host_delay = PROJECT, _number(settings, "DOWNLOAD_DELAY")
        jitter = scrapy_jitter(settings)
    else:
        source, host_delay = DEFAULT, defaults.get(settings, "IRL_HOST_DELAY")
    if is_set(settings, "IRL_HOST_DELAY_MIN"):
        host_delay_min = defaults.get(settings, "IRL_HOST_DELAY_MIN")
    elif source == PROJECT:
        host_delay_min = host_delay
    else:
        host_delay_min = min(defaults.get(settings, "IRL_HOST_DELAY_MIN"), host_delay / 2)
    shortest = max(0.0, 1 - jitter)  # of a host's waits, as a fraction of its delay
    ip_delay = _derived(settings, "IRL_IP_DELAY", host_delay * shortest)
    ip_delay_min = _derived(settings, "IRL_IP_DELAY_MIN", min(host_delay_min * shortest, ip_delay))
    return Pace(host_delay, host_delay_min, ip_delay, ip_delay_min, jitter, source)


def _derived(settings: Any, name: str, cap: float) -> float:
    """``name`` as the user set it; unset, the smaller of its default and ``cap``."""
    value = defaults.get(settings, name)
    return value if is_set(settings, name) else min(value, cap)
