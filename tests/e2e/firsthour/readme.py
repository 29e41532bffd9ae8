"""The README's own snippets, read at test time: the first-hour tests run what a user
pastes, never a copy of it (a README edit that breaks a snippet breaks a test)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[3] / "README.md"
_HEADING = re.compile(r"^(#+) (.*)$")
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def section(heading: str) -> str:
    """The README's text under the heading whose title starts with ``heading``, up to
    the next heading of the same or a higher level (its subsections included)."""
    lines = README.read_text(encoding="utf-8").splitlines(keepends=True)
    start = level = None
    for number, line in enumerate(lines):
        match = _HEADING.match(line.rstrip("\n"))
        if not match:
            continue
        if start is None and match[2].startswith(heading):
            start, level = number + 1, len(match[1])
        elif start is not None and level is not None and len(match[1]) <= level:
            return "".join(lines[start:number])
    if start is None:
        raise LookupError(f"README.md has no heading starting {heading!r}")
    return "".join(lines[start:])


def code_blocks(heading: str, language: str | None = None) -> list[str]:
    """The fenced code blocks of the README's section ``heading`` (of ``language`` when
    given: ``python``, ``sh``), in order."""
    return [
        body
        for lang, body in _FENCE.findall(section(heading))
        if language is None or lang == language
    ]
