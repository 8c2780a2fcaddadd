"""The JIT build cache: keyed directories, their manifests, and loading what they hold.

Each build lives in ``<root>/<op name>-<key>``, the key a hash of every build input. A directory whose
manifest (``build.json``, written last) holds a module file that still matches it (:func:`module_problem`) is
loaded without the build lock or a compiler. See ``docs/ops.md``, "Just in time".
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from accelhal.process import cache_files

MANIFEST = "build.json"
"""Written last, atomically, by a successful build."""
BUILD_LOG = "build.log"
"""The compiler's output of the last failed build."""
LOCK = "accelhal.lock"
"""Our lock file (torch's own baton inside the same directory is called ``lock``)."""
TORCH_BATON = "lock"

HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl", ".inc")
"""Files under an op's include paths whose contents enter the key."""


def file_digest(path: str | Path) -> str:
    """The sha256 of a file's contents."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def header_digests(directory: str | Path) -> dict[str, str]:
    """``{relative path: sha256}`` of the header files under ``directory`` (empty if it is missing)."""
    root = Path(directory)
    if not root.is_dir():
        return {}
    return {
        str(path.relative_to(root)): file_digest(path)
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.suffix in HEADER_SUFFIXES
    }


def digest_inputs(inputs: Mapping[str, Any]) -> str:
    """A short stable hash of a JSON-serialisable mapping of build inputs."""
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def read_manifest(directory: str | Path) -> dict[str, Any] | None:
    """The manifest of a finished build in ``directory`` whose module file exists, else ``None``."""
    try:
        data = json.loads((Path(directory) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not Path(str(data.get("module_file", ""))).is_file():
        return None
    return data


def write_atomically(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` in the shared cache (:func:`accelhal.process.cache_files.write_atomically`)."""
    cache_files.write_atomically(Path(path), text, shared=True)


def write_manifest(directory: str | Path, module: ModuleType, inputs: Mapping[str, Any]) -> None:
    """Record a finished build: the module's name, file, size and sha256, and the inputs it was built from."""
    path = str(module.__file__)
    manifest = {
        "module_name": module.__name__,
        "module_file": path,
        "module_size": os.path.getsize(path),
        "module_sha256": file_digest(path),
        "inputs": inputs,
    }
    write_atomically(Path(directory) / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True, default=str))


def module_problem(manifest: Mapping[str, Any]) -> str | None:
    """Why the module file of ``manifest`` must not be loaded (it is not the file that was built), or ``None``."""
    path = str(manifest.get("module_file", ""))
    size, digest = manifest.get("module_size"), manifest.get("module_sha256")
    if not isinstance(size, int) or not isinstance(digest, str):
        return "records no checksum of its module (an older build)"
    try:
        actual = os.path.getsize(path)
        if actual != size:
            return f"holds a module of {actual} bytes where {size} were built"
        if file_digest(path) != digest:
            return "holds a module whose sha256 differs from the one recorded at build time"
    except OSError as exc:
        return f"holds a module that cannot be read ({exc})"
    return None


def clear(directory: str | Path, keep: Iterable[str] = (LOCK,)) -> None:
    """Delete everything in ``directory`` but the names in ``keep`` (files are unlinked, never rewritten)."""
    import shutil

    kept = set(keep)
    for entry in Path(directory).iterdir():
        if entry.name in kept:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def import_extension(name: str, path: str | Path) -> ModuleType:
    """Import the compiled extension module ``name`` from the file ``path``."""
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    if spec is None:
        raise ImportError(f"cannot import {name!r} from {path}")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def existing(paths: Iterable[str]) -> list[str]:
    """The paths in ``paths`` that do not exist (for readable compatibility reasons)."""
    return [p for p in paths if not os.path.exists(p)]
