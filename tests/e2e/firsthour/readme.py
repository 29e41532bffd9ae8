"""The documentation's own snippets, read at test time: the first-hour tests run what a
user pastes, never a copy of it (an edit that breaks a snippet breaks a test).

A section is looked up by its heading in README.md first, then in the manual's pages
(docs/**/*.md, in path order), so a section that moves between them stays tested."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
_HEADING = re.compile(r"^(#+) (.*)$")
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def pages() -> list[Path]:
    """Where sections are looked for, in order: the README, then the manual's pages."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def _section_in(page: Path, heading: str) -> str | None:
    lines = page.read_text(encoding="utf-8").splitlines(keepends=True)
    start = level = None
    fenced = False
    for number, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced  # (a "# comment" line in a code block is no heading)
            continue
        match = None if fenced else _HEADING.match(line.rstrip("\n"))
        if not match:
            continue
        if start is None and match[2].startswith(heading):
            start, level = number + 1, len(match[1])
        elif start is not None and level is not None and len(match[1]) <= level:
            return "".join(lines[start:number])
    return None if start is None else "".join(lines[start:])


def section(heading: str) -> str:
    """The text under the first heading whose title starts with ``heading`` (README.md
    first, then docs/), up to the next heading of the same or a higher level (its
    subsections included)."""
    for page in pages():
        found = _section_in(page, heading)
        if found is not None:
            return found
    raise LookupError(f"neither README.md nor docs/ has a heading starting {heading!r}")


def code_blocks(heading: str, language: str | None = None) -> list[str]:
    """The fenced code blocks of the section ``heading`` (of ``language`` when given:
    ``python``, ``sh``), in order."""
    return [
        body
        for lang, body in _FENCE.findall(section(heading))
        if language is None or lang == language
    ]
