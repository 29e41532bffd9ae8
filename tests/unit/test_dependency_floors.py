"""The floors CI installs (.ci/floor-constraints.txt) are the ones pyproject.toml declares:
every runtime dependency's, and those of the test extras' tools that build the manual."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
#: The test extras pinned at their floors too: the floor virtualenv builds the manual
#: (tests/unit/test_docs_build.py) with them.
PINNED_EXTRAS = {"sphinx", "myst-parser"}


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0]).lower()


def test_every_runtime_dependency_has_its_declared_floor_pinned_in_ci() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {}
    extras = [r for r in project["optional-dependencies"]["test"] if _name(r) in PINNED_EXTRAS]
    assert {_name(r) for r in extras} == PINNED_EXTRAS
    for requirement in [*project["dependencies"], *extras]:
        floor = re.search(r">=\s*([\w.]+)", requirement)
        assert floor, f"{requirement!r} declares no floor (name>=version)"
        declared[_name(requirement)] = Version(floor.group(1))
    pinned = {}
    for line in (ROOT / ".ci" / "floor-constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pinned[_name(name)] = Version(version.strip())
    assert pinned == declared
