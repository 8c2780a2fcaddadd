"""DeepSpeed's op builders, built and cached by accelhal.

The adapter's ``get_op_builder`` returns DeepSpeed's own builder class for the device with
``jit_load`` replaced: it builds through :class:`DeepSpeedOp`, an accelhal
:class:`~accelhal.ops.OpBuilder` (a keyed directory of the op cache, one build across processes
under accelhal's lock), with DeepSpeed's own flags. What the key holds:
``docs/migrating-from-deepspeed.md``, section 5.
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
from pathlib import Path
from types import ModuleType
from typing import Any

from accelhal.ops import Compatibility, OpBuilder
from accelhal.ops import cache as ops_cache

KEY_ENVIRONMENT = (
    "CXX",
    "CC",
    "CFLAGS",
    "CXXFLAGS",
    "LDFLAGS",
    "TORCH_CUDA_ARCH_LIST",
    "CUDA_HOME",
    "ROCM_HOME",
    "DS_BUILD_OPS",
)
"""Variables whose values change what DeepSpeed's ``jit_load`` compiles."""


@functools.cache
def cpu_identity() -> str:
    """A digest of the CPU's model and feature flags (``/proc/cpuinfo``; the platform's answer elsewhere)."""
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    wanted = ("model name", "flags", "Features", "CPU implementer", "CPU part", "vendor_id")
    found: dict[str, str] = {}
    for line in lines:
        key, _, value = line.partition(":")
        key = key.strip()
        if key in wanted and key not in found:
            found[key] = value.strip()
    text = repr(sorted(found.items())) if found else f"{platform.machine()} {platform.processor()}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _cuda_architectures(builder: Any) -> str:
    """The CUDA architectures DeepSpeed compiles a CUDA op for here (empty for a CPU op)."""
    from deepspeed.ops.op_builder.builder import CUDAOpBuilder

    if not isinstance(builder, CUDAOpBuilder):
        return ""
    listed = os.environ.get("TORCH_CUDA_ARCH_LIST", "").strip()
    if listed:
        return listed
    import torch

    if not torch.cuda.is_available():
        return "no device"
    found = {torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())}
    return ";".join(f"{major}.{minor}" for major, minor in sorted(found))


class DeepSpeedOp(OpBuilder):
    """One of DeepSpeed's op builders, seen as an accelhal op: keyed, locked, cached.

    Args:
        builder: the DeepSpeed builder instance (a subclass of DeepSpeed's ``OpBuilder``).
        deepspeed_class: DeepSpeed's own class of the builder, whose ``jit_load`` compiles.
        backend: the accelhal backend's name, for messages.
    """

    def __init__(self, builder: Any, deepspeed_class: type[Any], backend: str) -> None:
        super().__init__(builder.name)
        self.deepspeed_builder = builder
        self.deepspeed_class = deepspeed_class
        self._backend = backend
        self._directory: Path | None = None

    @property
    def backend(self) -> str:
        """The accelhal backend named in messages."""
        return self._backend

    def sources(self) -> list[str]:
        """DeepSpeed's sources for the op, as absolute paths inside the installed DeepSpeed."""
        builder = self.deepspeed_builder
        return [os.path.abspath(builder.deepspeed_src_path(p)) for p in builder.strip_empty_entries(builder.sources())]

    def include_paths(self) -> list[str]:
        """DeepSpeed's include directories for the op (their headers enter the key)."""
        builder = self.deepspeed_builder
        paths = builder.strip_empty_entries(builder.include_paths())
        return [os.path.abspath(builder.deepspeed_src_path(p)) for p in paths]

    def cxx_args(self) -> list[str]:
        """Empty: DeepSpeed computes its flags when it compiles; the key holds what they derive from."""
        return []

    def nvcc_args(self) -> list[str]:
        """Empty, as :meth:`cxx_args`."""
        return []

    def key_environment(self) -> tuple[str, ...]:
        """:data:`KEY_ENVIRONMENT`."""
        return KEY_ENVIRONMENT

    def key_extras(self) -> dict[str, str]:
        """DeepSpeed's version and builder class, the CPU's identity and the CUDA architectures."""
        import deepspeed

        cls = self.deepspeed_class
        return {
            "deepspeed": str(deepspeed.__version__),
            "deepspeed_builder": f"{cls.__module__}.{cls.__qualname__}",
            "cpu": cpu_identity(),
            "cuda_architectures": _cuda_architectures(self.deepspeed_builder),
        }

    def build_directory(self) -> Path:
        """The keyed directory (computed once per instance: the key hashes every source and header)."""
        if self._directory is None:
            self._directory = super().build_directory()
        return self._directory

    def compatibility(self) -> Compatibility:
        """Built already (nothing else is needed to load it), else DeepSpeed's ``is_compatible()``."""
        directory = self.build_directory()
        if ops_cache.read_manifest(directory) is not None:
            return Compatibility(True, f"built in {directory}")
        builder = self.deepspeed_builder
        if builder.is_compatible(False):
            return Compatibility(True, "DeepSpeed's builder is compatible")
        log = getattr(builder, "error_log", None)
        return Compatibility(False, f"DeepSpeed's {type(builder).__name__}.is_compatible() is False: {log or ''}")

    def compile_into(self, directory: Path) -> Any:
        """DeepSpeed's own ``jit_load``, with torch's extension directory set to ``directory``."""
        (directory / self.name / ops_cache.TORCH_BATON).unlink(missing_ok=True)  # we hold the lock: a stale one
        saved = os.environ.get("TORCH_EXTENSIONS_DIR")
        os.environ["TORCH_EXTENSIONS_DIR"] = str(directory)
        try:
            return self.deepspeed_class.jit_load(self.deepspeed_builder, verbose=False)
        finally:
            if saved is None:
                os.environ.pop("TORCH_EXTENSIONS_DIR", None)
            else:
                os.environ["TORCH_EXTENSIONS_DIR"] = saved


@functools.cache
def built_by_accelhal(deepspeed_class: type[Any], backend: str) -> type[Any]:
    """``deepspeed_class`` (one of DeepSpeed's builders) whose ``jit_load`` builds through accelhal's cache.

    The class returned is a subclass, and DeepSpeed's ``load()`` may look past the builder's own
    class with ``super(type(self), self).load()`` (0.19.8's ``PinMemoryBuilder``: DeepSpeed's
    ``OpBuilder.load`` under a process-wide cache). Between the subclass and ``deepspeed_class``
    sits a class whose ``load`` is ``super(deepspeed_class, self).load``, so that lookup finds
    what it finds on DeepSpeed's own class, not ``deepspeed_class.load`` again.
    """

    def jit_load(self: Any, verbose: bool = True) -> ModuleType:
        module = DeepSpeedOp(self, deepspeed_class, backend).jit_load(verbose)
        deepspeed_class._loaded_ops[self.name] = module  # DeepSpeed's load() answers from here next time
        return module

    def load_above(self: Any, verbose: bool = True) -> ModuleType:
        return super(deepspeed_class, self).load(verbose)  # type: ignore[no-any-return]

    jit_load.__doc__ = "Build the op once into accelhal's op cache (keyed, locked) and import it."
    load_above.__doc__ = f"The ``load`` above DeepSpeed's {deepspeed_class.__qualname__}."
    above = type(deepspeed_class.__name__, (deepspeed_class,), {"load": load_above, "__module__": __name__})
    namespace = {
        "jit_load": jit_load,
        "load": deepspeed_class.load,
        "__module__": __name__,
        "__qualname__": deepspeed_class.__qualname__,
        "__doc__": f"DeepSpeed's {deepspeed_class.__qualname__}, built and cached by accelhal.",
    }
    return type(deepspeed_class.__name__, (above,), namespace)
