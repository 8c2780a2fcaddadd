"""Small JSON files under accelhal's cache directory, read with suspicion and written atomically.

The directory is ``$XDG_CACHE_HOME/accelhal`` (default ``~/.cache/accelhal``; a relative
``XDG_CACHE_HOME`` is ignored). A file is only a hint: :func:`read_json` answers ``None``
for anything it cannot trust (missing, unreadable, not JSON, not owned by the current
user), and a writer that fails only costs the next process the work the file would have
saved. Callers check what the data says against the world before using it.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from accelhal.process.settings import cache_home


def cache_root() -> Path | None:
    """accelhal's cache directory (:func:`accelhal.process.settings.cache_home`); ``None`` if the home is unknown."""
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
    """Write ``data`` to ``path`` as :func:`write_atomically` does; False when it could not."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomically(path, json.dumps(data))
    except (OSError, TypeError, ValueError):
        return False
    return True


def write_atomically(path: Path, text: str, *, shared: bool = False) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it and a rename: readers never see half of it.

    The temporary file is created new, under a name no one can guess (``tempfile.mkstemp``), so nothing planted in
    the directory, such as a link to a file elsewhere, is written through. It is readable by its owner only or,
    ``shared``, as the process's umask allows (the op cache and ``site-packages``, which others read).

    Raises:
        OSError: where the directory cannot take the file; no temporary file is left behind.
    """
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            if shared:
                os.fchmod(out.fileno(), 0o666 & ~_umask())
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _umask() -> int:
    """The process's umask, read where Linux tells it (``/proc/self/status``) rather than set and set back."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
