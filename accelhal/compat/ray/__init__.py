"""Ray on any accelhal backend (accelhal's ``ray`` extra): resources, the process group, the device.

Public: :func:`resource_name`, :func:`node_resources`, :func:`ray_start_arguments`,
:func:`torch_config` and :func:`device`. Importing this module imports neither Ray nor torch;
the functions do, when called, once they have checked that the installed Ray is in the range
the adapter supports (else :class:`~accelhal.UnsupportedReleaseError`). Nothing else in
accelhal imports Ray but the ``accelhal ray-resources`` command. See ``docs/ray.md``.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = ["device", "node_resources", "ray_start_arguments", "resource_name", "torch_config"]


def _require_ray() -> None:
    """Check that a supported Ray is installed, before Ray is imported.

    Raises :class:`~accelhal.AccelhalError` naming the extra when Ray is not installed, and
    :class:`~accelhal.UnsupportedReleaseError` naming the installed release and the supported
    range when it is outside (``docs/ray.md``).
    """
    if importlib.util.find_spec("ray") is None:
        from accelhal.errors import AccelhalError
        from accelhal.extras import install_advice

        raise AccelhalError(f"accelhal.compat.ray needs Ray, which is not installed here: {install_advice('ray')}")
    from accelhal.compat.ray._releases import installed_shape

    installed_shape()


def resource_name(backend: str | None = None) -> str | None:
    """The Ray resource that schedules ``backend``'s devices (the active backend when ``None``).

    Ray's own name where one of Ray's accelerator managers owns a visible-devices variable
    the backend declares (``"GPU"`` for cuda and xpu, ``"NPU"``, ``"HPU"``); otherwise the
    backend's name (``"mlu"``, the generic backend's device type). ``None`` for a backend
    whose device is the host (cpu): Ray counts CPUs itself, as ``"CPU"``. A named backend
    is looked up in the plugin registry, not selected: its device need not be here.

    Raises :class:`~accelhal.UnknownBackendError` for a name no plugin registers.
    """
    _require_ray()
    from accelhal.compat.ray import _resources

    return _resources.binding_for(backend).resource


def node_resources() -> dict[str, int]:
    """This node's Ray resources for the active backend: ``{resource_name(): device_count()}``.

    ``{}`` on a backend whose device is the host (cpu). The devices are counted through the
    accelerator's ``device_count()``, which creates no device context.
    """
    _require_ray()
    from accelhal.compat.ray import _resources

    return _resources.node_resources()


def ray_start_arguments(resources: dict[str, int] | None = None) -> list[str]:
    """The ``ray start`` options that advertise ``resources`` (default: :func:`node_resources`).

    Ray refuses ``GPU`` in ``--resources`` and takes it through ``--num-gpus``; every other
    resource goes into one ``--resources=JSON`` (compact, no spaces, so the options survive
    the shell's word splitting of ``$(accelhal ray-resources --args)``).

    >>> ray_start_arguments({"NPU": 8})
    ['--resources={"NPU":8}']
    >>> ray_start_arguments({"GPU": 8})
    ['--num-gpus=8']
    """
    from accelhal.compat.ray import _resources

    return _resources.ray_start_arguments(node_resources() if resources is None else resources)


def torch_config(**options: Any) -> Any:
    """A Ray Train ``TorchConfig`` whose process group uses the workers' accelhal backend.

    The process group's backend (``"nccl"``, ``"hccl"``, ...) is not decided on the driver
    (``TorchTrainer``'s own default there, ``nccl`` with ``use_gpu`` else ``gloo``, is
    ignored): when the worker group starts, each worker is asked for its active backend's
    :meth:`~accelhal.Accelerator.communication_backend_name`: the devices are on the
    workers, not necessarily on the driver. Workers that disagree, or a backend with no
    ``torch.distributed`` backend, are a :class:`~accelhal.DistributedSetupError`. The
    training function then runs with the worker's :func:`device` made current. ``options``
    are ``TorchConfig``'s (``init_method``, ``timeout_s``; an explicit ``backend`` is used
    as given); any other is a :class:`~accelhal.ConfigurationError`.
    """
    _require_ray()
    import dataclasses

    from accelhal.compat.ray import _train

    accepted = sorted(
        f.name for f in dataclasses.fields(_train.AccelhalTorchConfig) if f.name != "backend_from_workers"
    )
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        from accelhal.errors import ConfigurationError

        raise ConfigurationError(
            f"torch_config() takes TorchConfig's options ({', '.join(accepted)}), not {', '.join(unknown)}",
            variable="torch_config",
            value=unknown,
        )
    return _train.AccelhalTorchConfig(**options, backend_from_workers=options.get("backend") is None)


def device() -> torch.device:
    """This Ray Train worker's device on the active backend (call it inside the training function).

    Where Ray manages the backend's resource (``GPU``, ``NPU``, ...; see :func:`resource_name`),
    Ray has set the visible-devices variable for the ids it assigned to the worker, and the
    device is the position of the worker's first id among the visible ones (all devices are
    visible when the variable is unset). For any other resource Ray sets no variable, and the
    device is the worker's local rank (``ray.train.get_context().get_local_rank()``). On the
    host backend (cpu) it is ``torch.device("cpu")``.

    Raises :class:`~accelhal.DistributedSetupError` outside a Ray Train worker, or when the
    index is not one of the devices the backend sees.
    """
    _require_ray()
    from accelhal.compat.ray import _train

    return _train.device()
