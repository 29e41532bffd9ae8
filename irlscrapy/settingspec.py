"""The declaration of one ``IRL_*`` setting (the settings themselves: irlscrapy.defaults)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
