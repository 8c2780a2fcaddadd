"""Who answers ``torch.cuda``, and which CUDA it is.

:func:`replacements` finds the functions of ``torch.cuda`` that another package replaced (torch_npu's
``transfer_to_npu``, torch_supa, torchada, ...), with the module, file and installed distribution each comes
from; :func:`flavour` names the CUDA of this torch build (NVIDIA, AMD ROCm, Hygon DCU, MetaX, Iluvatar).
Neither initialises CUDA: only attributes, functions' modules and files, and device names a caller already has
are read. The signals, and an example: ``docs/backends.md``, "CUDA flavours".
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import Any

from accelhal.plain_record import record

CHECKED_MEMBERS = ("device_count", "is_available", "current_device", "get_device_properties")
"""The ``torch.cuda`` functions whose origin is checked, those that count, select and describe devices."""


@record(frozen=True)
class Replacement:
    """A ``torch.cuda`` function that is not torch's own."""

    member: str
    """The ``torch.cuda`` attribute (``"device_count"``)."""
    module: str
    """The module the function comes from (its ``__module__``, ``"torch_npu.npu.utils"``)."""
    file: str | None
    """The file of the function's code (of its module for a builtin), where there is one."""
    distribution: str | None
    """The installed distribution owning that file (``"torch-npu 2.6.0"``), where one does."""

    @property
    def package(self) -> str:
        """The top-level package of :attr:`module` (``"torch_npu"``)."""
        return self.module.partition(".")[0]

    @property
    def origin(self) -> str:
        """``"distribution torch-npu 2.6.0"``, else ``"file /path/module.py"``."""
        return f"distribution {self.distribution}" if self.distribution else f"file {self.file or 'unknown'}"


def _source_file(function: Any, module: str) -> str | None:
    """The file of the function's code, else of its module (a builtin has no code), as imported (not resolved)."""
    import inspect

    code = getattr(inspect.unwrap(function), "__code__", None)
    path = getattr(code, "co_filename", None)
    if path is None:
        path = getattr(sys.modules.get(module), "__file__", None)
    return path if isinstance(path, str) and os.path.exists(path) else None


def _is_torchs_own(module: str, file: str | None, torch_dir: str) -> bool:
    if file is not None:
        return file.startswith(torch_dir + os.sep)
    return module == "torch" or module.startswith("torch.")


def _distribution(package: str, file: str | None) -> str | None:
    """The installed distribution that owns ``file`` (of top-level ``package``), as ``"name version"``."""
    import importlib.metadata as metadata

    names = metadata.packages_distributions().get(package, [])
    found: list[metadata.Distribution] = []
    for name in dict.fromkeys(names):
        try:
            found.append(metadata.distribution(name))
        except metadata.PackageNotFoundError:
            continue
    for dist in found:
        owned = {os.path.realpath(str(dist.locate_file(f))) for f in dist.files or ()}
        if file is not None and file in owned:
            return f"{dist.metadata['Name']} {dist.version}"
    return f"{found[0].metadata['Name']} {found[0].version}" if found else None


def replacements(torch: ModuleType, members: Sequence[str] = CHECKED_MEMBERS) -> list[Replacement]:
    """The functions of ``torch.cuda`` (among ``members``) that another package put there.

    A function is torch's own when its module's file lies inside torch's package directory
    (by module name where there is no file), links resolved. Reads attributes only: calls
    nothing. A file inside torch's directory as imported needs no resolving (``realpath``
    walks every component of a path: most of the cost, on the path of the first selection).
    """
    imported_dir = os.path.dirname(str(torch.__file__))
    resolved_dir: list[str] = []
    cuda = getattr(torch, "cuda", None)
    found: list[Replacement] = []
    for member in members:
        function = getattr(cuda, member, None)
        if function is None:
            continue
        module = str(getattr(function, "__module__", None) or type(function).__module__)
        file = _source_file(function, module)
        if file is not None and _is_torchs_own(module, file, imported_dir):
            continue
        if not resolved_dir:
            resolved_dir.append(os.path.dirname(os.path.realpath(str(torch.__file__))))
        file = os.path.realpath(file) if file is not None else None
        if _is_torchs_own(module, file, resolved_dir[0]):
            continue
        found.append(Replacement(member, module, file, _distribution(module.partition(".")[0], file)))
    return found


@record(frozen=True)
class Flavour:
    """What kind of CUDA a torch build provides, and from which signals that was read."""

    name: str
    """``"NVIDIA CUDA"``, ``"AMD ROCm (HIP)"``, ``"Hygon DCU (HIP)"``, ``"MetaX MACA"``,
    ``"Iluvatar CoreX"`` or ``"none (CPU-only torch build)"``."""
    version: str | None
    """The toolkit version torch was built with (CUDA, HIP or MACA), where it says."""
    signals: tuple[str, ...]
    """The observations the name rests on (``"torch.version.hip = '6.3'"``)."""
    heuristic: bool
    """True when a signal is a naming convention (a version tag, a device name), not a build attribute."""

    @property
    def label(self) -> str:
        """``"NVIDIA CUDA 12.8"``; heuristic names say so (``"Hygon DCU (HIP) 6.3, by heuristic"``)."""
        text = f"{self.name} {self.version}" if self.version else self.name
        return f"{text}, by heuristic" if self.heuristic else text


def _local_tag(version: str) -> str:
    """The local part of a version (``"2.4.1+das.opt2.dtk2504"`` -> ``"das.opt2.dtk2504"``), lowercase."""
    return version.partition("+")[2].lower()


def _named(device_names: Iterable[str], word: str) -> str | None:
    return next((name for name in device_names if word in name.lower()), None)


def flavour(torch: ModuleType, device_names: Sequence[str] = ()) -> Flavour:
    """The CUDA flavour of ``torch``; ``device_names`` (from a runtime already initialised) refine it.

    Signals, strongest first: ``torch.version.maca`` (MetaX builds), ``torch.version.hip``
    (ROCm and Hygon's DTK builds), ``torch.version.cuda``; a local version tag ``+das``/``dtk``
    (Hygon) or ``+corex`` (Iluvatar) and device names containing ``MetaX`` or ``Iluvatar`` are
    naming conventions, so a flavour resting on them is marked :attr:`Flavour.heuristic`.
    """
    version = getattr(torch, "version", None)
    cuda, hip, maca = (getattr(version, attr, None) for attr in ("cuda", "hip", "maca"))
    tag = _local_tag(str(getattr(torch, "__version__", "")))
    if maca:
        return Flavour("MetaX MACA", str(maca), (f"torch.version.maca = {maca!r}",), heuristic=False)
    metax = _named(device_names, "metax")
    if metax is not None:
        return Flavour("MetaX MACA", None, (f"device name {metax!r}",), heuristic=True)
    if hip:
        if tag.startswith("das") or "dtk" in tag:
            hygon = (f"torch.version.hip = {hip!r}", f"torch version tag '+{tag}'")
            return Flavour("Hygon DCU (HIP)", str(hip), hygon, heuristic=True)
        return Flavour("AMD ROCm (HIP)", str(hip), (f"torch.version.hip = {hip!r}",), heuristic=False)
    iluvatar = _named(device_names, "iluvatar")
    if tag.startswith("corex") or iluvatar is not None:
        signals: tuple[str, ...] = (f"torch version tag '+{tag}'",) if tag.startswith("corex") else ()
        signals += (f"device name {iluvatar!r}",) if iluvatar is not None else ()
        return Flavour("Iluvatar CoreX", str(cuda) if cuda else None, signals, heuristic=True)
    if cuda:
        return Flavour("NVIDIA CUDA", str(cuda), (f"torch.version.cuda = {cuda!r}",), heuristic=False)
    return Flavour("none (CPU-only torch build)", None, ("torch.version.cuda and torch.version.hip are None",), False)
