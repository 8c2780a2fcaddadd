"""The member table against the installed vLLM's ``Platform``, and the class the bridge builds from it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from accelhal.compat.vllm import MEMBERS
from tests.compat.engines import rows_naming_no_real_member
from tests.compat.vllm.runs import environment, run_code


def platform_members() -> set[str]:
    """Every member of the installed vLLM's ``Platform`` (attributes, annotations, methods; ``__getattr__``)."""
    from vllm.platforms.interface import Platform

    names = {n for n in dir(Platform) if not (n.startswith("__") and n.endswith("__"))}
    names |= set(Platform.__annotations__)
    return names | {"__getattr__"}


def test_the_table_covers_every_member_of_the_installed_platform() -> None:
    missing = sorted(platform_members() - set(MEMBERS))
    assert not missing, f"vLLM's Platform has members the bridge's table (MEMBERS) does not cover: {missing}"


def test_the_table_names_no_member_the_installed_platform_lacks() -> None:
    from accelhal.compat.vllm._releases import SHAPES, SUPPORTED

    lacking = SHAPES.shape_for(SUPPORTED.installed())
    assert set(MEMBERS) - platform_members() == set(lacking)


def test_contract_and_spec_rows_name_real_members() -> None:
    from accelhal.compat.vllm import VllmKit

    assert not rows_naming_no_real_member(MEMBERS, VllmKit)


BUILT = """
import json, sys
from vllm.platforms import current_platform as p
from vllm.platforms.cpu import CpuPlatform
from vllm.platforms.interface import Platform
from accelhal.compat.vllm import MEMBERS
cls = type(p)
acc = cls.accelerator
def origin(member):
    if member == "__getattr__":
        return "contract"
    if member not in vars(cls):
        return "vllm"
    value = vars(cls)[member]
    routine = isinstance(value, (classmethod, staticmethod, property)) or callable(value)
    if routine and value is vars(CpuPlatform).get(member, object()):
        return "portable"
    return "answer"
print(json.dumps({
    "class": cls.__name__,
    "origins": {m: origin(m) for m in MEMBERS},
    "dist_backend": p.dist_backend, "comm": acc.communication_backend_name(),
    "device_type": p.device_type, "device_name": p.device_name, "dispatch_key": p.dispatch_key,
    "compile": p.simple_compile_backend, "compile_contract": acc.get_compile_backend(),
    "dtypes": [str(d) for d in p.supported_dtypes], "dtypes_contract": sorted(map(str, acc.supported_dtypes())),
    "pin": p.is_pin_memory_available(), "memory": p.get_device_total_memory(0), "memory_contract": acc.total_memory(0),
    "communicator": p.get_device_communicator_cls(), "is_cpu": p.is_cpu(), "oot": p.is_out_of_tree(),
    "synchronize": p.synchronize == acc.synchronize,
}))
"""


@pytest.fixture(scope="module")
def built() -> dict[str, Any]:
    """The bridge's platform on cpu (forced), as vLLM resolves it in a fresh process."""
    env = environment(ACCELHAL_VLLM_PLATFORM="on", ACCELHAL_ACCELERATOR="cpu")
    done = run_code(BUILT, env)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_each_member_of_the_built_class_comes_from_its_row(built: dict[str, Any]) -> None:
    expected = {"vllm": "vllm", "portable": "portable", "contract": "answer", "spec": "answer", "kit": "answer"}
    from accelhal.compat.vllm._releases import SHAPES, SUPPORTED

    lacking = SHAPES.shape_for(SUPPORTED.installed()) | {"__getattr__"}
    wrong = {m: o for m, o in built["origins"].items() if o != expected[MEMBERS[m].source] and m not in lacking}
    assert built["class"] == "AccelhalCpuPlatform"
    assert not wrong, f"members whose origin is not their row's: {wrong}"


def test_the_answers_are_the_contracts(built: dict[str, Any]) -> None:
    assert built["dist_backend"] == built["comm"] == "gloo"
    assert (built["device_type"], built["device_name"], built["dispatch_key"]) == ("cpu", "cpu", "CPU")
    assert built["compile"] == built["compile_contract"]
    assert sorted(built["dtypes"]) == built["dtypes_contract"]
    assert built["dtypes"][0] == "torch.bfloat16"  # vLLM's first choice for dtype="auto", where supported
    assert built["pin"] is False
    assert built["memory"] == built["memory_contract"] > 0
    assert built["communicator"].endswith("CpuCommunicator")
    assert built["is_cpu"] is True and built["oot"] is False
    assert built["synchronize"] is True
