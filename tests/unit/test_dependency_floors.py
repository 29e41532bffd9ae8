"""The floors CI installs (.ci/floor-constraints.txt) are the ones pyproject.toml declares."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", re.split(r"[\s;<>=!~\[(]", requirement, maxsplit=1)[0]).lower()


def test_every_runtime_dependency_has_its_declared_floor_pinned_in_ci() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {}
    for requirement in project["dependencies"]:
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
