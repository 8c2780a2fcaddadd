"""Which ``torch.compile`` backend works on a device, known without compiling anything.

:meth:`accelhal.Accelerator.get_compile_backend` answers with :func:`choose`, first match:

1. the name :meth:`~accelhal.Accelerator.set_compile_backend` chose (:func:`check` checked it);
2. the vendor's backend, declared by the backend's spec (:attr:`accelhal.BackendSpec.compile_backend`;
   hpu: ``"hpu_backend"``), which the vendor's package registers with ``torch._dynamo``;
3. :data:`INDUCTOR` where Inductor generates code for the device type (:func:`inductor_support`);
4. :data:`FALLBACK`, ``"aot_eager"``: the graphs Dynamo captures, through AOTAutograd, run by
   the device's own eager kernels. Nothing is generated, so it runs wherever the device runs
   eager PyTorch, out-of-tree (PrivateUse1) devices included, for which torch itself has no
   Inductor code generation.

Inductor generates code for torch's own device types in :data:`INDUCTOR_DEVICE_TYPES` where
what it generates can be built: cpu needs a C++ compiler (Inductor's own choice: ``$CXX``, else
``g++``, ``clang++`` on macOS, ``cl`` on Windows), cuda and xpu need the ``triton`` package. Any
other device type has it only where its vendor registered a code generator: with
``torch._inductor.codegen.common.register_backend_for_device``, or, for the PrivateUse1 device,
as attributes ``Scheduling``, ``PythonWrapperCodegen`` and ``CppWrapperCodegen`` of its device
module, which Inductor registers on first use.

Choosing reads only facts that cost microseconds: whether a package is installed
(``importlib.util.find_spec``), a program on ``PATH``, modules the process already imported. It
never imports ``torch._dynamo`` or Inductor (seconds, see ``docs/compile.md``) and creates no
device context. :func:`check` imports ``torch._dynamo``, whose registry alone knows the backend
names, and for ``"inductor"`` on a device type the cheap facts leave without a code generator
it asks Inductor's own registry too (a vendor may register its generator only when Inductor
is imported). Not seen without a device query, and so left
to Inductor's own error: a cuda GPU older than Triton supports (compute capability below 7.0).

    >>> choose("cpu")                           # g++ on PATH
    CompileChoice(backend='inductor', reason="Inductor generates C++ for 'cpu'; the C++ compiler ...", ...)
    >>> choose("testdev").backend               # an out-of-tree device with no code generator registered
    'aot_eager'
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
    """The C++ compiler Inductor runs (``torch._inductor.config.cpp.cxx``'s last entry)."""
    if sys.platform == "win32":
        return os.environ.get("CXX", "cl")
    return os.environ.get("CXX", "clang++" if sys.platform == "darwin" else "g++")


def _torch_release() -> tuple[int, int]:
    """This torch's release as (major, minor): ``2.6.0+cu124`` -> ``(2, 6)``, ``2.7.0a0+git...`` -> ``(2, 7)``."""
    import torch

    major, minor = str(torch.__version__).split(".")[:2]
    return int(major), int(minor)


def _missing_toolchain(device_type: str) -> tuple[str, str]:
    """What building Inductor's code for ``device_type`` needs: (what is missing or ``""``, what was found)."""
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
    """How the vendor registered Inductor code generation for ``device_type``; ``""`` when it did not.

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
    """Whether Inductor's own registry, once it has registered every code generator it knows, has ``device_type``.

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
    """Whether Inductor generates code for ``device_type`` here, and why (see the module's docstring).

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
    """The backend for ``device_type`` when none was set: the vendor's, else Inductor where it works, else the fallback.

    ``vendor_backend`` is the spec's :attr:`~accelhal.BackendSpec.compile_backend`. Imports
    neither ``torch._dynamo`` nor Inductor.
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
    """Every backend name ``torch.compile`` accepts here: ``torch._dynamo.list_backends(exclude_tags=())``.

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
