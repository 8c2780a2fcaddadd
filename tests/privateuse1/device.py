"""Build (once, cached) and load the test device: a real PrivateUse1 device whose memory is host memory.

The C++ source is ``csrc/testdev.cpp``. :func:`library` compiles it with
``torch.utils.cpp_extension`` into a cache directory keyed by the source, torch, Python
and the compiler flags, and later processes load the finished library without
compiling: ``build.json`` (written last, atomically) records the library's sha256, and a
library that does not match it, or does not load, is rebuilt. A file lock serialises
builds across processes.

:func:`load` makes the device the process's accelerator under a name chosen there
(``torch.utils.rename_privateuse1_backend`` works once per process, so a test that
wants another name runs in a fresh interpreter) and registers its device module
(:mod:`tests.privateuse1.runtime`) as ``torch.<name>``::

    from tests.privateuse1 import device
    module = device.load("npu", devices=2)
    torch.ones(3, device="npu:1")

Variables: ``ACCELHAL_TESTDEV_DEVICES`` (device count, default 2; 0 is "no device"),
``ACCELHAL_TESTDEV_MEMORY`` (bytes per device), ``ACCELHAL_TESTDEV_CACHE`` (the cache
root, default ``~/.cache/accelhal-tests``), ``ACCELHAL_TESTDEV_COLLECTIVES`` (``1``:
:func:`load` registers the device's collectives, :mod:`tests.privateuse1.collectives`) and,
for :func:`autoload` (a ``torch.backends`` entry point, as vendors install),
``ACCELHAL_TESTDEV_NAME``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import sysconfig
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from tests.locks import locked

SOURCE = Path(__file__).resolve().parent / "csrc" / "testdev.cpp"
LIBRARY_NAME = "accelhal_testdev"
CXX_FLAGS = ["-O1"]
DEVICES_VARIABLE = "ACCELHAL_TESTDEV_DEVICES"
NAME_VARIABLE = "ACCELHAL_TESTDEV_NAME"
CACHE_VARIABLE = "ACCELHAL_TESTDEV_CACHE"
COLLECTIVES_VARIABLE = "ACCELHAL_TESTDEV_COLLECTIVES"
MANIFEST = "build.json"
DEFAULT_NAME = "testdev"
OLDEST_TORCH = "2.9"
"""The oldest torch the device builds against: ``c10::DeviceAllocator`` (the allocator whose figures
``torch.accelerator.memory_allocated`` ... read) arrived in torch 2.9."""

_loaded_name: list[str] = []


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_key() -> str:
    """The hash of every build input: the source, torch, Python, the ABI and the flags."""
    import torch

    inputs = {
        "source": _sha256(SOURCE),
        "torch": torch.__version__,
        "python": sys.version,
        "abi": sysconfig.get_config_var("EXT_SUFFIX"),
        "flags": CXX_FLAGS,
        "cxx": os.environ.get("CXX", ""),
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:20]


def unsupported() -> str | None:
    """Why the device cannot be built against this torch (too old), or ``None`` when it can."""
    import torch

    if torch.__version__ >= OLDEST_TORCH:  # a TorchVersion: compared as a release, not as text
        return None
    return f"the test device needs torch >= {OLDEST_TORCH} (c10::DeviceAllocator); this is torch {torch.__version__}"


def cache_root() -> Path:
    """``ACCELHAL_TESTDEV_CACHE``, default ``~/.cache/accelhal-tests``: the builds kept between test runs."""
    return Path(os.environ.get(CACHE_VARIABLE) or Path.home() / ".cache" / "accelhal-tests")


def build_directory() -> Path:
    """``<cache root>/testdev-<build key>``."""
    return cache_root() / f"testdev-{build_key()}"


def _finished(directory: Path) -> Path | None:
    """The library of a finished build in ``directory`` whose bytes match its manifest, else None."""
    try:
        manifest = json.loads((directory / MANIFEST).read_text())
        path = directory / manifest["library"]
        return path if _sha256(path) == manifest["sha256"] else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _build(directory: Path) -> Path:
    from torch.utils import cpp_extension

    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    started = time.monotonic()
    path = cpp_extension.load(
        name=LIBRARY_NAME,
        sources=[str(SOURCE)],
        extra_cflags=CXX_FLAGS,
        build_directory=str(directory),
        is_python_module=False,
        verbose=False,
    )
    library = Path(str(path))
    manifest = {"library": library.name, "sha256": _sha256(library), "seconds": round(time.monotonic() - started, 1)}
    temporary = directory / f".{MANIFEST}.{os.getpid()}"
    temporary.write_text(json.dumps(manifest))
    os.replace(temporary, directory / MANIFEST)
    return library


def library() -> tuple[Path, bool]:
    """The path of the compiled library, building it if no intact build is cached; and whether it was built.

    Building loads the library into this process (``torch.utils.cpp_extension`` does);
    a cached library is only located here, and :func:`load` loads it.
    """
    directory = build_directory()
    found = _finished(directory)
    if found is not None:
        return found, False
    with locked(directory):
        found = _finished(directory)  # another process built it while this one waited
        if found is not None:
            return found, False
        return _build(directory), True


def _load_library() -> None:
    import torch

    path, built = library()
    if built:
        return
    load_library: Any = torch.ops.load_library  # untyped in torch
    try:
        load_library(str(path))
    except OSError:  # intact bytes that still do not load (a changed system library): build afresh
        with locked(path.parent):
            (path.parent / MANIFEST).unlink(missing_ok=True)
            _build(path.parent)


def load(name: str = DEFAULT_NAME, devices: int | None = None, module: ModuleType | None = None) -> ModuleType:
    """Make the test device this process's accelerator under ``name``; returns its device module ``torch.<name>``.

    ``devices`` sets ``ACCELHAL_TESTDEV_DEVICES`` for the library (read once, when it is
    loaded). ``module`` replaces :mod:`tests.privateuse1.runtime` as the device module (a
    vendor's module built over it). Loading again under the same name returns the same
    module; another name raises ``RuntimeError`` (torch renames PrivateUse1 once per process).
    """
    import torch

    if _loaded_name:
        if _loaded_name[0] != name:
            loaded = _loaded_name[0]
            raise RuntimeError(f"the test device is loaded as {loaded!r} in this process; cannot load {name!r}")
        return getattr(torch, name)  # type: ignore[no-any-return]
    if devices is not None:
        os.environ[DEVICES_VARIABLE] = str(devices)
    _load_library()
    from torch.utils.backend_registration import generate_methods_for_privateuse1_backend, rename_privateuse1_backend

    from tests.privateuse1 import runtime

    register_module: Any = torch._register_device_module  # untyped in torch
    rename_privateuse1_backend(name)
    register_module(name, runtime if module is None else module)
    generate_methods_for_privateuse1_backend(for_storage=True)
    _loaded_name.append(name)
    if os.environ.get(COLLECTIVES_VARIABLE) == "1":
        from tests.privateuse1 import collectives

        collectives.register(name)
    return getattr(torch, name)  # type: ignore[no-any-return]


def autoload() -> None:
    """A ``torch.backends`` entry point: load the device under ``ACCELHAL_TESTDEV_NAME`` (default ``testdev``)."""
    load(os.environ.get(NAME_VARIABLE) or DEFAULT_NAME)
