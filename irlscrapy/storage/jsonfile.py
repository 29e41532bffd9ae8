"""Small JSON state files, replaced whole.

:func:`replace_json` writes the new document beside the file and renames it over the
old one, so a reader finds the old document or the new one, never a mix. There is no
fsync, as for :mod:`irlscrapy.storage.recordfile`: a kill -9 is in scope, a power loss is not.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path


def replace_json(path: Path, document: Mapping[str, object]) -> None:
    """Replace ``path`` with ``document`` in one rename."""
    fresh = path.with_name(path.name + ".tmp")
    with open(fresh, "w", encoding="utf-8") as f:
        f.write(json.dumps(document))  # json.dump() encodes in Python, 4x slower
    os.replace(fresh, path)
