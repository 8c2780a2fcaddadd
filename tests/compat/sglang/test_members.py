"""The member table against the installed SGLang's ``SRTPlatform``, and the class the bridge builds from it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from accelhal.compat.sglang import MEMBERS
from accelhal.compat.sglang._releases import SHAPES, SUPPORTED
from tests.compat.engines import rows_naming_no_real_member, run_code
from tests.compat.sglang.runs import FORCED, environment
from tests.compat.sglang.shapes import platform_members


def test_the_table_covers_every_member_of_the_installed_platform() -> None:
    missing = sorted(platform_members() - set(MEMBERS))
    assert not missing, f"SGLang's SRTPlatform has members the bridge's table (MEMBERS) does not cover: {missing}"


def test_the_table_names_no_member_the_installed_platform_lacks() -> None:
    assert set(MEMBERS) - platform_members() == set(SHAPES.shape_for(SUPPORTED.installed()))


def test_contract_spec_and_kit_rows_name_real_members() -> None:
    from accelhal.compat.sglang import SglangKit

    assert not rows_naming_no_real_member(MEMBERS, SglangKit)


BUILT = """
import json
from sglang.srt.platforms import current_platform as p
from sglang.srt.platforms.interface import SRTPlatform
from accelhal.compat.sglang import MEMBERS
cls = type(p)
acc = cls.accelerator
print(json.dumps({
    "class": cls.__name__, "module": cls.__module__,
    "defined": sorted(m for m in MEMBERS if m in vars(cls)),
    "device_type": p.device_type, "device_name": p.device_name, "oot": p.is_out_of_tree(), "cpu": p.is_cpu(),
    "device": p.get_device(None), "device0": p.get_device(0), "dist": p.get_torch_distributed_backend_str(),
    "comm": acc.communication_backend_name(), "memory": p.get_device_total_memory(0),
    "memory_contract": acc.total_memory(0), "available": list(p.get_available_memory(0)),
    "usage": p.get_current_memory_usage(), "attention": p.get_default_attention_backend(),
    "dispatch": p.get_dispatch_key_name(), "pin": p.is_pin_memory_available(), "graph": p.get_graph_runner_cls(),
    "compile": p.get_compile_backend(), "compile_contract": acc.get_compile_backend(),
    "capabilities": {f: getattr(p.capabilities, f) for f in p.capabilities.__struct_fields__},
    "uuid": p.get_device_uuid(0),
}))
"""


@pytest.fixture(scope="module")
def built() -> dict[str, Any]:
    """The bridge's platform on cpu (forced), as SGLang resolves it in a fresh process."""
    done = run_code(BUILT, environment(**FORCED))
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_each_member_of_the_built_class_comes_from_its_row(built: dict[str, Any]) -> None:
    """The class defines exactly the members whose row is not SGLang's default; the rest are SGLang's own."""
    lacking = SHAPES.shape_for(SUPPORTED.installed())
    ours = sorted(m for m, answer in MEMBERS.items() if answer.source != "sglang" and m not in lacking)
    assert (built["class"], built["module"]) == ("AccelhalCpuPlatform", "accelhal.compat.sglang._platform")
    assert built["defined"] == ours


def test_the_answers_are_the_contracts(built: dict[str, Any]) -> None:
    assert built["dist"] == built["comm"] == "gloo"
    assert (built["device_type"], built["device_name"], built["device"], built["device0"]) == ("cpu",) * 4
    assert built["oot"] is True and built["cpu"] is False
    assert built["memory"] == built["memory_contract"] == built["available"][1] > 0
    assert 0 < built["usage"] < built["memory"]
    assert (built["attention"], built["dispatch"], built["graph"]) == ("torch_native", "native", None)
    assert built["pin"] is False
    assert built["compile"] == built["compile_contract"]
    assert not any(built["capabilities"].values())
    assert built["uuid"].endswith("-cpu")
