"""accelhal's cpu backend pins as DeepSpeed's own ``CPU_Accelerator`` does: ``pin_memory`` returns the tensor itself.

DeepSpeed 0.19.8's ``CPU_Accelerator.pin_memory(tensor, make_copy=True, match_shape=True)`` returns ``tensor``
whatever ``make_copy`` and ``match_shape`` are (nothing is page-locked on a host without a device;
``DS_PIN_MEMORY_BACKEND=native`` aside), as its ``pin_memory(tensor, align_bytes=1)`` did to 0.19.5. A program that
moves from DeepSpeed's accelerator to ``accelhal.get_accelerator()`` on cpu gets the same objects back.
"""

from __future__ import annotations

import json

import pytest

from tests.cli.conftest import run_accelhal

pytest.importorskip("deepspeed", reason="DeepSpeed is installed by the adapters' sessions")

PROGRAM = """
import inspect, json, torch
import accelhal
from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator

ours, theirs = accelhal.get_accelerator(), CPU_Accelerator()
if "make_copy" not in inspect.signature(theirs.pin_memory).parameters:  # (tensor, align_bytes=1) to 0.19.5
    theirs.pin_memory = lambda tensor, make_copy, match_shape, pin=theirs.pin_memory: pin(tensor)
answers = {}
for make_copy in (True, False):
    for match_shape in (True, False):
        t = torch.ones(2, 3)
        label = f"make_copy={make_copy}, match_shape={match_shape}"
        answers[label] = [a.pin_memory(t, make_copy=make_copy, match_shape=match_shape) is t for a in (ours, theirs)]
print(json.dumps({"name": ours.name, "answers": answers}))
"""


def test_pin_memory_on_cpu_answers_as_deepspeeds_cpu_accelerator() -> None:
    result = run_accelhal(code=PROGRAM, env={"ACCELHAL_ACCELERATOR": "cpu"})
    assert result.returncode == 0, result.output
    found = json.loads(result.stdout.splitlines()[-1])
    assert found["name"] == "cpu"
    for label, (ours, theirs) in found["answers"].items():
        assert ours == theirs, f"pin_memory(t, {label}): accelhal returns t: {ours}, DeepSpeed: {theirs}"
