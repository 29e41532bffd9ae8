"""Every ``IRL_*`` setting: its default, type, unit and meaning, in one table
(:data:`SETTINGS`): a crawl's (:mod:`irlscrapy.defaults.crawl`) and the multi-agent
mode's (:mod:`irlscrapy.defaults.agents`), each declared as a
:class:`irlscrapy.defaults.spec.Setting`.

Components read them with :func:`get`, which applies the typed getter and this default,
so a value of 0 set by the user always wins over the default (never ``if value:``).
The manual's settings table (docs/settings.md) is checked against :data:`SETTINGS` by the
test suite.

Names change between releases. A setting *renamed* (:data:`RENAMED`) is still read
under its old name for one release, with a warning that names the new one; a setting
*retired* (:data:`RETIRED`) is refused, saying what replaced it.
"""

from __future__ import annotations

import dataclasses
import difflib
import warnings
import weakref
from typing import Any

from irlscrapy.defaults.agents import MULTI_AGENT_SETTINGS
from irlscrapy.defaults.crawl import CRAWL_SETTINGS
from irlscrapy.defaults.spec import Setting
from irlscrapy.exceptions import ConfigurationError

#: Settings renamed in 0.2 (IRL_<COMPONENT>_<ASPECT>), old name -> new; the old names
#: are read until 0.3.
RENAMED: dict[str, str] = {
    "IRL_BUDGETS": "IRL_BUDGET_MODE",
    "IRL_BEAST_BUDGET": "IRL_BUDGET_DEFAULT",
    "IRL_STAR_BUDGET_FUNCTION": "IRL_BUDGET_FUNCTION",
    "IRL_STAR_MAX_BUDGET": "IRL_BUDGET_MAX",
    "IRL_DRUM_MEMORY": "IRL_URLSEEN_MEMORY",
    "IRL_BACKOFF_BASE": "IRL_HEALTH_BACKOFF_BASE",
    "IRL_BACKOFF_MAX": "IRL_HEALTH_BACKOFF_MAX",
    "IRL_HOST_MAX_FAILURES": "IRL_HEALTH_MAX_FAILURES",
    "IRL_HOST_RETIRE_DELAY": "IRL_HEALTH_RETIRE_DELAY",
    "IRL_GIVE_UP_AFTER": "IRL_CRAWL_GIVE_UP_AFTER",
    "IRL_CONTINUOUS": "IRL_CRAWL_CONTINUOUS",
    "IRL_MAX_PATH_DEPTH": "IRL_TRAPS_MAX_PATH_DEPTH",
    "IRL_MAX_REPEATED_SEGMENTS": "IRL_TRAPS_MAX_REPEATED_SEGMENTS",
    "IRL_REACTOR_LAG": "IRL_REACTOR_LAG_STATS",
    "IRL_CONTENT_DEDUP": "IRL_CONTENTSEEN_ENABLED",
    "IRL_AGENTS": "IRL_AGENT_MEMBERS",
}
_FORMERLY = {new: old for old, new in RENAMED.items()}
SETTINGS: tuple[Setting, ...] = tuple(
    dataclasses.replace(s, formerly=_FORMERLY.get(s.name, ""))
    for s in (*CRAWL_SETTINGS, *MULTI_AGENT_SETTINGS)
)

BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}
#: Settings an earlier irlscrapy read, and what replaced them.
RETIRED: dict[str, str] = {
    "IRL_STAR_ENABLED": "IRL_BUDGET_MODE ('star', 'constant' or 'off'; STAR always counts)",
}


def check_names(settings: Any) -> None:
    """Refuse an ``IRL_*`` name that is no setting (a typo, or a retired one) with what
    was meant: a misspelt setting would otherwise be silently ignored. A renamed one is
    read, with a warning (ScrapyDeprecationWarning, which Scrapy logs) naming the new."""
    from scrapy.exceptions import ScrapyDeprecationWarning  # (defaults imports no Scrapy)

    problems = []
    first_check = _first_check(settings)
    for name in sorted(n for n in dict(settings) if n.startswith("IRL_") and n not in BY_NAME):
        if name in RENAMED:
            if not first_check:
                continue
            new = RENAMED[name]
            also = f" ({new} is set too, and wins)" if new in settings else ""
            warnings.warn(
                f"{name} is renamed {new}: the old name is read until irlscrapy 0.3{also}",
                ScrapyDeprecationWarning,
                stacklevel=2,
            )
        elif name in RETIRED:
            problems.append(f"{name} is no longer read: use {RETIRED[name]}")
        else:
            close = difflib.get_close_matches(name, BY_NAME, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            problems.append(f"{name} is not an irlscrapy setting{hint}")
    if problems:
        raise ConfigurationError("; ".join(problems))


#: The settings already checked: a crawl checks its settings twice (the add-on's
#: update_settings, then the scheduler's from_crawler), and warns of a rename once.
_CHECKED: list[weakref.ref[Any]] = []


def _first_check(settings: Any) -> bool:
    """Is this the first check of ``settings`` (the same object, still alive)?"""
    _CHECKED[:] = [ref for ref in _CHECKED if ref() is not None]
    if any(ref() is settings for ref in _CHECKED):
        return False
    _CHECKED.append(weakref.ref(settings))
    return True


def check_values(settings: Any) -> None:
    """Refuse every ``IRL_*`` value set that its declaration does not take (of another
    type, out of range, not one of its choices), naming each as the user wrote it."""
    problems = [
        problem
        for name in sorted(n for n in dict(settings) if n in BY_NAME or n in RENAMED)
        if (problem := BY_NAME[RENAMED.get(name, name)].problem(settings)) is not None
    ]
    if problems:
        raise ConfigurationError("; ".join(problems))


def get(settings: Any, name: str) -> Any:
    """Read an IRL_* setting from Scrapy settings with its typed getter and default."""
    try:
        spec = BY_NAME[name]
    except KeyError:
        raise ConfigurationError(f"{name} is not an irlscrapy setting") from None
    return spec.read(settings)
