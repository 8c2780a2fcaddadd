"""Remember what each third-party plugin registered when it was last imported.

With a backend forced, discovery defers a plugin whose entry here neither registers nor
replaces the forced name and contributes no op builders: it is imported only when needed
(:meth:`accelhal.discovery.plugins.Registry.load_deferred`). An entry counts while the
plugin's files are unchanged. The index is one JSON file,
``$XDG_CACHE_HOME/accelhal/plugin-registrations.json``, of at most :data:`KEEP_ENTRIES` entries.
"""

from __future__ import annotations

import importlib.metadata as metadata
import importlib.util
import os
from pathlib import Path
from typing import Any

from accelhal.plain_record import record
from accelhal.process.cache_files import cache_root, read_json, write_json

_FILE = "plugin-registrations.json"
_FORMAT = 1
KEEP_ENTRIES = 256
"""Entries kept (the most recently recorded), across every environment of the user."""


@record(frozen=True)
class Registered:
    """What one import of a plugin registered."""

    backends: tuple[str, ...]
    """The backend names it registered."""
    replaces: tuple[str, ...]
    """The names its specs ``replaces``."""
    op_builders: bool
    """Whether it implements ``accelhal_register_op_builders``."""

    def concerns(self, name: str) -> bool:
        """Return whether a program forcing ``name`` needs this plugin imported."""
        return self.op_builders or name in self.backends or name in self.replaces


def _stat(path: str | os.PathLike[str]) -> list[int] | None:
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    return [info.st_mtime_ns, info.st_size]


def _module_files(value: str) -> list[str]:
    """Return the files of the module an entry point names, found without importing anything.

    ``pkg.sub:attr`` gives ``pkg/__init__.py`` and ``pkg/sub.py`` (or ``pkg/sub/__init__.py``).
    """
    parts = value.partition(":")[0].strip().split(".")
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):  # a top-level module imported without a spec
        return []
    if spec is None:
        return []
    files = [spec.origin] if spec.origin and os.path.isfile(spec.origin) else []
    locations = list(spec.submodule_search_locations or [])
    for part in parts[1:]:
        found = [p for base in locations[:1] for p in (Path(base, f"{part}.py"), Path(base, part, "__init__.py"))]
        existing = [p for p in found if p.is_file()]
        files += [str(p) for p in existing[:1]]
        locations = [str(Path(base, part)) for base in locations[:1]]
    return files


def _key_and_fingerprint(ep: metadata.EntryPoint) -> tuple[str, list[Any]] | None:
    dist_path = getattr(getattr(ep, "dist", None), "_path", None)
    if not isinstance(dist_path, Path):
        return None
    files = _module_files(ep.value)
    if not files:
        return None
    fingerprint = [_stat(dist_path), *([f, _stat(f)] for f in files)]
    return f"{dist_path}\0{ep.name}\0{ep.value}", fingerprint


class Index:
    """The index as read from its file; :meth:`save` writes it back when something was recorded."""

    def __init__(self) -> None:
        root = cache_root()
        self._path = root / _FILE if root is not None else None
        data = read_json(self._path) if self._path is not None else None
        entries = data.get("entries") if isinstance(data, dict) and data.get("format") == _FORMAT else None
        self._entries: dict[str, Any] = entries if isinstance(entries, dict) else {}
        self._changed = False

    def lookup(self, ep: metadata.EntryPoint) -> Registered | None:
        """Return what ``ep``'s last import registered, or ``None`` when unknown or recorded from other files."""
        identity = _key_and_fingerprint(ep)
        if identity is None:
            return None
        key, fingerprint = identity
        entry = self._entries.get(key)
        if not isinstance(entry, dict) or entry.get("fingerprint") != fingerprint:
            return None
        backends, replaces, op_builders = entry.get("backends"), entry.get("replaces"), entry.get("op_builders")
        names = (backends, replaces)
        if not all(isinstance(n, list) and all(isinstance(x, str) for x in n) for n in names):
            return None
        if not isinstance(op_builders, bool):
            return None
        return Registered(tuple(backends), tuple(replaces), op_builders)  # type: ignore[arg-type]

    def remember(self, ep: metadata.EntryPoint, registered: Registered) -> None:
        """Record what ``ep`` registered just now (a no-op when it is already recorded so)."""
        identity = _key_and_fingerprint(ep)
        if identity is None or self.lookup(ep) == registered:
            return
        key, fingerprint = identity
        self._entries.pop(key, None)  # re-inserted last: the most recent
        self._entries[key] = {
            "fingerprint": fingerprint,
            "backends": list(registered.backends),
            "replaces": list(registered.replaces),
            "op_builders": registered.op_builders,
        }
        self._changed = True

    def save(self) -> None:
        """Write the index back if :meth:`remember` changed it (best effort)."""
        if not self._changed or self._path is None:
            return
        kept = dict(list(self._entries.items())[-KEEP_ENTRIES:])
        write_json(self._path, {"format": _FORMAT, "entries": kept})
        self._changed = False
