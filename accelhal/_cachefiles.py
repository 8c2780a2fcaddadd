"""Small JSON files under accelhal's cache directory, read with suspicion and written atomically.

The directory is ``$XDG_CACHE_HOME/accelhal`` (default ``~/.cache/accelhal``; a relative
``XDG_CACHE_HOME`` is ignored). A file is only a hint: :func:`read_json` answers ``None``
for anything it cannot trust (missing, unreadable, not JSON, not owned by the current
user), and a writer that fails only costs the next process the work the file would have
saved. Callers check what the data says against the world before using it.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from accelhal.settings import cache_home


def cache_root() -> Path | None:
    """accelhal's cache directory (:func:`accelhal.settings.cache_home`), or ``None`` when the home is unknown."""
    root = cache_home()
    return Path(root, "accelhal") if os.path.isabs(root) else None


def read_json(path: Path) -> Any:
    """The JSON value in ``path``, or ``None`` when it is missing, damaged, not a regular file or someone else's."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not block the process
    except OSError:
        return None
    try:
        with open(descriptor, encoding="utf-8") as handle:
            found = os.fstat(handle.fileno())
            if not stat.S_ISREG(found.st_mode) or (hasattr(os, "getuid") and found.st_uid != os.getuid()):
                return None
            return json.load(handle)
    except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested beyond the parser's depth
        return None


def write_json(path: Path, data: Any) -> bool:
    """Write ``data`` to ``path`` through a temporary file and a rename; False when it could not."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        partial.write_text(json.dumps(data), encoding="utf-8")
        os.replace(partial, path)
    except (OSError, TypeError, ValueError):
        return False
    return True
