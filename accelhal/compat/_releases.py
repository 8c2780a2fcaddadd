"""The releases of a framework an adapter supports, and the shapes those releases take.

Each adapter declares one :class:`ReleaseRange` (its floor, the newest release tested and the
first release refused) and, where the framework changed shape between releases, one table of
``(first release, shape)`` rows read with :func:`shape_for`. Nothing else in an adapter asks
which release is installed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Generic, TypeVar

Shape = TypeVar("Shape")

_RELEASE = re.compile(r"(\d+(?:\.\d+)*)(.*)")
_PRE_RELEASE = re.compile(r"^[.\-_]?(a|b|c|rc|alpha|beta|pre|preview|dev)", re.IGNORECASE)


def release_key(version: str) -> tuple[tuple[int, ...], int]:
    """A sort key for ``version``: its release numbers (trailing zeros dropped), pre-releases before the release.

    ``"0.15.0rc1"`` sorts before ``"0.15.0"``; a local part (``"+cpu"``) and a post-release sort with
    the release. Raises :class:`ValueError` for a string that does not start with a number.
    """
    match = _RELEASE.match(version.strip().lstrip("vV"))
    if match is None:
        raise ValueError(f"not a release number: {version!r} (expected digits and dots, e.g. '2.4.0')")
    numbers = [int(part) for part in match.group(1).split(".")]
    while len(numbers) > 1 and numbers[-1] == 0:
        numbers.pop()
    return tuple(numbers), 0 if _PRE_RELEASE.match(match.group(2)) else 1


@dataclass(frozen=True)
class ReleaseRange:
    """The releases of one framework an adapter supports: ``floor <= release < below``.

    ``newest`` is the newest release tested; releases between it and ``below`` (the next
    major release) are admitted, and the adapter's shape checks still guard them.
    """

    distribution: str
    """The distribution whose installed version is read (``"deepspeed"``)."""
    floor: str
    """The oldest release supported and tested."""
    newest: str
    """The newest release tested."""
    below: str
    """The first release refused (the next major release)."""

    @property
    def specifier(self) -> str:
        """The range as a requirement specifier: ``">=0.15.0,<0.20"``."""
        return f">={self.floor},<{self.below}"

    def admits(self, version: str) -> bool:
        """Whether ``version`` lies in the range (a pre-release of :attr:`below`, ``"0.20.0rc1"``, does not)."""
        key = release_key(version)
        return release_key(self.floor) <= key and key[0] < release_key(self.below)[0]

    def installed(self) -> str:
        """The installed release of :attr:`distribution` (:class:`importlib.metadata.PackageNotFoundError` if none)."""
        return metadata.version(self.distribution)

    def check(self, version: str | None = None) -> str:
        """Return ``version`` (default: the installed release) when the range admits it.

        Raises :class:`~accelhal.UnsupportedReleaseError` naming the release and the range
        otherwise; call it before anything is patched.
        """
        from accelhal.errors import UnsupportedReleaseError

        found = self.installed() if version is None else version
        if not self.admits(found):
            raise UnsupportedReleaseError(
                self.distribution,
                found,
                self.specifier,
                detail=f"tested from {self.floor} to {self.newest}; install a release in that range",
            )
        return found


@dataclass(frozen=True)
class ShapeTable(Generic[Shape]):
    """What differs between a framework's releases: rows of ``(first release, shape)``, oldest first."""

    rows: Sequence[tuple[str, Shape]]

    def __post_init__(self) -> None:
        """Check that the rows are ordered by release, oldest first."""
        keys = [release_key(first) for first, _ in self.rows]
        if not keys or keys != sorted(keys) or len(set(keys)) != len(keys):
            raise ValueError(
                f"a shape table's rows must be ordered by release, oldest first: {[r for r, _ in self.rows]}"
            )

    def shape_for(self, version: str) -> Shape:
        """The shape of the newest row whose first release is at or below ``version``."""
        key = release_key(version)
        chosen = [shape for first, shape in self.rows if release_key(first) <= key]
        if not chosen:
            raise ValueError(f"release {version} is older than the first row of the table ({self.rows[0][0]})")
        return chosen[-1]
