"""The generic backend on a torch whose ``torch.accelerator`` lacks what it calls: ``broken``, naming what is missing.

On torch 2.9 (the device builds, ``torch.accelerator`` has no ``get_memory_info`` and no
``get_device_capability``) this is the real thing; on a newer torch the child removes those two
functions before detection, as torch 2.9 lacks them.
"""

from __future__ import annotations

import pytest

from tests.privateuse1.child import on_device

pytestmark = pytest.mark.privateuse1

AS_TORCH_2_9 = """
from accelhal.contract.probes import GENERIC_OLDEST_TORCH
if torch.__version__ >= GENERIC_OLDEST_TORCH:
    del torch.accelerator.get_memory_info, torch.accelerator.get_device_capability
import accelhal
report = accelhal.detect()
candidate = report.candidate(name)
forced = None
try:
    accelhal.set_accelerator(name)
except accelhal.AccelhalError as exc:
    forced = f"{type(exc).__name__}: {exc}"
print(json.dumps({"chosen": report.chosen, "status": candidate.status.value, "reason": candidate.reason,
                  "hint": candidate.hint, "forced": forced, "context": module.is_initialized()}))
"""


def test_a_torch_without_what_it_calls_makes_it_broken_with_the_reason() -> None:
    result = on_device(AS_TORCH_2_9)
    assert (result["chosen"], result["status"]) == ("cpu", "broken")
    assert (
        "torch.accelerator has no get_memory_info, get_device_capability, which the generic backend calls"
        in (result["reason"])
    )
    assert "(torch >= 2.10 has them)" in result["reason"]
    assert result["hint"].startswith("upgrade torch to 2.10 or later")
    assert result["forced"] is not None and "get_memory_info" in result["forced"]
    assert result["context"] is False
