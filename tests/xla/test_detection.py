"""Detection of the xla backend in fresh processes, with ``PJRT_DEVICE`` set, unset and wrong.

Each case runs :data:`DETECT` in a new interpreter with only its own torch_xla variables, and
checks what a user sees: the report's verdict, whether torch_xla was imported or its runtime
started, and what forcing ``ACCELHAL_ACCELERATOR=xla`` says. The CPU-client case goes on to use
the device: the RNG state torch_xla starts with, and a one-rank process group over the
accelerator's communication backend.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from accelhal_backends.xla.detection import tpu_chips
from tests.xla import require_torch_xla

require_torch_xla()

DETECT = """
import json, os, sys
import accelhal
from accelhal.errors import BackendUnavailableError

def detect(variables):
    for name in ("PJRT_DEVICE", "CPU_NUM_DEVICES", "ACCELHAL_ACCELERATOR"):
        os.environ.pop(name, None)
    if variables.pop("import torch_xla first", None):
        import torch_xla  # as Accelerate does whenever torch_xla is installed
    os.environ.update(variables)
    accelhal.reset_accelerator()
    report = accelhal.detect()
    xla = report.candidate("xla")
    out = {
        "chosen": report.chosen, "rule": report.rule, "status": xla.status.value, "reason": xla.reason,
        "hint": xla.hint, "probe_seconds": xla.probe_seconds, "imported": "torch_xla" in sys.modules,
        "pjrt_device": os.environ.get("PJRT_DEVICE"),
    }
    if out["imported"]:
        import torch_xla
        out["runtime_started"] = bool(torch_xla._XLAC._xla_runtime_is_initialized())
    if report.chosen == "xla":
        out.update(use(accelhal.get_accelerator()))
        return out
    os.environ["ACCELHAL_ACCELERATOR"] = "xla"
    accelhal.reset_accelerator()
    try:
        out["forced"] = accelhal.get_accelerator().name
    except BackendUnavailableError as exc:
        out["forced"] = str(exc)
    return out

def use(acc):
    import torch, torch.distributed as dist
    out = {"fresh_seed": int.from_bytes(bytes(acc.get_rng_state().tolist()), "little")}
    out["initial_seed"] = acc.initial_seed()
    dist.init_process_group(acc.communication_backend_name(), init_method="xla://")
    values = torch.arange(4.0, device=acc.device())
    dist.all_reduce(values)
    acc.synchronize()
    out["group"] = [dist.get_backend(), dist.get_world_size(), values.cpu().tolist()]
    dist.destroy_process_group()
    return out

print(json.dumps([detect(variables) for variables in json.loads(sys.argv[1])]))
"""

TORCH_XLA_VARIABLES = ("PJRT_DEVICE", "CPU_NUM_DEVICES", "ACCELHAL_ACCELERATOR", "DS_ACCELERATOR")


def detect(*cases: dict[str, str]) -> list[dict[str, Any]]:
    """Run :data:`DETECT` on ``cases`` (each the torch_xla variables it sets) in one fresh interpreter.

    The interpreter starts with none of these variables; cases that import torch_xla must come last
    (importing it changes the process). A case ``{"import torch_xla first": "1"}`` imports it before detecting.
    """
    env = {k: v for k, v in os.environ.items() if k not in TORCH_XLA_VARIABLES}
    command = [sys.executable, "-c", DETECT, json.dumps(cases)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    results: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return results


def test_pjrt_device_cpu_selects_xla_without_starting_its_runtime() -> None:
    [found] = detect({"PJRT_DEVICE": "CPU", "CPU_NUM_DEVICES": "2"})
    print(f"PJRT_DEVICE=CPU: probe {found['probe_seconds']:.3f} s (imports torch_xla)")
    assert (found["chosen"], found["rule"], found["status"]) == ("xla", "priority", "available")
    assert found["reason"] == "2 device(s) of XLA's CPU client (PJRT_DEVICE=CPU)"
    assert found["imported"] and found["runtime_started"] is False
    assert found["pjrt_device"] == "CPU"
    assert found["initial_seed"] == found["fresh_seed"]  # the seed torch_xla starts every device with
    assert found["group"] == ["xla", 1, [0.0, 1.0, 2.0, 3.0]]


REFUSED = {
    "PJRT_DEVICE=NOSUCH": ({"PJRT_DEVICE": "NOSUCH"}, "broken", "names no PJRT client torch_xla has here (it has CPU,"),
    "PJRT_DEVICE=TPU": ({"PJRT_DEVICE": "TPU"}, "no-device", "but no TPU chip is attached"),
    "CPU_NUM_DEVICES=zero": ({"PJRT_DEVICE": "CPU", "CPU_NUM_DEVICES": "zero"}, "broken", "is not a device count"),
}
"""A client named without devices: (variables, status, what the reason and the forced error say)."""


@pytest.mark.skipif(tpu_chips() > 0, reason="a TPU is attached: PJRT_DEVICE unset and TPU mean a device here")
def test_no_device_chosen_is_refused_before_torch_xla_is_imported() -> None:
    unset, *refused, imported = detect(
        {}, *(variables for variables, _, _ in REFUSED.values()), {"import torch_xla first": "1"}
    )
    print(f"PJRT_DEVICE unset: probe {unset['probe_seconds'] * 1e3:.2f} ms (imports nothing)")
    assert (unset["chosen"], unset["rule"], unset["status"]) == ("cpu", "fallback", "no-device")
    assert unset["reason"].startswith("PJRT_DEVICE is unset and no TPU is attached")
    assert "PJRT_DEVICE=CPU" in unset["hint"]
    assert unset["pjrt_device"] is None  # importing torch_xla would have written CPU
    assert "'xla'" in unset["forced"] and "PJRT_DEVICE is unset" in unset["forced"]
    assert "Set PJRT_DEVICE=CPU" in unset["forced"]
    for (case, (_, status, says)), found in zip(REFUSED.items(), refused, strict=True):
        assert (found["chosen"], found["status"]) == ("cpu", status), case
        assert found["reason"].startswith(case) and says in found["reason"], found["reason"]
        assert says in found["forced"], found["forced"]
    assert not any(found["imported"] for found in (unset, *refused))
    # a process that imported torch_xla with PJRT_DEVICE unset has chosen XLA's CPU client: torch_xla wrote it
    assert (imported["pjrt_device"], imported["chosen"], imported["status"]) == ("CPU", "xla", "available")
    assert imported["runtime_started"] is False
