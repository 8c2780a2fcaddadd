"""The Lightning releases the adapter supports, and what differs between them.

``lightning`` (``lightning.pytorch``) and ``pytorch_lightning`` carry the same code under two
names and are released together; each distribution has its range, with the same ends.
:data:`SHAPES` records what the adapter relies on in each release: the ``Accelerator`` ABC's
members, the accelerator registry, the classes Lightning's "GPU available: ..., used" line
counts, and the attributes of Lightning's objects the accelerator sets.
``tests/data/lightning-shapes.json`` holds every release's real shape
(``scripts/record_lightning_shapes.py``); the tests check this table against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from accelhal.compat._releases import ReleaseRange, ShapeTable

SUPPORTED = ReleaseRange("lightning", "2.4.0", "2.6.6", "3")
"""The ``lightning`` releases supported (its ``lightning.pytorch``)."""
SUPPORTED_PL = ReleaseRange("pytorch_lightning", "2.4.0", "2.6.6", "3")
"""The ``pytorch_lightning`` releases supported."""
RANGES: Mapping[str, ReleaseRange] = {"lightning.pytorch": SUPPORTED, "pytorch_lightning": SUPPORTED_PL}
"""Each supported package with the range of the distribution that provides it."""


@dataclass(frozen=True)
class LightningShape:
    """What the adapter relies on in one Lightning release."""

    accelerator: Mapping[str, tuple[str, bool, str]]
    """Every member of Lightning's ``Accelerator`` (its Fabric base's too): kind, abstract, signature."""
    registry: Mapping[str, Any]
    """``_AcceleratorRegistry``'s ``register`` and ``get`` signatures, the keys of an entry, and the
    type ``available_accelerators()`` returns."""
    entry_class: str
    """The key of a registry entry that holds the accelerator's class."""
    gpu_used: Mapping[str, str]
    """Device type -> the class whose instances ``_log_device_info`` counts as "GPU ... used"."""
    attributes: tuple[str, ...]
    """The attributes of Lightning's objects the accelerator's ``setup`` sets, as ``Class.attribute``."""

    def record(self) -> dict[str, Any]:
        """The shape in the form ``tests/data/lightning-shapes.json`` records each release in."""
        return {
            "accelerator": {
                name: {"kind": kind, "abstract": abstract, "signature": signature}
                for name, (kind, abstract, signature) in sorted(self.accelerator.items())
            },
            "registry": dict(self.registry),
            "gpu_used": dict(self.gpu_used),
            "attributes": sorted(self.attributes),
        }


_FIRST = LightningShape(
    accelerator={
        "auto_device_count": ("static", True, "()"),
        "get_device_stats": ("method", False, "(self, device)"),
        "get_parallel_devices": ("static", True, "(devices)"),
        "is_available": ("static", True, "()"),
        "parse_devices": ("static", True, "(devices)"),
        "register_accelerators": ("class", False, "(cls, accelerator_registry)"),
        "setup": ("method", False, "(self, trainer)"),
        "setup_device": ("method", True, "(self, device)"),
        "teardown": ("method", True, "(self)"),
    },
    registry={
        "register": "(self, name, accelerator=None, description='', override=False, **init_params)",
        "get": "(self, name, default=None)",
        "entry": ["accelerator", "accelerator_name", "description", "init_params"],
        "available_accelerators": "list",
    },
    entry_class="accelerator",
    gpu_used={"cuda": "CUDAAccelerator", "mps": "MPSAccelerator"},
    attributes=(
        "MixedPrecision.device",
        "MixedPrecision.scaler",
        "SingleDeviceStrategy._root_device",
        "_AcceleratorConnector._parallel_devices",
    ),
)

_SET = replace(_FIRST, registry={**_FIRST.registry, "available_accelerators": "set"})

SHAPES: ShapeTable[LightningShape] = ShapeTable(
    [
        ("2.4.0", _FIRST),
        ("2.5.2", _SET),  # available_accelerators() returns a set, no longer a list
        ("2.5.6", replace(_SET, accelerator={**_SET.accelerator, "name": ("static", True, "()")})),  # abstract name()
    ]
)
"""Each Lightning release's shape (both packages alike), from the first release that has it."""


def checked_shape(package: str) -> LightningShape:
    """The installed release's shape of ``package``, after refusing a release outside its range.

    Raises :class:`~accelhal.UnsupportedReleaseError` naming the release and the range.
    """
    return SHAPES.shape_for(RANGES[package].check())
