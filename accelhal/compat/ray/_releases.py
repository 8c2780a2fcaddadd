"""The Ray releases the adapter supports, and what differs between them.

Within the range, Ray Train's second implementation arrived (2.41, behind
``RAY_TRAIN_V2_ENABLED=1``) and became the default (2.51; ``RAY_TRAIN_V2_ENABLED=0`` gives the
first). Each tells its workers by a function of its own, and Ray Train v1's public context
answers outside a worker too (local rank 0, with a warning). Everything else the adapter calls
or subclasses (``TorchConfig``'s fields and hooks, ``_TorchBackend.on_start``, the worker
groups' ``execute``, the accelerator managers' functions) is the same in every release of the
range: :data:`API`. :data:`SHAPES` records each shape from the first release that has it;
``tests/compat/test_ray_releases.py`` checks it against every release's source
(``tests/data/ray-shapes.json``) and against the installed Ray. Ray's accelerator managers
(which variable each resource has) are read from the installed Ray, not declared here.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from accelhal.compat._releases import ReleaseRange, ShapeTable

SUPPORTED = ReleaseRange("ray", "2.40.0", "2.60.0", "3")
"""Ray 2.40.0 to 2.60.0 tested; 3 and later refused."""

TrainV2 = Literal["absent", "opt-in", "default"]

V1_SESSION = "ray.train._internal.session:get_session"
"""Ray Train v1's session: ``None`` outside a worker."""
V2_SESSION = "ray.train.v2._internal.execution.context:get_train_context"
"""Ray Train v2's context: a ``RuntimeError`` outside a worker."""

API: Mapping[str, Any] = MappingProxyType(
    {
        "torch_config": ["backend", "init_method", "timeout_s"],
        "hooks": ["backend_cls", "train_func_context"],
        "on_start": ["self", "worker_group", "backend_config"],
        "prepare": {
            "prepare_model": ["model", "move_to_device", "parallel_strategy", "parallel_strategy_kwargs"],
            "prepare_data_loader": ["data_loader", "add_dist_sampler", "move_to_device", "auto_transfer"],
        },
        "accelerator_ids": True,
        "accelerators": ["get_all_accelerator_managers", "get_accelerator_manager_for_resource"],
        "manager_methods": [
            "get_resource_name",
            "get_visible_accelerator_ids_env_var",
            "get_current_process_visible_accelerator_ids",
        ],
    }
)
"""What the adapter calls or subclasses that is the same in every release of the range (functions by parameters)."""


@dataclass(frozen=True)
class RayShape:
    """What one run of Ray releases declares where releases in the range differ."""

    train_v2: TrainV2
    """Ray Train v2: ``absent`` (v1 only), ``opt-in`` (``RAY_TRAIN_V2_ENABLED=1``) or ``default`` (v1 with ``=0``)."""
    sessions: Mapping[str, str]
    """Per Ray Train version, ``"module:function"`` that gives the worker's session (none outside a worker)."""
    execute: Mapping[str, list[str]]
    """Per Ray Train version, the parameters of its worker group's ``execute``."""
    api: Mapping[str, Any] = field(default_factory=lambda: API)
    """The rest, the same in every release: :data:`API`."""


_V1_EXECUTE = ["self", "func", "*args", "**kwargs"]
_V2_EXECUTE = ["self", "fn", "*fn_args", "**fn_kwargs"]
_BOTH = {"v1": V1_SESSION, "v2": V2_SESSION}

SHAPES: ShapeTable[RayShape] = ShapeTable(
    [
        ("2.40.0", RayShape("absent", {"v1": V1_SESSION}, {"v1": _V1_EXECUTE})),
        ("2.41.0", RayShape("opt-in", _BOTH, {"v1": _V1_EXECUTE, "v2": _V2_EXECUTE})),
        ("2.51.0", RayShape("default", _BOTH, {"v1": _V1_EXECUTE, "v2": _V2_EXECUTE})),
    ]
)


V2_SWITCH = "ray.train.v2._internal.constants"
"""The module whose ``is_v2_enabled()`` says which Ray Train runs (``RAY_TRAIN_V2_ENABLED``, else the default)."""


@functools.cache
def installed_shape() -> RayShape:
    """The shape of the installed Ray; :class:`~accelhal.UnsupportedReleaseError` outside :data:`SUPPORTED`."""
    return SHAPES.shape_for(SUPPORTED.check())


def active_train() -> Literal["v1", "v2"]:
    """The Ray Train this process runs: ``v1`` where the release has no v2, else as Ray's own switch says."""
    if installed_shape().train_v2 == "absent":
        return "v1"
    import importlib

    return "v2" if importlib.import_module(V2_SWITCH).is_v2_enabled() else "v1"
