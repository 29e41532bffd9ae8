"""Sphinx configuration of irlscrapy's manual (Markdown pages, read by MyST).

Build it as CI does (tests/unit/test_docs_build.py), warnings as errors:
``python -m sphinx -W --keep-going -b html docs docs/_build/html``. Nothing here imports
irlscrapy, so the manual builds without the crawler's own dependencies (Read the Docs
installs only docs/requirements.txt)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

project = "irlscrapy"
author = "the irlscrapy authors"
copyright = "the irlscrapy authors"
release = re.search(r'__version__ = "([^"]+)"', (ROOT / "irlscrapy" / "version.py").read_text())[1]
version = release

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
# Headings down to ### get anchors, so that pages link to sections as page.md#anchor.
myst_heading_anchors = 3
html_theme = "alabaster"
html_title = f"irlscrapy {release}"
