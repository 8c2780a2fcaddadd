"""DeepSpeed gets accelhal's accelerator from its first line: an import hook, and the ``.pth`` file that arms it.

:func:`arm` puts a one-shot finder on :data:`sys.meta_path` that gives DeepSpeed's
``real_accelerator`` module the adapter before any other DeepSpeed module asks it;
:func:`write_pth` writes ``zz-accelhal-deepspeed.pth``, which arms it in every interpreter when
``ACCELHAL_DEEPSPEED`` is set, and otherwise only reads ``os.environ``: no import, no hook. See
``docs/migrating-from-deepspeed.md``, section 3.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from accelhal.compat import _import_hook
from accelhal.errors import ConfigurationError

if TYPE_CHECKING:
    from accelhal.contract.accelerator import Accelerator

TARGET = "deepspeed.accelerator.real_accelerator"
"""The DeepSpeed module that holds its accelerator (``ds_accelerator``, ``set_accelerator``)."""
ENABLE = "ACCELHAL_DEEPSPEED"
DISABLE_OPS = "ACCELHAL_DEEPSPEED_DISABLE_OPS"
PTH_NAME = "zz-accelhal-deepspeed.pth"
"""Sorted after the ``.pth`` files that may put accelhal on ``sys.path`` (``site`` runs them in name order)."""
PTH_LINE = (
    f'import os; os.environ.get("{ENABLE}", "").strip().lower() not in ("", "0", "false", "no", "off") and '
    f'__import__("accelhal.compat.deepspeed._hook", fromlist=["_"]).arm_from_environment()\n'
)
"""The ``.pth`` file's one line: ``site`` executes it at every interpreter start-up."""


class _Finder(_import_hook.AfterImport):
    """Finds nothing itself; the spec of :data:`TARGET` it passes on installs the adapter."""

    target = TARGET

    def __init__(self, accelerator: Accelerator | None, disable_ops: tuple[str, ...], error: Exception | None) -> None:
        self.accelerator = accelerator
        self.disable_ops = disable_ops
        self.error = error

    def after(self, module: ModuleType) -> None:
        """Give DeepSpeed's freshly executed module the adapter (or raise the recorded error or the refusal)."""
        if self.error is not None:
            raise self.error
        from accelhal.compat.deepspeed._releases import SUPPORTED

        SUPPORTED.check()
        module.set_accelerator(_adapter(self.accelerator, self.disable_ops))


def _adapter(accelerator: Accelerator | None, disable_ops: tuple[str, ...]) -> Any:
    from accelhal.compat.deepspeed._adapter import wrap

    return wrap(accelerator, disable_ops)


def arm(accelerator: Accelerator | None = None, disable_ops: Sequence[str] = ()) -> bool:
    """Install the adapter into DeepSpeed when DeepSpeed is imported in this process.

    Returns False, and arms nothing, when DeepSpeed's accelerator module is imported already.

    ``accelerator``: the accelhal accelerator to wrap (``None``: the active one when
    DeepSpeed is imported). Arming again replaces the previous arming.
    """
    if TARGET in sys.modules:
        return False
    _arm(_Finder(accelerator, tuple(disable_ops), None))
    return True


def _arm(finder: _Finder) -> None:
    _import_hook.arm(finder)


def disarm() -> None:
    """Remove the hook (a no-op when it is not armed)."""
    _import_hook.disarm(_Finder)


def parse_disable_ops(raw: str | None) -> tuple[str, ...]:
    """``ACCELHAL_DEEPSPEED_DISABLE_OPS``: op-builder class names separated by commas (unset or blank: none)."""
    if raw is None or not raw.strip():
        return ()
    names = tuple(part.strip() for part in raw.split(","))
    if not all(name.isidentifier() for name in names):
        raise ConfigurationError(
            f"{DISABLE_OPS}={raw!r} must be op-builder class names separated by commas "
            "(for example 'ShareMemCommBuilder,FusedAdamBuilder')",
            variable=DISABLE_OPS,
            value=raw,
        )
    return names


def arm_from_environment() -> bool:
    """Arm the hook when ``ACCELHAL_DEEPSPEED`` is true; what the ``.pth`` file calls at start-up.

    Never raises at start-up: a malformed variable is raised when DeepSpeed is imported,
    so the job that relies on it stops there, with the variable and value named.
    """
    from accelhal.process.settings import parse_bool

    try:
        if not parse_bool(ENABLE, os.environ.get(ENABLE)):
            return False
        ops = parse_disable_ops(os.environ.get(DISABLE_OPS))
    except ConfigurationError as exc:
        _arm(_Finder(None, (), exc))
        return True
    return arm(None, ops)


def site_packages() -> Path:
    """The running interpreter's site-packages (``purelib``): where :func:`write_pth` writes by default."""
    return Path(sysconfig.get_paths()["purelib"])


def write_pth(directory: Path | None = None) -> Path:
    """Write :data:`PTH_NAME` into ``directory`` (default :func:`site_packages`); returns its path."""
    target = (site_packages() if directory is None else Path(directory)) / PTH_NAME
    from accelhal.process.cache_files import (
        write_atomically,  # not at start-up, where the .pth file imports this module
    )

    write_atomically(target, PTH_LINE, shared=True)
    return target


def remove_pth(directory: Path | None = None) -> Path | None:
    """Remove :data:`PTH_NAME` from ``directory``; returns the path removed, or None."""
    target = (site_packages() if directory is None else Path(directory)) / PTH_NAME
    try:
        target.unlink()
    except FileNotFoundError:
        return None
    return target
