"""Which Ray resource schedules a backend's devices, found by matching visible-devices variables.

A backend declares the variables that restrict which devices a process sees
(:attr:`accelhal.BackendSpec.visible_devices_envs`); each of Ray's accelerator managers
declares the one it sets for the workers that hold its resource
(``AcceleratorManager.get_visible_accelerator_ids_env_var()``). Where the two share a
variable, the backend's devices are the ones Ray already knows, under Ray's name; elsewhere
Ray knows nothing of them and they are a custom resource under the backend's name. Neither
side names a vendor here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from accelhal.plain_record import record

FLAG_RESOURCES: dict[str, str] = {"GPU": "--num-gpus"}
"""Resources ``ray start`` refuses in ``--resources``, with the option that takes each instead."""


@record(frozen=True)
class Binding:
    """A backend's devices as Ray schedules them."""

    backend: str
    """The accelhal backend's name."""
    resource: str | None
    """The Ray resource; ``None`` for a backend whose device is the host (Ray's own ``CPU``)."""
    managed_by_ray: bool
    """Whether one of Ray's accelerator managers owns the resource (and sets the visible-devices variable)."""


Manager = tuple[str, str | None]
"""One of Ray's accelerator managers: its resource and its visible-devices variable (``None``: it has none)."""


def ray_managers() -> list[Manager]:
    """The installed Ray's accelerator managers (``ray._private.accelerators``), in a stable order."""
    from ray._private.accelerators import get_all_accelerator_managers

    found: list[Any] = list(get_all_accelerator_managers())  # classes, though Ray's hints say instances
    managers = sorted(found, key=lambda manager: manager.__name__)
    return [(manager.get_resource_name(), manager.get_visible_accelerator_ids_env_var()) for manager in managers]


def bind(
    name: str, device_type: str, visible_devices_envs: Iterable[str], managers: Iterable[Manager] | None = None
) -> Binding:
    """The binding of a backend given by its name, device type and visible-devices variables.

    Against ``managers`` (default: the installed Ray's, :func:`ray_managers`).
    """
    if device_type == "cpu":
        return Binding(backend=name, resource=None, managed_by_ray=False)
    declared = set(visible_devices_envs)
    owners = {
        resource for resource, variable in (ray_managers() if managers is None else managers) if variable in declared
    }
    if len(owners) > 1:
        from accelhal.errors import ConfigurationError

        raise ConfigurationError(
            f"the {name!r} backend declares the visible-devices variables {sorted(declared)}, which Ray's accelerator "
            f"managers give to several resources ({', '.join(sorted(owners))}); a backend's devices must be one "
            "resource: declare only the variable of the devices it drives",
            variable="visible_devices_envs",
            value=sorted(declared),
        )
    if owners:
        return Binding(backend=name, resource=owners.pop(), managed_by_ray=True)
    return Binding(backend=name, resource=name, managed_by_ray=False)


def binding_for(backend: str | None) -> Binding:
    """The binding of the active backend (``None``), or of the backend registered as ``backend``."""
    if backend is None:
        import accelhal

        acc = accelhal.get_accelerator()
        return bind(acc.name, acc.device_type, acc.visible_devices_envs())
    from accelhal.errors import UnknownBackendError
    from accelhal.selection import registry

    reg = registry()
    wanted = backend.strip().lower()
    if wanted not in reg.backends:
        reg.load_deferred()  # plugins held back by a forced backend
    registration = reg.backends.get(wanted)
    if registration is None:
        raise UnknownBackendError(wanted, reg.names(), variable="backend")
    spec = registration.spec
    return bind(spec.name, spec.device_type, spec.visible_devices_envs)


def node_resources() -> dict[str, int]:
    """``{resource: device_count()}`` of the active backend; ``{}`` on the host backend."""
    import accelhal

    acc = accelhal.get_accelerator()
    binding = bind(acc.name, acc.device_type, acc.visible_devices_envs())
    if binding.resource is None:
        return {}
    return {binding.resource: acc.device_count()}


def resources_json(resources: dict[str, int]) -> str:
    """The JSON object ``ray start --resources=`` takes: ``resources`` but those Ray takes through its own options."""
    custom = {name: count for name, count in sorted(resources.items()) if name not in FLAG_RESOURCES}
    return json.dumps(custom, separators=(",", ":"))


def ray_start_arguments(resources: dict[str, int]) -> list[str]:
    """``--num-gpus=N`` for ``GPU``, and one ``--resources=JSON`` for the rest (none when empty)."""
    arguments = [
        f"{FLAG_RESOURCES[name]}={count}" for name, count in sorted(resources.items()) if name in FLAG_RESOURCES
    ]
    custom = resources_json(resources)
    if custom != "{}":
        arguments.append(f"--resources={custom}")
    return arguments
