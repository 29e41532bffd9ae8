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
