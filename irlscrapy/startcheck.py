"""Every setting checked before the crawl starts: a mistake is one line, not a traceback.

:func:`check_settings` runs where the crawl is built (the add-on's ``update_settings``,
and the IRL scheduler's ``from_crawler`` for a project that sets ``SCHEDULER`` without
the add-on), before any component reads a setting or writes a file:

- every ``IRL_*`` name is one irlscrapy reads (a typo gets "did you mean ...?"), and
  every value is of its declared type and range (:func:`irlscrapy.defaults.check_values`);
- every directory the crawl writes to (``JOBDIR``, ``IRL_STATE_DIR``, ``IRL_WARC_DIR``,
  ``IRL_REPORT_DIR``) is a directory, or can be made, and this user may write there.
  Nothing is written but ``JOBDIR`` itself, made here as Scrapy makes it (a moment
  later, and with a traceback when it cannot);
- for the add-on, a Twisted reactor is enabled (its download handler, DNS resolver and
  WARC capture are Twisted code).

A refusal is a :class:`~irlscrapy.exceptions.ConfigurationError` whose message names
each setting as the user wrote it (``IRL_HOST_DELAY=-1: must be 0 or more ...``); it is
logged once as one ERROR line and the knock-on errors of the crawl it stops are kept
out of the log (:func:`irlscrapy.runtime.openfailure.report_open_failure`). ``scrapy crawl``
exits 1. Once the settings pass, an irlscrapy error that a component raises while
Scrapy builds the crawl is said in one line too
(:func:`irlscrapy.runtime.openfailure.report_failed_start`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from scrapy.utils.job import job_dir

from irlscrapy import defaults
from irlscrapy.exceptions import ConfigurationError
from irlscrapy.runtime.openfailure import report_failed_start, report_open_failure

#: The settings that name a directory the crawl writes to.
DIRECTORIES = ("JOBDIR", "IRL_STATE_DIR", "IRL_WARC_DIR", "IRL_REPORT_DIR")


def check_settings(settings: Any, stats: Any = None, *, needs_reactor: bool = False) -> None:
    """Refuse the crawl's settings if any is wrong: one line naming every mistake.
    ``needs_reactor``: refuse Scrapy's reactorless mode too (the add-on's components)."""
    checks = [defaults.check_names, defaults.check_values, check_directories]
    if needs_reactor:
        checks.append(check_reactor)
    problems = []
    for check in checks:
        try:
            check(settings)
        except ConfigurationError as exc:
            problems.append(str(exc))
    if problems:
        refused = ConfigurationError("; ".join(problems))
        report_open_failure(refused, None, stats)
        raise refused
    report_failed_start()


def check_reactor(settings: Any) -> None:
    if not settings.getbool("TWISTED_REACTOR_ENABLED", True):
        raise ConfigurationError(
            "TWISTED_REACTOR_ENABLED=False: irlscrapy needs a Twisted reactor (its download "
            "handler, DNS resolver and WARC capture are Twisted code). Remove "
            "TWISTED_REACTOR_ENABLED = False from the settings, or irlscrapy.Addon from ADDONS"
        )


def check_directories(settings: Any) -> None:
    """Refuse a directory setting the crawl could not write to."""
    problems = []
    for name in DIRECTORIES:
        value = settings.get(name)
        if value:
            problem = unwritable(Path(value))
            if problem is not None:
                problems.append(
                    f"{name}={value}: {problem}; give a directory this user may write to "
                    "(it is made if missing)"
                )
    if not problems:
        try:
            job_dir(settings)  # Scrapy makes JOBDIR here; it would next, with a traceback
        except OSError as exc:
            problems.append(
                f"JOBDIR={settings.get('JOBDIR')}: cannot be made ({exc.strerror}: "
                f"{exc.filename}); give a directory this user may write to"
            )
    if problems:
        raise ConfigurationError("; ".join(problems))


def unwritable(path: Path) -> str | None:
    """Why a crawl could not keep files in ``path`` (made if missing), or None."""
    if path.exists() and not path.is_dir():
        return "it is a file, not a directory"
    existing = path
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        where = "it" if existing == path else str(existing)
        return f"{where} cannot be written to (a read-only file system, or no permission)"
    return None
