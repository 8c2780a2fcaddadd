"""The :class:`OpBuilder` base class: one custom C++/CUDA op, built just in time or ahead of time.

A builder names its sources, include paths and per-toolchain flags; :meth:`OpBuilder.load` returns the
compiled Python module. This module imports neither torch nor a compiler: torch is imported when something
is built or loaded. How to write a builder: ``docs/ops.md``.
"""

from __future__ import annotations

import importlib.util
import inspect
import logging
import os
import platform
import shutil
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

from accelhal.errors import OpBuildError, UnsupportedFeatureError
from accelhal.ops import cache
from accelhal.ops.lock import BuildLock

logger = logging.getLogger("accelhal.ops")

_loaded: dict[str, ModuleType] = {}
"""Modules already loaded in this process, by build directory."""


@dataclass(frozen=True)
class Compatibility:
    """What :meth:`OpBuilder.compatibility` says: truthy when the op can be built or loaded here.

    >>> verdict = Compatibility(False, "ninja is not installed")
    >>> bool(verdict), verdict.reason
    (False, 'ninja is not installed')
    """

    ok: bool
    reason: str

    def __bool__(self) -> bool:
        return self.ok


class OpBuilder:
    """Base class of op builders; subclass it and override :meth:`sources` (at least).

    Class attributes:
        NAME: the op's name; also the extension module's name (a Python identifier).
        BACKEND: the backend the builder is written for (used in messages), e.g. ``"cpu"``.
    """

    NAME: ClassVar[str] = ""
    BACKEND: ClassVar[str] = ""

    def __init__(self, name: str | None = None) -> None:
        self.name = name or self.NAME or type(self).__name__
        if not self.name.isidentifier():
            raise ValueError(f"an op builder's NAME must be a Python identifier, got {self.name!r}")

    # ------------------------------------------------------------------ what to build
    def sources(self) -> list[str]:
        """Source files, relative to :meth:`source_root` or absolute (``.cu`` ones go to nvcc)."""
        raise NotImplementedError(f"{type(self).__name__} must define sources()")

    def include_paths(self) -> list[str]:
        """The op's own include directories (their header contents enter the cache key)."""
        return []

    def cxx_args(self) -> list[str]:
        """Flags for the host C++ compiler."""
        return ["-O3"]

    def nvcc_args(self) -> list[str]:
        """Flags for nvcc (used only when a source is a ``.cu`` file)."""
        return ["-O3"]

    def extra_ldflags(self) -> list[str]:
        """Flags for the linker."""
        return []

    def key_environment(self) -> tuple[str, ...]:
        """Environment variables that change the build; their values enter the cache key."""
        return ("CXX", "CC")

    def key_extras(self) -> dict[str, str]:
        """Anything else that changes the build (a device architecture, a library version)."""
        return {}

    def source_root(self) -> Path:
        """The directory relative source paths start from: that of the module defining the class."""
        return Path(inspect.getfile(type(self))).resolve().parent

    def absolute_name(self) -> str:
        """The importable name of an ahead-of-time build of this op (see :meth:`builder`)."""
        return f"accelhal_op_{self.name}"

    # ------------------------------------------------------------------ derived
    def _resolve(self, paths: list[str]) -> list[str]:
        root = self.source_root()
        return [str(p if Path(p).is_absolute() else root / p) for p in paths]

    def absolute_sources(self) -> list[str]:
        """:meth:`sources` as absolute paths."""
        return self._resolve(self.sources())

    def absolute_include_paths(self) -> list[str]:
        """:meth:`include_paths` as absolute paths."""
        return self._resolve(self.include_paths())

    @property
    def backend(self) -> str:
        """The backend named in messages (``BACKEND``, or ``"?"``)."""
        return self.BACKEND or "?"

    def compatibility(self) -> Compatibility:
        """Whether this op can be built here, and why: torch, a C++ compiler, ninja and the sources.

        Subclasses add their own checks; ``super().compatibility() and Compatibility(...)``
        keeps the reason of the first failure.
        """
        return self._check_toolchain()

    def is_compatible(self, verbose: bool = False) -> bool:
        """DeepSpeed's question as a plain bool; the reason is :meth:`compatibility`'s (logged when ``verbose``)."""
        verdict = self.compatibility()
        if verbose and not verdict:
            logger.warning("accelhal: op %r is not compatible: %s", self.name, verdict.reason)
        return verdict.ok

    def _check_toolchain(self) -> Compatibility:
        if importlib.util.find_spec("torch") is None:
            return Compatibility(False, "torch is not installed")
        compiler = os.environ.get("CXX", "c++")
        if shutil.which(compiler) is None:
            return Compatibility(False, f"the C++ compiler {compiler!r} is not on PATH (set CXX to one)")
        if shutil.which("ninja") is None:
            return Compatibility(False, "ninja is not installed (pip install ninja); torch builds extensions with it")
        missing = cache.existing(self.absolute_sources())
        if missing:
            return Compatibility(False, f"source files are missing: {', '.join(missing)}")
        return Compatibility(True, f"{compiler} and ninja found; sources present")

    def build_inputs(self) -> dict[str, Any]:
        """Everything that determines the built module; its hash names the cache directory."""
        import torch

        from accelhal._version import __version__

        sources = self.absolute_sources()
        return {
            "op": self.name,
            "builder": f"{type(self).__module__}.{type(self).__qualname__}",
            "sources": {Path(s).name + f"#{i}": cache.file_digest(s) for i, s in enumerate(sources)},
            "headers": {p: cache.header_digests(p) for p in self.absolute_include_paths()},
            "cxx": self.cxx_args(),
            "nvcc": self.nvcc_args(),
            "ldflags": self.extra_ldflags(),
            "environment": {k: os.environ.get(k, "") for k in self.key_environment()},
            "extras": self.key_extras(),
            "torch": torch.__version__,
            "torch_cuda": str(torch.version.cuda),
            "torch_hip": str(getattr(torch.version, "hip", None)),
            "accelhal": __version__,
            "python": sys.version,
            "abi": sysconfig.get_config_var("EXT_SUFFIX"),
            "machine": platform.machine(),
        }

    def build_directory(self) -> Path:
        """The keyed cache directory of this op: ``<ACCELHAL_OPS_CACHE>/<name>-<hash of build_inputs()>``."""
        from accelhal.process.settings import OpsSettings

        root = Path(OpsSettings.from_environ().cache)
        return root / f"{self.name}-{cache.digest_inputs(self.build_inputs())}"

    # ------------------------------------------------------------------ building
    def load(self, verbose: bool = True) -> ModuleType:
        """The op's module: an ahead-of-time build if one is importable, else :meth:`jit_load`."""
        if importlib.util.find_spec(self.absolute_name()) is not None:
            import torch  # noqa: F401  (the extension links against torch's libraries)

            return importlib.import_module(self.absolute_name())
        return self.jit_load(verbose)

    def jit_load(self, verbose: bool = True) -> ModuleType:
        """Build (once, across processes) into the keyed cache directory and import the module.

        Raises :class:`~accelhal.UnsupportedFeatureError` when :meth:`compatibility` says no,
        :class:`~accelhal.errors.OpBuildError` with the compiler's output when the build
        fails, and :class:`~accelhal.errors.BuildLockTimeoutError` when another live
        process holds the build for longer than ``ACCELHAL_OPS_LOCK_TIMEOUT``.
        """
        if not self.is_compatible(verbose):  # a DeepSpeed-style override of is_compatible counts too
            verdict = self.compatibility()
            reason = "is_compatible() is False" if verdict else verdict.reason
            raise UnsupportedFeatureError(self.backend, f"op {self.name!r}", reason)
        from accelhal.process.settings import OpsSettings

        directory = self.build_directory()
        module = self._load_finished(directory)
        if module is not None:
            return module
        directory.mkdir(parents=True, exist_ok=True)
        settings = OpsSettings.from_environ()
        with BuildLock(str(directory / cache.LOCK), timeout=settings.lock_timeout, stale_after=settings.lock_stale):
            module = self._load_finished(directory, warn=False)  # another process built it while we waited
            if module is None:
                module = self._build(directory, verbose)
        return module

    def _load_finished(self, directory: Path, warn: bool = True) -> ModuleType | None:
        """The finished build in ``directory``; ``None`` when there is none, or one that must be built again."""
        key = str(directory)
        if key in _loaded:
            return _loaded[key]
        manifest = cache.read_manifest(directory)
        if manifest is None:
            return None
        problem = cache.module_problem(manifest)
        if problem is not None:  # loading it could crash the process: build it again instead
            if warn:
                logger.warning(
                    "accelhal: the cached build of op %r in %s %s; building it again", self.name, key, problem
                )
            return None
        import torch  # noqa: F401  (the extension links against torch's libraries)

        try:
            module = cache.import_extension(manifest["module_name"], manifest["module_file"])
        except ImportError as exc:
            raise OpBuildError(
                self.name,
                self.backend,
                f"the built module does not import: {exc}; delete the build directory to build it again",
                build_directory=key,
            ) from exc
        _loaded[key] = module
        return module

    def _build(self, directory: Path, verbose: bool) -> ModuleType:
        """Compile under our lock; torch's own baton in ``directory`` can only be a stale one."""
        from torch.utils import cpp_extension

        cache.clear(directory)  # a rejected build's files (and torch's stale baton) must not be reused
        versioner = getattr(cpp_extension, "JIT_EXTENSION_VERSIONER", None)
        if versioner is not None:  # our directory is keyed already; torch's renaming would only confuse
            versioner.entries.pop(self.name, None)
        started = time.monotonic()
        if verbose:
            logger.warning("accelhal: building op %r in %s (this takes a while once)", self.name, directory)
        try:
            loaded = self.compile_into(directory)
        except (RuntimeError, OSError, ImportError) as exc:
            log = str(exc)
            cache.write_atomically(directory / cache.BUILD_LOG, log)
            raise OpBuildError(
                self.name, self.backend, type(exc).__name__, log=log, build_directory=str(directory)
            ) from exc
        if not isinstance(loaded, ModuleType):
            raise OpBuildError(self.name, self.backend, f"torch returned {loaded!r}, not a module")
        module = loaded
        cache.write_manifest(directory, module, self.build_inputs())
        (directory / cache.BUILD_LOG).unlink(missing_ok=True)
        _loaded[str(directory)] = module
        if verbose:
            logger.warning("accelhal: built op %r in %.1f s", self.name, time.monotonic() - started)
        return module

    def compile_into(self, directory: Path) -> Any:
        """Compile the op into ``directory`` and return the loaded module; called under the build lock.

        The default is ``torch.utils.cpp_extension.load`` on :meth:`sources` with the flags. A
        builder whose compilation belongs to another tool overrides it and keeps the cache
        key, the lock and the manifest (DeepSpeed's builders, in ``accelhal.compat.deepspeed``).
        """
        from torch.utils import cpp_extension

        return cpp_extension.load(
            name=self.name,
            sources=self.absolute_sources(),
            extra_cflags=self.cxx_args(),
            extra_cuda_cflags=self.nvcc_args(),
            extra_ldflags=self.extra_ldflags(),
            extra_include_paths=self.absolute_include_paths(),
            build_directory=str(directory),
            verbose=False,
        )

    # ------------------------------------------------------------------ ahead of time
    def builder(self) -> Any:
        """A setuptools ``Extension`` for an ahead-of-time build, named :meth:`absolute_name`.

        Use it with the accelerator's ``build_extension()`` command class::

            setup(ext_modules=[FusedAdamWBuilder().builder()],
                  cmdclass={"build_ext": get_accelerator().build_extension()})

        After installation :meth:`load` imports that module instead of compiling.
        """
        from torch.utils.cpp_extension import CppExtension, CUDAExtension

        sources = self.absolute_sources()
        kind = CUDAExtension if any(s.endswith(".cu") for s in sources) else CppExtension
        return kind(  # type: ignore[no-untyped-call]
            name=self.absolute_name(),
            sources=sources,
            include_dirs=self.absolute_include_paths(),
            extra_compile_args={"cxx": self.cxx_args(), "nvcc": self.nvcc_args()},
            extra_link_args=self.extra_ldflags(),
        )
