"""Every ``IRL_*`` setting: its default, type, unit and meaning. The one place they live.

Components read them with :func:`get`, which applies the typed getter and this default,
so a value of 0 set by the user always wins over the default (never ``if value:``).
The README's settings table is checked against :data:`SETTINGS` by the test suite.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from irlscrapy.exceptions import ConfigurationError


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    type: str  # "int", "float", "bool", "str", "list"
    unit: str
    meaning: str


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "IRL_STATE_DIR",
        "",
        "str",
        "path",
        "directory for irlscrapy's disk state; empty uses JOBDIR, and without JOBDIR a "
        "temporary directory removed when the crawl closes",
    ),
    Setting(
        "IRL_DRUM_MEMORY",
        64 << 20,
        "int",
        "bytes",
        "RAM budget of the URLseen DRUM; its buckets, bucket size and buffers derive from "
        "it (the paper's model, section IV.D)",
    ),
    Setting(
        "IRL_PROGRESS_INTERVAL",
        5.0,
        "float",
        "seconds",
        "how often the progress line is logged; 0 turns the progress extension off",
    ),
    Setting(
        "IRL_LOG_FETCH_ERRORS",
        5,
        "int",
        "log lines per kind",
        "fetch-failure lines (retries given up, robots.txt errors, download errors) logged "
        "per kind before the rest are only counted; negative logs them all",
    ),
    Setting(
        "IRL_DNS_SERVERS",
        "",
        "str",
        "host:port[,host:port...]",
        "nameservers the IRL resolver asks instead of the system resolver; the in-vitro "
        "web sets it to its own DNS server",
    ),
)

BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}


def get(settings: Any, name: str) -> Any:
    """Read an IRL_* setting from Scrapy settings with its typed getter and default."""
    try:
        spec = BY_NAME[name]
    except KeyError:
        raise ConfigurationError(f"{name} is not an irlscrapy setting") from None
    getter = {
        "int": settings.getint,
        "float": settings.getfloat,
        "bool": settings.getbool,
        "list": settings.getlist,
        "str": settings.get,
    }[spec.type]
    try:
        return getter(name, spec.default)
    except ValueError as exc:
        raise ConfigurationError(
            f"{name}={settings.get(name)!r} is not a valid {spec.type} ({spec.unit}): {exc}"
        ) from None
