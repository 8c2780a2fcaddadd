"""An op built through accelhal's op builders for the test device: a C++ kernel of the device's dispatch key.

The op comes from a third-party plugin (:mod:`tests.privateuse1.device_ops`, registered by
the same distribution whose ``torch.backends`` entry point loads the device) for the
generic backend's name, the device type. It is built into accelhal's op cache under the
test device's cache root, so later runs load it without compiling.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.privateuse1 import device
from tests.privateuse1.child import write_autoload_distribution
from tests.simulation import run_python
from tests.torch_features import needs_generic_backend

pytestmark = [pytest.mark.privateuse1, needs_generic_backend]  # the op runs through the generic backend

OP = """
import json, torch, accelhal
acc = accelhal.get_accelerator()
builder_class = acc.get_op_builder("AxpyBuilder")
builder = acc.create_op_builder("AxpyBuilder")
module = builder.load(verbose=False)
x = torch.arange(6.0, device=acc.device(1))
y = torch.full((6,), 0.5, device=acc.device(1))
before = acc.memory_allocated(1)
out = torch.ops.accelhal_testdev_ops.axpy(x, y, 2.0)
grew = acc.memory_allocated(1) - before
try:
    torch.ops.accelhal_testdev_ops.axpy(x.cpu(), y.cpu(), 2.0)
    on_cpu = None
except NotImplementedError as exc:
    on_cpu = str(exc).splitlines()[0]
missing = acc.create_op_builder("NoSuchBuilder")
print(json.dumps({
    "backend": acc.name, "generic": type(acc).__module__, "builder": builder_class.__qualname__,
    "plugin_module": builder_class.__module__, "compatible": builder.is_compatible(),
    "device": str(out.device), "values": out.cpu().tolist(), "expected": (2.0 * x.cpu() + y.cpu()).tolist(),
    "kernel_calls": module.calls(), "allocated": grew, "nbytes": out.nbytes, "on_cpu": on_cpu,
    "module_file": module.__file__, "missing": missing.compatibility().reason,
}))
"""


def test_an_op_built_through_the_op_builders_runs_on_device_tensors(tmp_path: Path) -> None:
    write_autoload_distribution(tmp_path, device.DEFAULT_NAME, accelhal_plugin="tests.privateuse1.device_ops")
    ops_cache = device.cache_root() / "ops"
    result = run_python(tmp_path, OP, ACCELHAL_OPS_CACHE=str(ops_cache))
    # found by the generic backend's name through the hook, built into accelhal's keyed cache
    assert (result["backend"], result["generic"]) == ("testdev", "accelhal_backends.generic.accelerator")
    assert (result["builder"], result["plugin_module"]) == ("AxpyBuilder", "tests.privateuse1.device_ops")
    assert result["compatible"] is True
    assert Path(result["module_file"]).is_relative_to(ops_cache)
    # the device kernel ran (once) on the device's memory; its result was allocated on the device
    assert result["device"] == "testdev:1"
    assert result["values"] == result["expected"] == [0.5, 2.5, 4.5, 6.5, 8.5, 10.5]
    assert result["kernel_calls"] == 1
    assert result["allocated"] == result["nbytes"] == 24
    # the kernel is the device's own: cpu tensors find none, so no CPU kernel (through the device's CPU fallback)
    # produced the result
    assert result["on_cpu"].startswith("Could not run 'accelhal_testdev_ops::axpy' with arguments from the 'CPU'")
    assert result["missing"] == "no plugin provides this op builder for 'testdev' (op builders there: AxpyBuilder)"
