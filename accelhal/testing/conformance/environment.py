"""Launcher variables and collectives: visible-devices and export variables, the comm backend's name."""

from __future__ import annotations

import torch

from accelhal.contract.accelerator import Accelerator
from accelhal.testing.conformance.base import SuiteBase, allocation_problem, expect, expect_type


class EnvironmentTests(SuiteBase):
    """``visible_devices_envs``, ``set_visible_devices_envs``, ``export_envs`` and ``communication_backend_name``."""

    def test_variable_lists(self, accelerator: Accelerator) -> None:
        for member in ("visible_devices_envs", "export_envs"):
            names = self.call(accelerator, member)
            expect(
                isinstance(names, list) and all(isinstance(n, str) and n for n in names),
                f"{member}()",
                "a list of non-empty str",
                names,
            )

    def test_set_visible_devices_envs_writes_each(self, accelerator: Accelerator) -> None:
        env: dict[str, str] = {"UNRELATED": "kept"}
        accelerator.set_visible_devices_envs(env, [0, 1])
        expected = {name: "0,1" for name in accelerator.visible_devices_envs()} | {"UNRELATED": "kept"}
        expect(env == expected, "set_visible_devices_envs(env, [0, 1])", f"env to become {expected}", env)

    def test_communication_backend(self, accelerator: Accelerator) -> None:
        import torch.distributed as dist

        name = accelerator.communication_backend_name()
        expect_type(name, "communication_backend_name()", str)
        if name == "":
            import pytest

            pytest.skip(
                f"the {accelerator.name!r} backend has no communication backend: torch.distributed has none "
                f"registered for device type {accelerator.device_type!r}"
            )
        known = [b for b in dist.Backend.backend_list if b != "undefined"]
        real_device = allocation_problem(accelerator) is None
        if real_device or name in known:
            expect(name in known, "communication_backend_name()", f"a backend torch.distributed knows ({known})", name)
        if real_device and dist.is_available():
            expect(
                bool(dist.is_backend_available(name)),
                "communication_backend_name()",
                "a backend torch.distributed.is_backend_available() accepts on this machine",
                name,
            )
        elif name not in known:
            import pytest

            pytest.skip(
                f"{name!r} is not registered with torch.distributed {torch.__version__} in this process and "
                f"the {accelerator.name!r} device cannot hold tensors here (its collective library is not loaded)"
            )
