"""The declaration of one ``IRL_*`` setting, and how its value is read and checked (the
settings themselves: irlscrapy.defaults)."""

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
    #: the smallest value an int or float setting takes (None: any, negative included)
    minimum: float | None = 0
    #: the largest (None: no limit)
    maximum: float | None = None
    #: the values a str setting takes (empty: any)
    choices: tuple[str, ...] = ()
    #: its name before it was renamed, read when only it is set ("": never renamed)
    formerly: str = ""

    def written_as(self, settings: Any) -> str:
        """The name the value in ``settings`` is under: this one, or its former one when
        only that is set."""
        if self.formerly and self.name not in settings and self.formerly in settings:
            return self.formerly
        return self.name

    def read(self, settings: Any) -> Any:
        """The value in Scrapy ``settings``, by the typed getter, else the default (so an
        explicit 0 wins); a value the getter cannot read is a ConfigurationError."""
        getter = {
            "int": settings.getint,
            "float": settings.getfloat,
            "bool": settings.getbool,
            "list": settings.getlist,
            "str": settings.get,
        }[self.type]
        name = self.written_as(settings)
        try:
            return getter(name, self.default)
        except ValueError as exc:
            what = "a number" if self.type in ("int", "float") else f"a valid {self.type}"
            raise ConfigurationError(
                f"{name}={settings.get(name)!r} is not {what} ({self.type}, "
                f"{self.unit}; the default is {self.default!r}): {exc}"
            ) from None

    def problem(self, settings: Any) -> str | None:
        """What is wrong with the value in ``settings``, as ``NAME=value: must ...``
        (with the unit and the default), or None."""
        name = self.written_as(settings)
        written = f"{name}={settings.get(name)}"
        hint = f"({self.unit}; the default is {self.default!r})"
        try:
            value = self.read(settings)
        except (ConfigurationError, TypeError):  # (TypeError: None, a dict, ... for a number)
            return f"{written}: must be {_EXPECTED[self.type]} {hint}"
        if self.type in ("int", "float"):
            if self.minimum is not None and value < self.minimum:
                return f"{written}: must be {self.minimum:g} or more {hint}"
            if self.maximum is not None and value > self.maximum:
                return f"{written}: must be {self.maximum:g} or less {hint}"
        if self.choices and value not in self.choices:
            return f"{written}: must be one of {', '.join(self.choices)} {hint}"
        return None


_EXPECTED = {
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false",
    "list": "a list",
    "str": "a string",
}
