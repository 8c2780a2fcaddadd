"""torch.compile on the test device: the generic backend answers ``aot_eager``, which works; Inductor is refused.

torch has no Inductor code generation for out-of-tree (PrivateUse1) devices, so Inductor
fails there deep inside Dynamo (``InductorError: KeyError: 'testdev'`` on torch 2.13). One interpreter
compiles the small model of :mod:`tests.compiled_model`, shows that Inductor really fails,
that ``set_compile_backend`` refuses it first, and that a vendor's registration of a code
generator (through torch's two registration routes, called for real) turns the answer to
``inductor``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.compiled_model import TOLERANCE
from tests.privateuse1.child import on_device
from tests.torch_features import needs_generic_backend

pytestmark = [pytest.mark.privateuse1, needs_generic_backend]  # the device is the generic backend's

COMPILE = """
import sys
import accelhal
from tests.compiled_model import compare

acc = accelhal.get_accelerator()
result = {"loaded_before": sorted(m for m in ("torch._dynamo", "torch._inductor") if m in sys.modules)}
result["answer"] = acc.get_compile_backend()
result["loaded_after_answer"] = sorted(m for m in ("torch._dynamo", "torch._inductor") if m in sys.modules)
result["compiled"] = compare(new_shape=True)

def refusal(name):
    try:
        acc.set_compile_backend(name)
    except ValueError as error:
        return {"type": type(error).__name__, "message": str(error), "reason": error.reason, "working": error.working}
    return None

result["set_inductor"] = refusal("inductor")
result["set_unknown"] = refusal("no-such-backend")
result["after_refusals"] = acc.get_compile_backend()
try:
    compare("inductor")
    result["inductor_anyway"] = "compiled"
except Exception as error:
    result["inductor_anyway"] = f"{type(error).__name__}: {error}".splitlines()[0]

# A vendor registers Inductor code generation, by either of torch's two routes.
from torch._inductor.codegen.common import register_backend_for_device
from torch._inductor.codegen.cpp import CppScheduling
from torch._inductor.codegen.wrapper import PythonWrapperCodegen
module.Scheduling, module.PythonWrapperCodegen, module.CppWrapperCodegen = (
    CppScheduling, PythonWrapperCodegen, PythonWrapperCodegen)
result["with_module_attributes"] = acc.compile_backend_choice().reason
del module.Scheduling, module.PythonWrapperCodegen, module.CppWrapperCodegen
result["without_them"] = acc.get_compile_backend()
register_backend_for_device(name, CppScheduling, PythonWrapperCodegen)
result["registered"] = [acc.get_compile_backend(), acc.compile_backend_choice().reason]
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def compiled() -> dict[str, Any]:
    return on_device(COMPILE, devices=1)


def test_the_answer_is_aot_eager_and_costs_no_dynamo_import(compiled: dict[str, Any]) -> None:
    assert compiled["answer"] == "aot_eager"
    assert compiled["loaded_before"] == compiled["loaded_after_answer"] == []
    choice = compiled["compiled"]["choice"]
    assert choice["source"] == "fallback"
    assert choice["reason"].startswith("Inductor has no code generator for device type 'testdev'")


def test_the_compiled_model_gives_eagers_outputs_without_recompiling(compiled: dict[str, Any]) -> None:
    result = compiled["compiled"]
    print(f"\ntestdev: {result}")
    assert (result["backend"], result["device"], result["output_device"]) == ("aot_eager", "testdev:0", "testdev:0")
    assert result["max_abs_difference"] <= TOLERANCE["atol"]
    assert (result["graphs_after_first_call"], result["recompiles"]) == (1, 0)
    assert result["recompiles_on_new_shape"] == 1  # the count does see a recompilation


def test_inductor_fails_on_the_device_and_set_compile_backend_refuses_it_first(compiled: dict[str, Any]) -> None:
    # torch 2.13: "KeyError: 'testdev'"; torch 2.11: "AssertionError: Device testdev not supported"
    assert compiled["inductor_anyway"].startswith("InductorError: ") and "testdev" in compiled["inductor_anyway"]
    refused = compiled["set_inductor"]
    assert refused["type"] == "CompileBackendError" and refused["working"] == "aot_eager"
    assert refused["message"].startswith("torch.compile backend 'inductor' cannot be used on 'testdev': Inductor has")
    assert "'aot_eager' works there" in refused["message"]
    unknown = compiled["set_unknown"]
    assert "not a torch.compile backend known to this torch" in unknown["reason"]
    assert "registered backends: aot_eager, " in unknown["message"] and "inductor" in unknown["message"]
    assert compiled["after_refusals"] == "aot_eager"


def test_a_vendors_registered_code_generator_makes_the_answer_inductor(compiled: dict[str, Any]) -> None:
    assert compiled["with_module_attributes"].endswith(
        "its device module torch.testdev provides Scheduling, PythonWrapperCodegen, CppWrapperCodegen"
    )
    assert compiled["without_them"] == "aot_eager"
    answer, reason = compiled["registered"]
    assert answer == "inductor" and "its vendor registered a code generator (register_backend_for_device)" in reason
