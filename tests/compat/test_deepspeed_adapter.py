"""accelhal -> DeepSpeed: the adapter, checked against the installed DeepSpeed itself."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import accelhal
from accelhal.compat.deepspeed import UnavailableBuilder, as_deepspeed_accelerator, install
from accelhal.compat.deepspeed._adapter import WRITTEN
from accelhal.compat.deepspeed._releases import installed_shape
from accelhal.errors import ContractError, UnsupportedFeatureError
from accelhal_backends.cpu.accelerator import CpuAccelerator
from tests.compat import requires_deepspeed

pytestmark = requires_deepspeed


def test_deepspeed_accepts_the_adapter(ds: Any, ds_accelerator_restored: None) -> None:
    from deepspeed.accelerator import get_accelerator, set_accelerator
    from deepspeed.accelerator.abstract_accelerator import DeepSpeedAccelerator

    adapter = as_deepspeed_accelerator()
    assert isinstance(adapter, DeepSpeedAccelerator)
    assert not type(adapter).__abstractmethods__
    set_accelerator(adapter)  # runs DeepSpeed's own validation
    assert get_accelerator() is adapter
    assert adapter.accelhal_accelerator is accelhal.get_accelerator()


def test_install_makes_deepspeed_and_accelhal_agree(ds: Any, ds_accelerator_restored: None) -> None:
    from deepspeed.accelerator import get_accelerator

    adapter = install("cpu", disable_ops=["ShareMemCommBuilder"])
    assert get_accelerator() is adapter
    assert adapter.accelhal_accelerator is accelhal.get_accelerator()
    assert accelhal.detect().rule == "set_accelerator"


def test_members_deepspeed_reads_are_all_present(ds: Any) -> None:
    """Every ``get_accelerator().<name>`` in DeepSpeed's source, and ``_name``, resolves on the adapter."""
    root = Path(ds.__file__).parent
    used: set[str] = set()
    for path in root.rglob("*.py"):
        if path.parent.name == "accelerator":
            continue
        used.update(re.findall(r"get_accelerator\(\)\s*\.\s*(\w+)", path.read_text(errors="replace")))
    assert {"_name", "current_device_name", "create_op_builder"} <= used
    adapter = as_deepspeed_accelerator()
    missing = sorted(name for name in used if not hasattr(adapter, name))
    assert missing == []


def test_members_read_outside_the_abstract_class(ds: Any, cpu_twin: Any) -> None:
    acc = accelhal.get_accelerator()
    adapter = as_deepspeed_accelerator(acc)
    assert adapter._name == acc.name == cpu_twin._name
    assert adapter._communication_backend_name == acc.communication_backend_name() == "gloo"
    assert adapter._compile_backend == acc.get_compile_backend() == cpu_twin._compile_backend
    assert adapter.supports_nvtx_domain is acc.supports_nvtx_domain is False
    assert adapter.communication_backend_version() == (0, 0, 0)

    class Versioned(CpuAccelerator):
        def communication_backend_version(self) -> tuple[int, int, int]:
            return (2, 27, 3)

    assert as_deepspeed_accelerator(Versioned()).communication_backend_version() == (2, 27, 3)


PURE_MEMBERS = (
    "is_synchronized_device",
    "use_host_timers",
    "resolves_data_dependency",
    "handles_memory_backpressure",
    "device_name",
    "current_device",
    "current_device_name",
    "device_count",
    "is_available",
    "is_bf16_supported",
    "is_fp16_supported",
    "is_fp64_supported",
    "supported_dtypes",
    "communication_backend_name",
    "is_triton_supported",
    "prefer_triton_grouped_mm",
    "is_current_stream_capturing",
    "create_graph",
    "export_envs",
    "get_compile_backend",
    "pin_memory_alignment",
    "random",
)


@pytest.mark.parametrize("name", PURE_MEMBERS)
def test_methods_answer_what_accelhal_answers(ds: Any, name: str) -> None:
    acc = accelhal.get_accelerator()
    assert getattr(as_deepspeed_accelerator(acc), name)() == getattr(acc, name)()


def test_arguments_reach_accelhal(ds: Any) -> None:
    import torch

    acc = accelhal.get_accelerator()
    adapter = as_deepspeed_accelerator(acc)
    assert adapter.device(0) is adapter.device() is None  # DeepSpeed's cpu answers None (its engine keeps that)
    assert adapter.on_accelerator(torch.ones(1)) is True
    assert adapter.FloatTensor([1, 2]).dtype == torch.float32
    assert adapter.Stream is None and adapter.Event is None
    with adapter.stream(None), adapter.capture_to_graph(None):
        pass
    state = adapter.get_rng_state()
    adapter.manual_seed(7)
    first = torch.rand(1)
    adapter.set_rng_state(state, device_index=None)
    adapter.manual_seed(7)
    assert torch.equal(torch.rand(1), first)
    assert adapter.lazy_call(lambda: 42) == 42
    with pytest.raises(ValueError, match="not a torch.compile backend"):
        adapter.set_compile_backend("no-such-backend")


def test_pinning_keeps_deepspeeds_dispatch_and_accelhals_hooks(ds: Any, cpu_twin: Any) -> None:
    import torch

    adapter = as_deepspeed_accelerator()
    t = torch.ones(3)
    assert adapter.pin_memory(t) is t  # cpu: nothing to page-lock, as in DeepSpeed
    assert adapter.is_pinned(t) is False
    assert adapter.pin_empty(2, 3, dtype=torch.float16).shape == (2, 3)
    assert adapter.unpin_memory(t) is None
    assert adapter._torch_pins_host_memory is False
    shape = installed_shape()  # DeepSpeed's pinning dispatch from the release that has one, else the adapter's
    for name in shape.own - shape.cpu.own:
        assert getattr(type(adapter), name) is getattr(ds.accelerator.DeepSpeedAccelerator, name), name
    for name in shape.cpu.own - {"device"}:  # on the host, DeepSpeed's CPU_Accelerator's own where it answers otherwise
        assert getattr(type(adapter), name) is vars(type(cpu_twin))[name], name
    for name in shape.written - shape.cpu.own:
        assert getattr(type(adapter), name) is WRITTEN[name], name
    assert "pin_memory" in shape.own | shape.written


def test_the_older_releases_pinning_and_amp_answer_as_deepspeeds_own(ds: Any, cpu_twin: Any) -> None:
    """Where DeepSpeed declares ``pin_memory(tensor, align_bytes)`` and ``amp()``, the adapter's answer as its cpu's."""
    import torch

    if not {"pin_memory", "amp"} <= installed_shape().written:
        pytest.skip(f"deepspeed {ds.__version__} implements pinning itself and has no amp()")
    adapter = as_deepspeed_accelerator()
    t = torch.ones(3)
    assert adapter.pin_memory(t, align_bytes=0) is t is cpu_twin.pin_memory(t, align_bytes=0)
    assert adapter.is_pinned(t) is False
    assert adapter.amp() is cpu_twin.amp() is torch.cpu.amp


def test_op_builders_are_deepspeeds_own_for_the_device(ds: Any, cpu_twin: Any) -> None:
    adapter = as_deepspeed_accelerator()
    assert adapter.op_builder_dir() == cpu_twin.op_builder_dir() == "deepspeed.ops.op_builder.cpu"
    for name in ("CPUAdamBuilder", "FusedAdamBuilder", "ShareMemCommBuilder", "CCLCommBuilder", "PinMemoryBuilder"):
        ours, theirs = adapter.get_op_builder(name), cpu_twin.get_op_builder(name)
        if theirs.__name__ == "NotImplementedBuilder":  # PinMemoryBuilder: not in DeepSpeed's cpu builders before 0.19
            assert issubclass(ours, UnavailableBuilder) and ours.__name__ == name
            continue
        assert issubclass(ours, theirs) and ours.__name__ == theirs.__name__ == name
        assert ours.load is theirs.load and ours.jit_load is not theirs.jit_load  # only the JIT build is accelhal's
        assert adapter.get_op_builder(name) is ours  # one class, not one per call
        assert isinstance(adapter.create_op_builder(name), theirs)
        assert adapter.create_op_builder(name).NAME == cpu_twin.create_op_builder(name).NAME


def test_disabled_op_is_deepspeeds_builder_that_cannot_be_built(ds: Any, cpu_twin: Any) -> None:
    adapter = as_deepspeed_accelerator(disable_ops=("ShareMemCommBuilder",))
    builder = adapter.create_op_builder("ShareMemCommBuilder")
    assert isinstance(builder, cpu_twin.get_op_builder("ShareMemCommBuilder"))
    assert builder.NAME == builder.name == "deepspeed_shm_comm"  # what DeepSpeed looks up before building it
    assert builder.is_compatible() is False
    assert adapter.get_op_builder("ShareMemCommBuilder") is type(builder)  # one class, not one per call
    with pytest.raises(UnsupportedFeatureError, match="ShareMemCommBuilder"):
        builder.load()
    assert (
        adapter.create_op_builder("CPUAdamBuilder").is_compatible()
        == cpu_twin.create_op_builder("CPUAdamBuilder").is_compatible()
    )


def test_unknown_op_is_never_none(ds: Any) -> None:
    adapter = as_deepspeed_accelerator()
    builder = adapter.create_op_builder("NoSuchBuilder")
    assert builder.is_compatible() is False
    assert builder.name == "deepspeed_not_implemented"
    with pytest.raises(UnsupportedFeatureError, match="'cpu' accelerator does not support op 'NoSuchBuilder'"):
        builder.load()


def test_visible_devices_on_cpu_are_what_deepspeeds_launcher_expects(ds: Any, cpu_twin: Any) -> None:
    acc = accelhal.get_accelerator()
    assert acc.visible_devices_envs() == []
    adapter = as_deepspeed_accelerator(acc)
    assert adapter.visible_devices_envs()[0] == cpu_twin.visible_devices_envs()[0] == "CUDA_VISIBLE_DEVICES"
    ours: dict[str, str] = {}
    theirs: dict[str, str] = {}
    adapter.set_visible_devices_envs(ours, [0, 1])
    cpu_twin.set_visible_devices_envs(theirs, [0, 1])
    assert ours == theirs == {"CUDA_VISIBLE_DEVICES": "0,1"}
    with pytest.raises(ValueError, match="local_accelerator_ids"):
        adapter.set_visible_devices_envs({}, "0,1")


def test_unknown_members_fail_clearly(ds: Any) -> None:
    adapter = as_deepspeed_accelerator()
    with pytest.raises(AttributeError):
        adapter.no_such_member()  # neither DeepSpeed's nor accelhal's
    assert getattr(adapter, "_no_such_extra", None) is None  # how DeepSpeed probes optional extras


def test_only_accelhal_accelerators_are_wrapped(ds: Any, cpu_twin: Any) -> None:
    with pytest.raises(ContractError, match="takes an accelhal.Accelerator"):
        as_deepspeed_accelerator(cpu_twin)
    with pytest.raises(ContractError, match="disable_ops"):
        as_deepspeed_accelerator(disable_ops="ShareMemCommBuilder")


IMPORT_PROBE = """
import json, sys
import accelhal, accelhal.compat.deepspeed as bridge
after_import = sorted({m.split('.')[0] for m in sys.modules} & {'deepspeed', 'torch'})
accelhal.get_accelerator(); accelhal.detect()
bridge.backend_from_deepspeed("deepspeed.accelerator.cpu_accelerator:CPU_Accelerator", name="dscpu",
                              device_type="cpu", priority=50, probe=lambda: accelhal.Verdict.available("cpu"))
after_use = 'deepspeed' in sys.modules
bridge.as_deepspeed_accelerator()
print(json.dumps([after_import, after_use, 'deepspeed' in sys.modules]))
"""


def test_nothing_imports_deepspeed_until_the_bridge_is_used() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_", "DS_ACC"))}
    out = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, env=env, check=True)
    after_import, after_selection_and_lazy_spec, after_adapter = json.loads(out.stdout.strip().splitlines()[-1])
    assert after_import == []  # neither deepspeed nor torch
    assert after_selection_and_lazy_spec is False
    assert after_adapter is True
