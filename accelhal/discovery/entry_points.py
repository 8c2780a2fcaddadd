"""Find a group's entry points without re-reading every installed distribution.

:func:`find` returns what ``importlib.metadata.entry_points(group=...)`` returns, in the same
order, through a cache of which distributions carry the group (``$XDG_CACHE_HOME/accelhal``,
default ``~/.cache/accelhal``), checked against ``sys.path`` on every call and skipped where it
cannot be trusted (``docs/performance.md`` has when, and why the cache exists).

>>> [ep.value for ep in find("accelhal") if ep.name == "cpu"]
['accelhal_backends.catalog:cpu']
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import importlib.metadata as metadata
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from accelhal.process.cache_files import cache_root, read_json, write_json

_FORMAT = 3
_RACY_SECONDS = 2.0
_KEEP_FILES = 32
"""Cache files kept (the most recently written): one per distinct ``sys.path``, so the
directory would otherwise grow with every script directory and environment ever used."""
_NAME_SEPARATORS = re.compile(r"[-_.]+")


def find(group: str, *, refresh: bool = False) -> list[metadata.EntryPoint]:
    """Return every entry point of ``group``, as ``importlib.metadata.entry_points(group=group)`` lists them.

    The first distribution of a name on ``sys.path`` wins, as in ``importlib.metadata``. An
    installed or removed distribution, or an edited ``entry_points.txt``, is seen by the next
    call. ``refresh=True`` ignores the cache file (and rewrites it): for a caller that finds
    the answer incomplete, for example without the entry points of its own distribution.
    """
    signature = _signature()
    cache = _cache_file(group, signature) if signature is not None else None
    if cache is not None and signature is not None and not refresh:
        data = _read_cache(cache, signature)
        if data is not None:
            directories, parsed = data
            found = [_entry_points_of(d, group, parsed.get(d)) for d in directories]
            if all(points for points, _ in found):  # each listed distribution still carries the group: true
                if any(fresh is not None for _, fresh in found):  # an edited entry_points.txt: heal the file
                    _write_cache(cache, signature, directories, parsed, found)
                return [ep for points, _ in found for ep in points]
    dists, cacheable = _scan(group)
    if cache is not None and signature is not None and cacheable and dists and _signature() == signature:
        directories = [str(getattr(d, "_path", "")) for d in dists]
        found = [_entry_points_of(d, group, None) for d in directories]  # each file parsed once, and recorded
        _write_cache(cache, signature, directories, {}, found)
        return [ep for points, _ in found for ep in points]
    return _select(dists, group)


def _entry_points_of(directory: str, group: str, cached: Any) -> tuple[list[metadata.EntryPoint], list[Any] | None]:
    """Return the entry points of ``group`` in the distribution ``directory``, and what to record of them.

    ``cached`` is ``[text, [[name, value], ...]]``: the distribution's ``entry_points.txt``
    as it was recorded, and its entry points of the group. While the file holds that text
    the pairs are the answer; a pair that is not a ``name = value`` line of the text is not
    believed. Otherwise the file is parsed, and the second value is the new record (``None``
    when the recorded one held).
    """
    dist = TolerantDistribution(Path(directory))
    text = dist.read_text("entry_points.txt")
    if text and _believable(cached, text):
        return [_attached(metadata.EntryPoint(name, value, group), dist) for name, value in cached[1]], None
    points = list(dist.entry_points.select(group=group))
    return points, ([text, [[ep.name, ep.value] for ep in points]] if text else None)


def _believable(cached: Any, text: str) -> bool:
    """Return whether ``cached`` is a record of ``text``: that text, and pairs each a ``name = value`` line of it."""
    if not (isinstance(cached, list) and len(cached) == 2 and cached[0] == text and isinstance(cached[1], list)):
        return False
    written = {
        (name.strip(), value.strip())
        for name, equals, value in (line.partition("=") for line in text.splitlines())
        if equals
    }
    pairs = cached[1]
    return bool(pairs) and all(
        isinstance(pair, list)
        and len(pair) == 2
        and all(isinstance(part, str) for part in pair)
        and tuple(pair) in written
        for pair in pairs
    )


def _attached(ep: metadata.EntryPoint, dist: metadata.Distribution) -> metadata.EntryPoint:
    """Return ``ep`` with its distribution, as ``importlib.metadata`` attaches it when it parses the file."""
    attach = getattr(ep, "_for", None)
    return attach(dist) if callable(attach) else ep


def _select(dists: list[metadata.Distribution], group: str) -> list[metadata.EntryPoint]:
    return [ep for dist in dists for ep in _tolerant(dist).entry_points.select(group=group)]


class TolerantDistribution(metadata.PathDistribution):
    """A distribution directory whose text files are read as UTF-8 with undecodable bytes replaced (``U+FFFD``).

    ``importlib.metadata`` raises on a ``METADATA`` or ``entry_points.txt`` that is not UTF-8 (an old tool's
    Latin-1 author name): one such distribution anywhere on ``sys.path`` would end every selection. Its
    ``metadata``, ``version`` and ``entry_points`` read through :meth:`read_text`.
    """

    def read_text(self, filename: str | os.PathLike[str]) -> str | None:
        """The file's text, or ``None`` where it is missing or unreadable."""
        try:
            return super().read_text(filename)
        except UnicodeDecodeError:
            with contextlib.suppress(OSError):
                return Path(str(self._path), filename).read_bytes().decode("utf-8", errors="replace")
            return None


def _tolerant(dist: metadata.Distribution) -> metadata.Distribution:
    """``dist`` as a :class:`TolerantDistribution` where it is a directory (a zip's stays as it is)."""
    path = getattr(dist, "_path", None)
    return TolerantDistribution(path) if isinstance(path, Path) and not isinstance(dist, TolerantDistribution) else dist


def _signature() -> list[list[Any]] | None:
    """Return ``[[entry, mtime_ns], ...]`` for ``sys.path``, or None when the cache must not be used."""
    if any(
        hasattr(finder, "find_distributions") and finder is not importlib.machinery.PathFinder
        for finder in sys.meta_path
    ):
        return None
    now = time.time_ns()
    signature: list[list[Any]] = []
    for entry in sys.path:
        try:
            mtime = os.stat(entry or ".").st_mtime_ns
        except (OSError, ValueError):
            mtime = None
        if mtime is not None and mtime % 1_000_000_000 == 0 and now - mtime < _RACY_SECONDS * 1e9:
            return None  # whole-second times: a change within the same tick could go unnoticed
        signature.append([entry, mtime])
    return signature


def _cache_file(group: str, signature: list[list[Any]]) -> Path | None:
    root = cache_root()
    if root is None:
        return None
    key = hashlib.sha256(json.dumps([_FORMAT, group, [e for e, _ in signature]]).encode()).hexdigest()[:24]
    return root / f"entry-points-{key}.json"


def _read_cache(path: Path, signature: list[list[Any]]) -> tuple[list[str], dict[str, Any]] | None:
    """Return the cached directories and their recorded entry points.

    ``None`` unless the directories are what a scan of this ``sys.path`` could give.
    """
    data = read_json(path)
    if not isinstance(data, dict) or data.get("signature") != signature:
        return None
    directories = data.get("directories")
    if not isinstance(directories, list) or not directories or not all(isinstance(d, str) for d in directories):
        return None
    parsed = data.get("parsed")
    if not _plausible(directories, [entry for entry, _ in signature]):
        return None
    return directories, parsed if isinstance(parsed, dict) else {}


def _plausible(directories: list[str], path: list[str]) -> bool:
    """Return whether ``directories`` could be a scan's answer for ``path``.

    That is: distribution directories that exist, one per name, each directly in an entry
    of ``path``, in ``path`` order.
    """
    positions = {str(Path(entry)): i for i, entry in reversed(list(enumerate(path)))}
    last, names = -1, set()
    for directory in directories:
        where = Path(directory)
        position = positions.get(str(where.parent))
        name = _normalised_name(None, where) if where.suffix in (".dist-info", ".egg-info") else None
        if position is None or position < last or name is None or name in names or not where.is_dir():
            return False
        last = position
        names.add(name)
    return True


def _write_cache(
    path: Path,
    signature: list[list[Any]],
    directories: list[str],
    parsed: dict[str, Any],
    found: list[tuple[list[metadata.EntryPoint], list[Any] | None]],
) -> None:
    """Write the cache file, best effort: an unwritable cache only means the next process scans (or parses) again."""
    records = {d: fresh for d, (_, fresh) in zip(directories, found, strict=True) if fresh is not None}
    kept = {d: parsed[d] for d in directories if d in parsed and d not in records}
    if write_json(path, {"signature": signature, "directories": directories, "parsed": {**kept, **records}}):
        _prune(path.parent)


def _prune(directory: Path, keep: int = _KEEP_FILES) -> None:
    """Delete all but the ``keep`` most recently written cache files (best effort, racing processes welcome)."""
    try:
        files = sorted(directory.glob("entry-points-*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for stale in files[keep:]:
            stale.unlink(missing_ok=True)
    except OSError:
        return


def _scan(group: str) -> tuple[list[metadata.Distribution], bool]:
    """Return the distributions that carry ``group``, in ``sys.path`` order, first of each name only.

    Returns ``(distributions, cacheable)``; ``cacheable`` is False when a distribution
    does not live in a plain directory (then nothing may be cached).
    """
    header = re.compile(rf"^\s*\[\s*{re.escape(group)}\s*\]", re.MULTILINE)
    seen: set[str] = set()
    found: list[metadata.Distribution] = []
    cacheable = True
    for dist in metadata.distributions():
        path = getattr(dist, "_path", None)
        if not isinstance(path, Path):
            path = None
            cacheable = False
        name = _normalised_name(dist, path)
        if name in seen:
            continue
        seen.add(name)
        try:
            text = dist.read_text("entry_points.txt")
        except UnicodeDecodeError:
            text = _tolerant(dist).read_text("entry_points.txt")
        if text and header.search(text):
            found.append(dist)
    return found, cacheable


def name_and_version(dist: metadata.Distribution) -> tuple[str, str]:
    """Return the distribution's ``Name`` and ``Version``, as ``dist.metadata`` gives them.

    The two headers are read from the lines before the first blank line; where they are not
    both found there, ``dist.metadata`` answers. ``"?"`` stands for a field that is missing.

    >>> name_and_version(metadata.distribution("accelhal"))[0]
    'accelhal'
    """
    fields: dict[str, str] = {}
    dist = _tolerant(dist)
    text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
    for line in text.replace("\r\n", "\n").partition("\n\n")[0].splitlines():  # the headers, not the description
        if not line.strip():
            break
        key, colon, value = line.partition(":")
        if colon and key in ("Name", "Version") and key not in fields:
            fields[key] = value.strip()
    if len(fields) < 2 or not all(fields.values()):
        meta = dist.metadata
        return meta["Name"] or "?", meta["Version"] or "?"
    return fields["Name"], fields["Version"]


def _normalised_name(dist: metadata.Distribution | None, path: Path | None) -> str:
    """Return the project name as ``importlib.metadata`` compares it (from the directory name when it can)."""
    if path is not None:
        stem, ext = os.path.splitext(path.name)
        if ext in (".dist-info", ".egg-info"):
            return _NAME_SEPARATORS.sub("_", stem.partition("-")[0]).lower()
    return _NAME_SEPARATORS.sub("_", (_tolerant(dist).metadata["Name"] if dist is not None else None) or "").lower()
