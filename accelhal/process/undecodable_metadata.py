"""Name the installed distribution file that ``importlib.metadata`` could not decode, from the error's traceback.

A library that lists every distribution's entry points (torch's backend autoload, pydantic's plugin loader) fails
with a bare ``UnicodeDecodeError`` on one ``entry_points.txt`` that is not UTF-8; these functions say which file, and
whose it is, for the message. Imported only once such an error was raised.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os

from accelhal.plain_record import record
from accelhal.text import quote, shorten

PATH_LIMIT = 240
"""The characters of a file's path that a message quotes (a site-packages path is rarely half as long)."""


@record(frozen=True)
class UndecodableFile:
    """The file a ``UnicodeDecodeError`` of ``importlib.metadata`` was reading, and the distribution holding it."""

    path: str | None
    """The file's path; ``None`` where no frame of the traceback said."""
    name: str | None
    """The distribution's name as its directory gives it (``foo`` for ``foo-1.0.dist-info``); ``None`` if unknown."""
    version: str
    """Its version, as the directory gives it; ``"?"`` if unknown."""

    @classmethod
    def at(cls, path: str | None) -> UndecodableFile:
        """The file at ``path`` (``None``: unknown), its distribution named by its directory (``foo-1.0.dist-info``).

        The distribution's ``METADATA`` is not read: it may be no more UTF-8 than the file that failed.
        """
        stem, _, suffix = os.path.basename(os.path.dirname(path or "")).rpartition(".")
        name, _, version = stem.partition("-")
        if suffix not in ("dist-info", "egg-info") or not name:
            return cls(path, None, "?")
        return cls(path, name, version.partition("-")[0] or "?")

    @property
    def where(self) -> str:
        """``"'/site/foo-1.0.dist-info/entry_points.txt' of foo 1.0"``, or what is known of it."""
        if self.path is None:
            return "an installed distribution's entry_points.txt"
        return quote(self.path, PATH_LIMIT) + (f" of {self.subject}" if self.name else "")

    @property
    def subject(self) -> str:
        """``"foo 1.0"``, else ``"its distribution"``."""
        return f"{shorten(self.name)} {shorten(self.version)}" if self.name else "its distribution"

    @property
    def pip_commands(self) -> tuple[str, str] | None:
        """The commands that reinstall and uninstall the distribution; ``None`` where its name is unknown."""
        if not self.name:
            return None
        name = shorten(self.name)
        return f"pip install --force-reinstall {name}", f"pip uninstall {name}"


def undecodable_file(error: UnicodeDecodeError, below: str | None = None) -> UndecodableFile | None:
    """Return the file ``error`` was raised reading: the last ``Distribution.read_text`` frame of its traceback.

    With ``below``, only frames under a frame of a function of that name count, and ``None`` is returned where the
    traceback has no such frame (the error is another one's).
    """
    tb, inside, path = error.__traceback__, below is None, None
    while tb is not None:
        frame = tb.tb_frame
        inside = inside or frame.f_code.co_name == below
        if inside and frame.f_code.co_name == "read_text":
            dist, filename = frame.f_locals.get("self"), frame.f_locals.get("filename")
            directory = getattr(dist, "_path", None)
            if isinstance(dist, metadata.Distribution) and isinstance(directory, os.PathLike):
                path = os.path.join(directory, str(filename))
        tb = tb.tb_next
    if not inside:
        return None
    return UndecodableFile.at(path)
