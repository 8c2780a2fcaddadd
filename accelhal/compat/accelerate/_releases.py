"""The Accelerate and transformers releases the adapter supports, and what differs between them.

:data:`SUPPORTED` and :data:`SUPPORTED_TRANSFORMERS` are the ranges; :data:`SHAPES` and
:data:`TRANSFORMERS_SHAPES` give, per release, the shape (:mod:`._shape`) of every member in
:data:`MEMBERS` and :data:`TRANSFORMERS_MEMBERS`: what the adapter replaces or relies on.
``install()`` checks Accelerate's range and shape before anything is patched; transformers', which
only the Trainer needs, where the Trainer chooses its device. Importing this module imports neither
framework.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata

from accelhal.compat._releases import ReleaseRange, ShapeTable
from accelhal.compat.accelerate._shape import Member
from accelhal.errors import UnsupportedReleaseError

SUPPORTED = ReleaseRange("accelerate", "1.0.0", "1.15.0", "2")
SUPPORTED_TRANSFORMERS = ReleaseRange("transformers", "4.46.0", "5.23.0", "6")

Shape = Mapping[str, str]
"""A release's shape: each member's key (:attr:`Member.key`) and its one-line shape."""

_STATE, _CHECKPOINTING = "accelerate.state", "accelerate.checkpointing"
MEMBERS = (
    Member(_STATE, "PartialState._prepare_backend"),
    Member(_STATE, "PartialState.set_device"),
    Member(_STATE, "PartialState.default_device"),
    Member(_STATE, "AcceleratorState.__init__", relies_on=()),
    Member("accelerate.accelerator", "Accelerator.prepare"),
    Member("accelerate.optimizer", "AcceleratedOptimizer._switch_parameters"),
    Member("accelerate.utils.modeling", "get_max_memory"),
    Member("accelerate.utils.memory", "clear_device_cache"),
    Member(_CHECKPOINTING, "save_accelerator_state", relies_on=("output_dir", "process_index")),
    Member(_CHECKPOINTING, "load_accelerator_state", relies_on=("input_dir", "process_index")),
)
"""What the adapter replaces in Accelerate, and the optimizer method :mod:`._prepare` calls."""

_DEVICE_CHOICE = ("_n_gpu", "distributed_state", "use_cpu")
TRANSFORMERS_MEMBERS = (
    Member("transformers.training_args", "TrainingArguments._setup_devices", watch=_DEVICE_CHOICE),
    Member("transformers.training_args", "TrainingArguments.n_gpu", watch=_DEVICE_CHOICE),
)
"""The Trainer's device choice: the cached property the adapter replaces, and ``n_gpu``, which reads ``_n_gpu``."""


def check_installed() -> None:
    """Refuse an Accelerate release outside its range (the installed metadata only; imports nothing).

    Raises ``ImportError`` without Accelerate and :class:`~accelhal.UnsupportedReleaseError`
    naming the release and the range. transformers is not checked here: only the Trainer
    needs it in its range, and :func:`transformers_refusal` is raised where the Trainer chooses its device.
    """
    try:
        SUPPORTED.check()
    except metadata.PackageNotFoundError:
        from accelhal.extras import install_advice

        raise ImportError(f"accelhal.compat.accelerate needs accelerate: {install_advice('accelerate')}") from None


def transformers_refusal() -> UnsupportedReleaseError | None:
    """The refusal of the installed transformers outside :data:`SUPPORTED_TRANSFORMERS`; None in it or without one."""
    try:
        SUPPORTED_TRANSFORMERS.check()
    except metadata.PackageNotFoundError:
        return None
    except UnsupportedReleaseError as exc:
        detail = (
            f"tested from {SUPPORTED_TRANSFORMERS.floor} to {SUPPORTED_TRANSFORMERS.newest}; the Trainer's device "
            "choice on accelhal needs a release in that range (Accelerate's own use is not affected)"
        )
        return UnsupportedReleaseError(exc.framework, exc.installed, exc.supported, detail=detail)
    return None


SHAPES: ShapeTable[Shape] = ShapeTable(
    [
        (
            "1.0.0",
            {
                MEMBERS[0].key: "function (self, cpu, sagemaker_dp, backend)",
                MEMBERS[1].key: "function (self)",
                MEMBERS[2].key: "builtins.property (self)",
                MEMBERS[3].key: "function (...)",
                MEMBERS[4].key: "function (self, *args, device_placement)",
                MEMBERS[5].key: "function (self, parameters_map)",
                MEMBERS[6].key: "function (max_memory)",
                MEMBERS[7].key: "function (garbage_collection)",
                MEMBERS[8].key: "function (output_dir, process_index, ...)",
                MEMBERS[9].key: "function (input_dir, process_index, ...)",
            },
        ),
    ]
)
"""Accelerate: one shape from 1.0.0 to 1.15.0 (every release recorded in ``tests/data/accelerate-shapes.json``).

What changed inside ``_prepare_backend`` needs no row: before 1.13.0 a launched host run was
``MULTI_CPU`` with or without ``cpu=True``, from 1.13.0 only with it; the adapter asks for
Accelerate's host rule with ``cpu=True``, which every release answers alike.
"""

_SETUP_DEVICES, _N_GPU = (member.key for member in TRANSFORMERS_MEMBERS)
_CHOOSES = "(self) uses _n_gpu distributed_state use_cpu"
TRANSFORMERS_SHAPES: ShapeTable[Shape] = ShapeTable(
    [
        (
            "4.46.0",
            {
                _SETUP_DEVICES: f"transformers.cached_property {_CHOOSES}",
                _N_GPU: "builtins.property (self) uses _n_gpu",
            },
        ),
        (
            "4.57.0",
            {_SETUP_DEVICES: f"functools.cached_property {_CHOOSES}", _N_GPU: "builtins.property (self) uses _n_gpu"},
        ),
    ]
)
"""transformers: ``_setup_devices`` was transformers' own cached property (a ``property``) until 4.56.2,
``functools.cached_property`` from 4.57.0; the replacement is a descriptor of the same type."""
