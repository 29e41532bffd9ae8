"""Fixtures of the first-hour suite: the docs site on loopback, once per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .project import Site, serve_docs


@pytest.fixture(scope="session")
def docs_site() -> Iterator[Site]:
    with serve_docs() as site:
        yield site
