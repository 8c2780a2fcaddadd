"""Choose the ``torch.compile`` backend that works on a device, without compiling anything.

:func:`choose` answers :meth:`accelhal.Accelerator.get_compile_backend` and imports neither
``torch._dynamo`` nor Inductor; :func:`check` vets a name given to
:meth:`~accelhal.Accelerator.set_compile_backend`. The rules, device by device: ``docs/compile.md``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from collections.abc import Sequence

from accelhal.errors import CompileBackendError
from accelhal.plain_record import record

INDUCTOR = "inductor"
"""torch's own compiler, ``torch.compile``'s default backend."""

FALLBACK = "aot_eager"
"""The backend answered where neither the vendor nor Inductor offers one (AOTAutograd over eager kernels)."""

INDUCTOR_DEVICE_TYPES: dict[str, str] = {"cpu": "C++", "cuda": "Triton", "xpu": "Triton", "mps": "Metal"}
"""torch's own device types Inductor generates code for, and what it generates there.

Inductor registers these in ``torch._inductor.codegen.common.init_backend_registration`` (with
``tpu`` through Pallas and ``mtia``, which accelhal has no backend for); ``tests/test_compiling.py``
keeps this table a part of what that function registers. Those that came after torch 2.4 are in
:data:`INDUCTOR_SINCE`.
"""

INDUCTOR_SINCE: dict[str, tuple[int, int]] = {"mps": (2, 7)}
"""The first torch release whose Inductor generates code for a device type of :data:`INDUCTOR_DEVICE_TYPES`,
where it is later than 2.4 (the oldest torch accelhal supports): Metal for ``mps`` arrived in torch 2.7."""

VENDOR_CODEGEN_ATTRIBUTES = ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen")
"""What a PrivateUse1 device module provides for Inductor to register its code generation."""

VENDOR_CODEGEN_SINCE = (2, 6)
"""The first torch release whose Inductor registers :data:`VENDOR_CODEGEN_ATTRIBUTES` of a PrivateUse1 device
module (torch 2.5 read attributes of other names, torch 2.4 none): before it, only ``register_backend_for_device``
counts."""

SOURCES = ("set", "vendor", "inductor", "fallback")
"""Where a :class:`CompileChoice` comes from, in the order :func:`choose` tries them."""


@record(frozen=True)
class CompileChoice:
    """The ``torch.compile`` backend for a device, and why.

    Attributes:
        backend: the name to pass as ``torch.compile(..., backend=...)``.
        reason: one sentence: why this backend (and, for the fallback, why not Inductor).
        source: ``"set"`` (by ``set_compile_backend``), ``"vendor"`` (the spec's
            ``compile_backend``), ``"inductor"`` or ``"fallback"`` (:data:`SOURCES`).
    """

    backend: str
    reason: str
    source: str


@record(frozen=True)
class InductorSupport:
    """Whether Inductor generates code for a device type (``supported``), and ``reason``: what says so."""

    supported: bool
    reason: str


def _cpp_compiler() -> str:
    """Return the C++ compiler Inductor runs (``torch._inductor.config.cpp.cxx``'s last entry)."""
    if sys.platform == "win32":
        return os.environ.get("CXX", "cl")
    return os.environ.get("CXX", "clang++" if sys.platform == "darwin" else "g++")


def _torch_release() -> tuple[int, int]:
    """Return this torch's release (major, minor): ``2.6.0+cu124`` -> ``(2, 6)``, ``2.7.0a0+git...`` -> ``(2, 7)``."""
    import torch

    major, minor = str(torch.__version__).split(".")[:2]
    return int(major), int(minor)


def _missing_toolchain(device_type: str) -> tuple[str, str]:
    """Return what building Inductor's code for ``device_type`` needs: (what is missing or ``""``, what was found)."""
    if device_type == "cpu":
        compiler = _cpp_compiler()
        if shutil.which(compiler) is None:
            return f"a C++ compiler, and {compiler!r} is not on PATH: set CXX to one", ""
        return "", f"the C++ compiler {compiler!r} is on PATH"
    if device_type in ("cuda", "xpu"):
        if importlib.util.find_spec("triton") is None:
            return "the triton package, which is not installed", ""
        return "", "the triton package is installed"
    return "", ""


def _vendor_codegen(device_type: str) -> str:
    """Return how the vendor registered Inductor code generation for ``device_type``; ``""`` when it did not.

    Reads only modules already imported: a vendor that registered one has imported them.
    """
    codegen = sys.modules.get("torch._inductor.codegen.common")
    if device_type in getattr(codegen, "device_codegens", {}):
        return "its vendor registered a code generator (register_backend_for_device)"
    torch = sys.modules.get("torch")
    privateuse1 = getattr(getattr(torch, "_C", None), "_get_privateuse1_backend_name", None)
    if privateuse1 is None or privateuse1() != device_type:
        return ""
    module = getattr(torch, device_type, None)
    if module is None or _torch_release() < VENDOR_CODEGEN_SINCE:
        return ""
    if all(hasattr(module, name) for name in VENDOR_CODEGEN_ATTRIBUTES):
        return f"its device module torch.{device_type} provides {', '.join(VENDOR_CODEGEN_ATTRIBUTES)}"
    return ""


def _inductor_registry_has(device_type: str) -> bool:
    """Return whether Inductor's registry, once it has registered every code generator it knows, has ``device_type``.

    Imports Inductor's code generation (seconds): only :func:`check` asks, for ``"inductor"``.
    """
    from torch._inductor.codegen import common

    # torch 2.4 has no init_backend_registration here (GraphLowering's registers cpu, cuda and xpu only, which
    # this function is not asked about): its registry holds what vendors registered themselves.
    register_all = getattr(common, "init_backend_registration", None)
    if register_all is not None:
        register_all()
    return common.get_scheduling_for_device(device_type) is not None


def inductor_support(device_type: str, *, ask_inductor: bool = False) -> InductorSupport:
    """Return whether Inductor generates code for ``device_type`` here, and why.

    Inductor generates code for torch's own device types in :data:`INDUCTOR_DEVICE_TYPES` where
    it can be built: cpu needs a C++ compiler on ``PATH`` (``$CXX``, else ``g++``, ``clang++`` on
    macOS, ``cl`` on Windows), cuda and xpu the ``triton`` package. Any other device type has it
    only where its vendor registered a code generator (``register_backend_for_device``, or, for
    the PrivateUse1 device, the :data:`VENDOR_CODEGEN_ATTRIBUTES` of its device module). A cuda
    GPU older than Triton supports is not seen here (that needs a device query): Inductor's own
    error tells it.

    With ``ask_inductor``, a device type that the cheap facts leave without a code generator
    is also looked up in Inductor's own registry (which imports Inductor: seconds); a vendor
    may register its generator only when Inductor is imported.

    >>> inductor_support("cuda")                # a CUDA build of torch without triton
    InductorSupport(supported=False, reason="Inductor's Triton code for 'cuda' needs the triton package, ...")
    """
    generated = INDUCTOR_DEVICE_TYPES.get(device_type)
    since = INDUCTOR_SINCE.get(device_type)
    if generated is not None and since is not None and _torch_release() < since:
        import torch

        older = f"Inductor generates {generated} for {device_type!r} from torch {since[0]}.{since[1]} on"
        return InductorSupport(False, f"{older}; this is torch {torch.__version__}")
    if generated is not None:
        missing, found = _missing_toolchain(device_type)
        if missing:
            return InductorSupport(False, f"Inductor's {generated} code for {device_type!r} needs {missing}")
        return InductorSupport(
            True, f"Inductor generates {generated} for {device_type!r}" + (f"; {found}" if found else "")
        )
    registered = _vendor_codegen(device_type)
    if not registered and ask_inductor and _inductor_registry_has(device_type):
        registered = "Inductor's registry has one (torch._inductor.codegen.common.get_scheduling_for_device)"
    if registered:
        return InductorSupport(True, f"Inductor generates code for {device_type!r}: {registered}")
    return InductorSupport(
        False,
        f"Inductor has no code generator for device type {device_type!r}: torch has none for it, "
        "and its vendor registered none",
    )


def choose(device_type: str, vendor_backend: str = "") -> CompileChoice:
    """Return the backend for ``device_type`` when none was set: the vendor's, else Inductor, else the fallback.

    First match: ``vendor_backend``, the spec's :attr:`~accelhal.BackendSpec.compile_backend`
    (which the vendor's package registers with ``torch._dynamo``); :data:`INDUCTOR` where
    :func:`inductor_support` says Inductor generates code for the device type; else
    :data:`FALLBACK`, whose captured graphs run on the device's own eager kernels, so it works
    wherever the device runs eager PyTorch. Imports neither ``torch._dynamo`` nor Inductor and
    creates no device context.

    >>> choose("cpu")                           # g++ on PATH
    CompileChoice(backend='inductor', reason="Inductor generates C++ for 'cpu'; the C++ compiler ...", ...)
    >>> choose("testdev").backend               # an out-of-tree device with no code generator registered
    'aot_eager'
    """
    if vendor_backend:
        return CompileChoice(
            vendor_backend, f"the vendor's torch.compile backend for {device_type!r}, declared in its spec", "vendor"
        )
    support = inductor_support(device_type)
    if support.supported:
        return CompileChoice(INDUCTOR, support.reason, "inductor")
    reason = f"{support.reason}; {FALLBACK!r} runs the captured graphs with the device's own kernels"
    return CompileChoice(FALLBACK, reason, "fallback")


def registered_backends() -> list[str]:
    """Return every backend name ``torch.compile`` accepts here: ``torch._dynamo.list_backends(exclude_tags=())``.

    Imports ``torch._dynamo`` (seconds, once per process), which also loads the names vendors
    register through the ``torch_dynamo_backends`` entry points.
    """
    import torch._dynamo

    names: Sequence[str] = torch._dynamo.list_backends(exclude_tags=())
    return list(names)


def check(backend: object, device_type: str, vendor_backend: str = "") -> None:
    """Raise :class:`~accelhal.errors.CompileBackendError` unless ``backend`` can be used on ``device_type``.

    Refused: a name :func:`registered_backends` does not list, and :data:`INDUCTOR` where
    :func:`inductor_support` says it generates no code, Inductor's own registry asked too; the
    error names the backend that works there (:func:`choose`; not the vendor's own backend
    when that is the name refused: its package has not registered it in this process).
    """
    registered = registered_backends()
    if not isinstance(backend, str) or backend not in registered:
        reason = "it is not a torch.compile backend known to this torch (torch._dynamo.list_backends(exclude_tags=()))"
    elif backend == INDUCTOR and not (support := inductor_support(device_type, ask_inductor=True)).supported:
        reason = support.reason
    else:
        return
    vendor = "" if backend == vendor_backend else vendor_backend  # the vendor's own name, unregistered here
    working = choose(device_type, vendor).backend
    raise CompileBackendError(backend, device_type, reason, registered=registered, working=working)
