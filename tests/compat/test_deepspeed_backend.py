"""DeepSpeed -> accelhal: DeepSpeed's own CPU_Accelerator used as an accelhal backend."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from accelhal import Verdict
from accelhal.compat.deepspeed import backend_from_deepspeed
from accelhal.contract.class_checks import contract_problems
from accelhal.errors import ContractError
from tests.compat import requires_deepspeed
from tests.conftest import InstallDistribution

pytestmark = requires_deepspeed

PLUGIN = """
from accelhal import Verdict, hookimpl
from accelhal.compat.deepspeed import backend_from_deepspeed

SPEC = backend_from_deepspeed(
    "deepspeed.accelerator.cpu_accelerator:CPU_Accelerator",
    name="dscpu", device_type="cpu", priority=50, visible_devices_envs=("CUDA_VISIBLE_DEVICES",),
    probe=lambda: Verdict.available("the host CPU, through DeepSpeed's CPU_Accelerator"),
)

@hookimpl
def accelhal_register_backends(register):
    register(SPEC)
"""

REPORT = """
import contextlib, json, os, sys
import accelhal
from accelhal.selection import registry
registry()
discovered = sorted({m.split('.')[0] for m in sys.modules} & {'deepspeed', 'torch'})
acc = accelhal.get_accelerator()
import torch
report = accelhal.detect()
ds = acc.deepspeed_accelerator
print("RESULT " + json.dumps({
    "discovery_imported": discovered,
    "chosen": acc.name, "rule": report.rule, "class": type(acc).__name__,
    "source": report.candidate("dscpu").source,
    "wrapped": type(ds).__module__ + "." + type(ds).__name__,
    "current_device": [acc.current_device(), ds.current_device()],
    "device": [str(acc.device()), repr(ds.device())],
    "stream_is_context": isinstance(acc.stream(None), contextlib.AbstractContextManager),
    "memory_allocated_is_int": type(acc.memory_allocated()) is int,
    "fp16": [acc.is_fp16_supported(), ds.is_fp16_supported()],
    "device_name": acc.device_name(0),
    "flags": [acc.is_synchronized_device(), acc.use_host_timers(), acc.resolves_data_dependency()],
    "comm": acc.communication_backend_name(),
    "info_name": acc.info().name,
}))
"""


def test_deepspeed_cpu_accelerator_as_a_plugin_backend(install_distribution: InstallDistribution) -> None:
    """A real plugin module registers DeepSpeed's CPU_Accelerator; ACCELHAL_ACCELERATOR chooses it."""
    dist_info = install_distribution(
        "ds-cpu-plugin", {"ds_cpu_plugin": PLUGIN}, entry_points={"dscpu": "ds_cpu_plugin"}
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_", "DS_ACC", "LOCAL_"))}
    path = os.pathsep.join(p for p in (str(dist_info.parent), os.environ.get("PYTHONPATH", "")) if p)
    env.update(PYTHONPATH=path, ACCELHAL_ACCELERATOR="dscpu", LOCAL_RANK="1", LOCAL_SIZE="2")
    out = subprocess.run([sys.executable, "-c", REPORT], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if line.startswith("RESULT "))
    result = json.loads(line.removeprefix("RESULT "))
    assert result["discovery_imported"] == []  # the plugin names DeepSpeed's class lazily
    assert result["chosen"] == "dscpu"
    assert result["rule"] == "ACCELHAL_ACCELERATOR"
    assert "ds-cpu-plugin" in result["source"]
    assert result["wrapped"] == "deepspeed.accelerator.cpu_accelerator.CPU_Accelerator"
    assert result["current_device"] == [1, "1"]  # DeepSpeed answers LOCAL_RANK as a string
    assert result["device"] == ["cpu", "None"]  # DeepSpeed answers None
    assert result["stream_is_context"] is True
    assert result["memory_allocated_is_int"] is True
    assert result["fp16"][0] is bool(result["fp16"][1])
    assert result["device_name"] == "cpu"
    assert result["flags"] == [True, True, True]  # DeepSpeed's CPU answers, not the base class defaults
    assert result["comm"] == "gloo"
    assert result["info_name"] == "dscpu"


def test_a_deepspeed_class_passes_accelhals_contract_check(ds: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator

    spec = backend_from_deepspeed(
        CPU_Accelerator, name="dscpu2", device_type="cpu", priority=50, probe=lambda: Verdict.available("cpu")
    )
    cls = spec.load_class()
    assert contract_problems(cls) == []
    acc = cls()
    assert acc._deepspeed is None  # nothing constructed until first use
    monkeypatch.setenv("LOCAL_RANK", "0")
    assert acc.current_device() == 0
    assert acc.device() == torch.device("cpu")
    assert acc.supported_dtypes() == CPU_Accelerator().supported_dtypes()
    assert acc.visible_devices_envs() == ["CUDA_VISIBLE_DEVICES"]
    assert acc.get_op_builder("CPUAdamBuilder") is CPU_Accelerator().get_op_builder("CPUAdamBuilder")
    assert isinstance(acc.deepspeed_accelerator, CPU_Accelerator)


def test_accelhals_pinning_calls_on_deepspeeds_pin_memory_of_the_installed_release(ds: Any) -> None:
    """accelhal's ``pin_memory(tensor, make_copy, match_shape)``, ``pin_empty`` and ``is_pinned`` on DeepSpeed's
    CPU_Accelerator: where the release's ``pin_memory`` is ``(tensor, align_bytes=1)`` (to 0.19.5), accelhal's
    contract pinning through it (``make_copy=False``: a fresh buffer, flat unless ``match_shape``); from 0.19.6,
    DeepSpeed's own answers."""
    import torch
    from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator

    from accelhal.compat.deepspeed._releases import installed_shape

    spec = backend_from_deepspeed(
        CPU_Accelerator, name="dscpu5", device_type="cpu", priority=50, probe=lambda: Verdict.available("cpu")
    )
    acc: Any = spec.load_class()()
    tensor = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    assert acc.pin_memory(tensor) is tensor  # cpu cannot page-lock: DeepSpeed's pin_memory answers the tensor
    for make_copy, match_shape in ((False, True), (False, False), (True, False)):
        made = acc.pin_memory(tensor, make_copy=make_copy, match_shape=match_shape)
        if installed_shape().pins_with_align_bytes:
            expected = tensor.shape if make_copy or match_shape else torch.Size([tensor.numel()])
        else:
            expected = CPU_Accelerator().pin_memory(tensor, make_copy=make_copy, match_shape=match_shape).shape
        assert (made.shape, made.dtype) == (expected, torch.float32), (make_copy, match_shape)
    empty = acc.pin_empty(4, dtype=torch.float16)
    assert (empty.shape, empty.dtype) == ((4,), torch.float16)
    assert acc.pin_empty_like(tensor, dtype=torch.float64).dtype == torch.float64
    assert acc.is_pinned(tensor) is False


@pytest.mark.parametrize("value", ["x", "²"])
def test_a_local_rank_deepspeed_cannot_read_is_a_contract_error(
    ds: Any, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """DeepSpeed's cpu answers ``LOCAL_RANK`` unparsed: ``"²"`` (``isdigit`` but not ``int``) reads as ``"x"``."""
    from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator

    spec = backend_from_deepspeed(
        CPU_Accelerator, name="dscpu3", device_type="cpu", priority=50, probe=lambda: Verdict.available("cpu")
    )
    monkeypatch.setenv("LOCAL_RANK", value)
    with pytest.raises(ContractError, match=f"returned '{value}', not a device index"):
        spec.load_class()().current_device()


def test_wrapping_is_refused_for_what_is_not_a_deepspeed_accelerator(ds: Any) -> None:
    from accelhal_backends.cpu.accelerator import CpuAccelerator

    with pytest.raises(ContractError, match="not a subclass of DeepSpeed's DeepSpeedAccelerator"):
        backend_from_deepspeed(CpuAccelerator, name="nope", priority=1, probe=lambda: Verdict.available("x"))


def test_a_name_cannot_be_registered_for_two_deepspeed_classes() -> None:
    probe = lambda: Verdict.available("x")  # noqa: E731
    backend_from_deepspeed(
        "deepspeed.accelerator.cpu_accelerator:CPU_Accelerator", name="dstwice", priority=1, probe=probe
    )
    with pytest.raises(ValueError, match="already registered"):
        backend_from_deepspeed(
            "deepspeed.accelerator.cuda_accelerator:CUDA_Accelerator", name="dstwice", priority=1, probe=probe
        )


def test_a_spec_that_misstates_what_deepspeeds_class_answers_is_named(ds: Any) -> None:
    from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator

    from accelhal.contract.class_checks import instance_identity_problems

    spec = backend_from_deepspeed(
        CPU_Accelerator, name="dscpu4", device_type="cpu", priority=50, probe=lambda: Verdict.available("cpu")
    )
    problems = instance_identity_problems(spec, spec.load_class()())
    assert problems == [
        "spec visible_devices_envs is () but DeepSpeed_CPU_Accelerator().visible_devices_envs() is "
        "('CUDA_VISIBLE_DEVICES',)"
    ]
