"""PyTorch Lightning on any accelhal backend (accelhal's ``lightning`` extra).

Public: :func:`register` (``Trainer(accelerator="accelhal")``), :class:`AccelhalAccelerator`,
:func:`accelerator_class` (per package: ``lightning.pytorch``, ``pytorch_lightning``) and
:func:`ddp_strategy`. A Lightning release outside the supported range is refused with
:class:`~accelhal.UnsupportedReleaseError` before Lightning is imported. Importing this module
imports neither Lightning nor torch; the names below do, when used. Nothing else in accelhal
imports Lightning. See ``docs/lightning.md``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from accelhal.compat.lightning._lightning import AccelhalAccelerator
    from accelhal.compat.lightning._releases import LightningShape

__all__ = ["PACKAGES", "REGISTRY_NAME", "AccelhalAccelerator", "accelerator_class", "ddp_strategy", "register"]

REGISTRY_NAME = "accelhal"
"""The name under which :func:`register` enters the accelerator in Lightning's registry."""

PACKAGES: dict[str, str] = {
    "lightning.pytorch": "accelhal.compat.lightning._lightning",
    "pytorch_lightning": "accelhal.compat.lightning._pytorch_lightning",
}
"""The Lightning packages supported, each with the module holding its accelerator class."""


def __getattr__(name: str) -> Any:
    if name == "AccelhalAccelerator":
        return accelerator_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def accelerator_class(package: str = "lightning.pytorch") -> type[Any]:
    """The accelhal accelerator class for ``package`` (``"lightning.pytorch"`` or ``"pytorch_lightning"``).

    The two packages carry the same code under different names, and each Trainer only
    accepts subclasses of its own ``Accelerator``; both classes behave identically.
    Imports the package.

    Raises :class:`~accelhal.UnsupportedReleaseError` before importing it when the installed
    release is outside the supported range (:data:`~accelhal.compat.lightning._releases.RANGES`).
    """
    _checked(package)
    cls: type[Any] = importlib.import_module(PACKAGES[package]).AccelhalAccelerator
    return cls


def _checked(package: str) -> LightningShape:
    """The installed release's shape of ``package``; refuses an unknown package or a release outside the range."""
    if package not in PACKAGES:
        from accelhal.errors import ConfigurationError

        raise ConfigurationError(
            f"package must be one of {', '.join(map(repr, PACKAGES))}, got {package!r}",
            variable="package",
            value=package,
        )
    from accelhal.compat.lightning._releases import checked_shape

    return checked_shape(package)


def register(package: str = "lightning.pytorch") -> type[Any]:
    """Enter the accelerator into ``package``'s ``AcceleratorRegistry`` as ``"accelhal"``; returns its class.

    Idempotent. Lightning fills its registry from its own modules only and looks plugins
    up nowhere else, so this call (or an instance passed as ``accelerator=``) is needed
    once per process before the ``Trainer`` is built; ``strategy="ddp"`` children run
    the script again, and so call it again.

    Raises :class:`~accelhal.UnsupportedReleaseError` for a release outside the supported
    range, before anything is imported or registered; :class:`~accelhal.ConfigurationError`
    for an unknown ``package``; Lightning's ``MisconfigurationException`` when another
    accelerator holds the name.
    """
    shape = _checked(package)
    cls: type[Any] = importlib.import_module(PACKAGES[package]).AccelhalAccelerator
    registry = importlib.import_module(f"{package}.accelerators").AcceleratorRegistry
    entry = dict.get(registry, REGISTRY_NAME)  # the registry's own get() instantiates the accelerator
    if entry is None or entry[shape.entry_class] is not cls:
        cls.register_accelerators(registry)
    return cls


def ddp_strategy(package: str = "lightning.pytorch", **options: Any) -> Any:
    """A ``DDPStrategy`` whose process group uses the active backend's communication backend.

    ``options`` go to ``DDPStrategy`` (``start_method="spawn"``, ``find_unused_parameters``,
    ...); ``process_group_backend`` defaults to
    :meth:`~accelhal.Accelerator.communication_backend_name` (``"hccl"`` on npu, ``"gloo"``
    on cpu). Pass it with ``accelerator="accelhal"``::

        Trainer(accelerator="accelhal", strategy=ddp_strategy(), devices=4)

    Without it Lightning picks the backend from torch's device-to-backend table, and the
    accelerator refuses a run whose choice differs from the contract's.
    """
    import accelhal

    accelerator_class(package)  # validates the package name
    options.setdefault("process_group_backend", accelhal.get_accelerator().communication_backend_name())
    return importlib.import_module(f"{package}.strategies").DDPStrategy(**options)
