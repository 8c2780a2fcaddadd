"""Ray Train's torch backend on accelhal: the process group's backend and each worker's device.

Ray Train decides both by vendor: ``TorchConfig`` picks ``nccl`` when workers hold ``GPU``
(else ``gloo``), and its device managers know cuda, npu, hpu and TPUs by name. Here the
workers' accelhal backend answers both, whichever it is; the driver, which may have no
device at all, decides nothing. This module imports Ray and torch.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

import ray
import ray.train
import torch
from ray.train.torch import TorchConfig

import accelhal
from accelhal.compat.ray._releases import active_train, installed_shape
from accelhal.compat.ray._resources import Binding, bind
from accelhal.contract.accelerator import Accelerator
from accelhal.errors import DistributedSetupError

_RayTorchBackend: Any = TorchConfig().backend_cls
"""Ray Train's torch backend class (what ``TorchConfig.backend_cls`` names)."""


def _binding(acc: Accelerator) -> Binding:
    return bind(acc.name, acc.device_type, acc.visible_devices_envs())


def worker_backend() -> tuple[str, str]:
    """This worker's active accelhal backend and its ``torch.distributed`` backend (runs in each worker)."""
    acc = accelhal.get_accelerator()
    return acc.name, acc.communication_backend_name()


def agreed_communication_backend(answers: list[tuple[str, str]]) -> str:
    """The one ``torch.distributed`` backend of the workers' answers (:func:`worker_backend`, by rank)."""
    described = [
        f"rank {rank}: {name} ({comm or 'no torch.distributed backend'})" for rank, (name, comm) in enumerate(answers)
    ]
    if len(set(answers)) > 1:
        raise DistributedSetupError(
            "the workers' accelhal backends disagree (" + "; ".join(described) + "); schedule every worker on the "
            "same kind of device: ScalingConfig(resources_per_worker={<accelhal.compat.ray.resource_name()>: 1})",
            variable="torch_config",
        )
    name, comm = answers[0]
    if not comm:
        raise DistributedSetupError(
            f"the workers' accelhal backend {name!r} has no torch.distributed backend (its device type registers "
            "none with torch.distributed); pass one explicitly: torch_config(backend=...)",
            variable="torch_config",
            value=name,
        )
    return comm


class AccelhalTorchBackend(_RayTorchBackend):  # type: ignore[misc]
    """Ray Train's torch backend, its process-group backend asked of the workers when it is not given."""

    def on_start(self, worker_group: Any, backend_config: Any) -> None:
        """Ask every worker for its backend's communication backend, then start the process group on it."""
        if backend_config.backend_from_workers:
            comm = agreed_communication_backend(worker_group.execute(worker_backend))
            backend_config = dataclasses.replace(backend_config, backend=comm, backend_from_workers=False)
        super().on_start(worker_group, backend_config)


class CurrentDevice:
    """The training function's context: the worker's :func:`device` is made current (``set_device``)."""

    def __enter__(self) -> None:
        acc = accelhal.get_accelerator()
        binding = _binding(acc)
        if binding.resource is not None:
            acc.set_device(device_index(acc, binding))

    def __exit__(self, *exc_info: object) -> None:
        return None


@dataclasses.dataclass
class AccelhalTorchConfig(TorchConfig):
    """A ``TorchConfig`` whose backend class and training context are accelhal's (see :func:`torch_config`).

    ``TorchTrainer`` writes its own default into an unset ``backend`` on the driver (``nccl``
    with ``use_gpu``, else ``gloo``); while ``backend_from_workers`` is True that value is
    ignored and the workers are asked.
    """

    backend_from_workers: bool = True
    """Whether the process group's backend is asked of the workers (False: ``backend`` as given)."""

    @property
    def backend_cls(self) -> type[Any]:
        """:class:`AccelhalTorchBackend`."""
        return AccelhalTorchBackend

    @property
    def train_func_context(self) -> type[CurrentDevice]:
        """:class:`CurrentDevice`."""
        return CurrentDevice


def in_train_worker() -> bool:
    """Whether this process is a worker of the Ray Train that runs here (v1 or v2: :func:`active_train`).

    Asked of that Train's own session function
    (:attr:`accelhal.compat.ray._releases.RayShape.sessions`): Ray Train v1's public context
    answers outside a worker too (local rank 0).
    """
    module, _, name = installed_shape().sessions[active_train()].partition(":")
    try:
        return getattr(importlib.import_module(module), name)() is not None
    except RuntimeError:  # v2's context outside a worker
        return False


def local_rank() -> int:
    """Ray Train's local rank of this worker; a :class:`DistributedSetupError` outside a Ray Train worker."""
    if not in_train_worker():
        raise DistributedSetupError(
            "accelhal.compat.ray.device() is for a Ray Train worker (inside the function that trainer.fit() runs), "
            "where Ray Train knows the worker's local rank; this process is not one",
            variable="device",
        )
    return int(ray.train.get_context().get_local_rank())


def _assigned_index(manager: Any, resource: str, ids: list[str]) -> tuple[int, str]:
    """The lowest device index among the ids Ray assigned, read against the visible-devices variable Ray set."""
    variable = manager.get_visible_accelerator_ids_env_var()
    visible = manager.get_current_process_visible_accelerator_ids()
    source = f"Ray's {resource} {', '.join(sorted(ids))}"
    if visible is None:  # no variable: every device is visible, and an id is its index
        if not all(i.isdecimal() for i in ids):
            raise DistributedSetupError(
                f"Ray assigned {resource} {ids} to this worker, which are not device indices, and {variable} is "
                f"unset; let Ray set {variable}",
                variable=variable,
            )
        return min(int(i) for i in ids), f"{source} ({variable} unset)"
    missing = [i for i in ids if i not in visible]
    if missing:
        raise DistributedSetupError(
            f"Ray assigned {resource} {ids} to this worker, but {variable}={','.join(visible)} does not list "
            f"{', '.join(missing)}; leave {variable} to Ray in Ray Train workers",
            variable=variable,
            value=",".join(visible),
        )
    return min(visible.index(i) for i in ids), f"{source} ({variable}={','.join(visible)})"


def device_index(acc: Accelerator, binding: Binding) -> int:
    """The index of this worker's device (see :func:`accelhal.compat.ray.device`), checked against the devices."""
    rank = local_rank()
    index, source = rank, f"Ray Train's local rank {rank}"
    if binding.managed_by_ray and binding.resource is not None:
        from ray._private.accelerators import get_accelerator_manager_for_resource

        manager = get_accelerator_manager_for_resource(binding.resource)
        ids = [str(i) for i in ray.get_runtime_context().get_accelerator_ids().get(binding.resource, [])]
        if ids and manager is not None:
            index, source = _assigned_index(manager, binding.resource, ids)
    count = acc.device_count()
    if not 0 <= index < count:
        raise DistributedSetupError(
            f"{source} makes this worker's device {acc.device_type}:{index}, but the {acc.name!r} backend sees "
            f"{count} device(s) here; give each worker one device: "
            f"ScalingConfig(resources_per_worker={{{binding.resource!r}: 1}})",
            variable="device",
            value=index,
        )
    return index


def device() -> torch.device:
    """See :func:`accelhal.compat.ray.device`."""
    acc = accelhal.get_accelerator()
    binding = _binding(acc)
    if binding.resource is None:
        local_rank()  # outside a worker is an error on every backend
        return acc.device()
    return acc.device(device_index(acc, binding))
