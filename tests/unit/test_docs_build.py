"""The manual (docs/, Sphinx with MyST Markdown) builds with warnings as errors, and its
pages and the README point only to files that exist.

The build is what Read the Docs runs (.readthedocs.yaml); a broken cross-reference, a
page missing from the toctree or a snippet that does not lex is a warning, so it fails
here first."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: A Markdown link or image to a relative path: ``[text](path)`` or ``[text](path#anchor)``.
LINK = re.compile(r"\]\((?!https?:|mailto:|#)([^)\s#]+)(?:#[^)\s]*)?\)")


def test_the_manual_builds_with_sphinx_and_no_warning(tmp_path: Path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q",
         str(DOCS), str(tmp_path / "html")],
        capture_output=True, text=True, timeout=280, cwd=ROOT,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    assert (tmp_path / "html" / "index.html").is_file()


def test_every_relative_link_of_the_readme_and_the_manual_names_a_file_that_exists() -> None:
    broken = []
    for page in [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted(DOCS.rglob("*.md"))]:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert not broken, broken


def test_read_the_docs_installs_the_floors_the_test_extras_declare() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {
        r for r in extras["optional-dependencies"]["test"] if r.startswith(("sphinx", "myst"))
    }
    required = {
        line.split("#")[0].strip()
        for line in (DOCS / "requirements.txt").read_text().splitlines()
        if line.split("#")[0].strip()
    }
    assert declared == required == {"sphinx>=7.4", "myst-parser>=4.0"}
