"""Distributions laid out as pip lays them out, for ``importlib.metadata`` to find on a path.

The one owner of the test tree's installed stand-ins: a plugin distribution (its modules and
its ``accelhal`` or ``torch.backends`` entry points), or a framework read as another release
(a bare ``.dist-info`` placed first on the path).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

EntryPoints = Mapping[str, Mapping[str, str]]
"""Entry points by group: ``{"accelhal": {"acme": "acme_plugin"}}``."""


def entry_points_text(groups: EntryPoints) -> str:
    """``entry_points.txt`` declaring ``groups``."""
    return "\n".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in points.items())
        for group, points in groups.items()
    )


def lay_out(
    site: Path,
    name: str,
    version: str = "1.0",
    entry_points: EntryPoints | str | None = None,
    *,
    files: Mapping[str, str] | None = None,
) -> Path:
    """Install distribution ``name`` ``version`` in ``site``; the ``.dist-info`` directory.

    ``entry_points`` is ``entry_points.txt``, as groups or as its text; ``files`` (paths relative to
    ``site``, and their text) are written beside it and owned through its ``RECORD``. Laying the
    same distribution out again rewrites it.
    """
    site.mkdir(parents=True, exist_ok=True)
    for relative, text in (files or {}).items():
        (site / relative).write_text(text)
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if entry_points is not None:
        text = entry_points if isinstance(entry_points, str) else entry_points_text(entry_points)
        (info / "entry_points.txt").write_text(text)
    if files:
        owned = [*files, *(f"{info.name}/{own}" for own in ("METADATA", "entry_points.txt", "RECORD"))]
        (info / "RECORD").write_text("".join(f"{path},,\n" for path in owned))
    return info
