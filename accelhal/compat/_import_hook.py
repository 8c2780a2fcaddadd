"""Act on a framework's module right after it executes: a one-shot ``sys.meta_path`` finder.

An adapter subclasses :class:`AfterImport`, names the module in :attr:`~AfterImport.target` and
arms an instance with :func:`arm`; the finder passes on the spec the other finders give, with a
loader that runs :meth:`~AfterImport.after` on the executed module, and removes itself on first
use. Arming again replaces an armed finder of the same class; :func:`disarm` removes it. This
module imports only ``sys`` and ``threading`` (why: ``docs/performance.md``).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType

_lock = threading.Lock()


class AfterImport:
    """A finder that runs :meth:`after` once :attr:`target` has executed, then leaves ``sys.meta_path``."""

    target: ClassVar[str]
    """The dotted name of the module to act on."""

    def after(self, module: ModuleType) -> None:
        """Act on ``module`` (just executed, already in ``sys.modules``); an exception fails its import."""
        raise NotImplementedError

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        """The regular spec of :attr:`target`, whose loader also runs :meth:`after`; ``None`` otherwise."""
        if fullname != self.target:
            return None
        disarm(type(self))
        spec = None
        for finder in list(sys.meta_path):
            spec = finder.find_spec(fullname, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader: Any = spec.loader
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            self.after(module)

        loader.exec_module = exec_module  # this loader instance serves this one module only
        return spec


def arm(finder: AfterImport) -> None:
    """Put ``finder`` first on ``sys.meta_path``, replacing any armed finder of its class."""
    with _lock:
        sys.meta_path[:] = [f for f in sys.meta_path if type(f) is not type(finder)]
        sys.meta_path.insert(0, finder)


def disarm(kind: type[AfterImport]) -> None:
    """Remove the armed finders of class ``kind`` (a no-op when none is armed)."""
    with _lock:
        sys.meta_path[:] = [f for f in sys.meta_path if type(f) is not kind]


def is_armed(kind: type[AfterImport]) -> bool:
    """Whether a finder of class ``kind`` is on ``sys.meta_path``."""
    return any(type(f) is kind for f in sys.meta_path)
