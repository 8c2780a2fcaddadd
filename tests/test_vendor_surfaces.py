"""Every vendor attribute a backend touches exists in the recorded real surface of its module.

DeepSpeed's xpu backend called two functions that ``torch.xpu`` does not have; this is the
test that catches that class of bug without the hardware. Surfaces are in
``accelhal/testing/surfaces/`` (recorded from the real modules; hpu, mlu, sdaa, supa and musa
written from the vendors' public sources, as each file says).
"""

from __future__ import annotations

import json

import pytest

from accelhal.contract.device_module import DeviceModuleAccelerator
from accelhal.discovery import plugins
from accelhal.process.settings import Settings
from accelhal.testing.simulated import SURFACES, VENDORS, load_surface, surface_names
from tests.vendor_calls import vendor_attributes

SPECS = {r.spec.name: r.spec for r in plugins.discover(Settings()).ordered() if r.plugin.builtin and r.spec.module}
"""The built-in device-module backends, by name (identity read from their specs)."""


def backend_class(name: str) -> type[DeviceModuleAccelerator]:
    cls = SPECS[name].load_class()
    assert issubclass(cls, DeviceModuleAccelerator)
    return cls


def surface_for(module: str) -> dict[str, dict[str, object]]:
    """Every recorded name of ``module``, merged over the surface files that describe it."""
    names: dict[str, dict[str, object]] = {}
    for path in sorted(SURFACES.glob("*.json")):
        data = json.loads(path.read_text())
        if data["module"] == module:
            names.update(data["names"])
    return names


def missing_from_surface(used: set[str], surface: dict[str, dict[str, object]]) -> list[str]:
    missing = []
    for dotted in sorted(used):
        head, _, member = dotted.partition(".")
        entry = surface.get(head)
        if entry is None or (member and "members" in entry and member not in entry["members"]):
            missing.append(dotted)
    return missing


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_vendor_attribute_a_backend_touches_is_in_the_recorded_surface(name: str) -> None:
    cls = backend_class(name)
    assert cls._module_name == SPECS[name].module
    used = vendor_attributes(cls)
    assert len(used) >= 10, used  # the collector found the backend's calls
    assert missing_from_surface(used, surface_for(cls._module_name)) == []


def test_the_collector_catches_deepspeeds_xpu_mistake() -> None:
    from accelhal_backends.xpu.accelerator import XpuAccelerator

    class DeepSpeedLikeXpu(XpuAccelerator):
        def reset_max_memory_allocated(self, device_index: int | None = None) -> None:
            self._m.reset_max_memory_allocated(device_index)

    missing = missing_from_surface(vendor_attributes(DeepSpeedLikeXpu), surface_for("torch.xpu"))
    assert missing == ["reset_max_memory_allocated"]


def test_calls_through_a_local_alias_of_the_module_are_counted() -> None:
    used = vendor_attributes(backend_class("cuda"))
    assert {"max_memory_allocated", "max_memory_reserved"} <= used  # written as m = self._m; m.max_...()


def test_overridden_base_methods_are_not_counted() -> None:
    cls = backend_class("mps")
    used = vendor_attributes(cls)
    assert "current_stream" not in used and "Stream" not in used and "set_device" not in used
    assert {"current_allocated_memory", "driver_allocated_memory", "recommended_max_memory"} <= used


def test_hpu_rng_calls_go_through_its_random_namespace() -> None:
    used = vendor_attributes(backend_class("hpu"))
    assert {"random.get_rng_state", "random.manual_seed", "random.default_generators"} <= used
    assert "get_rng_state" not in used


@pytest.mark.parametrize("vendor", sorted(VENDORS))
def test_simulated_modules_carry_only_recorded_names(vendor: str) -> None:
    from accelhal.testing.simulated import SimulatedRuntime

    spec = VENDORS[vendor]
    members = set(SimulatedRuntime(spec, 1).members())
    recorded = surface_names(spec.surface)
    kept = members & recorded
    # what the simulation offers beyond the surface is dropped when the module is built
    assert kept and {"device_count", "current_device", "Stream", "Event"} <= kept
    assert load_surface(spec.surface)  # the file parses
