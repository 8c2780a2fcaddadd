"""The ``accelhal_vllm_kit`` hook: a plugin's kit answers its rows; without one, the portable path does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.compat.vllm import kit_plugin
from tests.compat.vllm.runs import device_site, environment, run_code
from tests.sharing import RunCache

ASK = """
import json, os
from vllm.platforms import current_platform as p
p.import_kernels()
print(json.dumps({
    "class": type(p).__name__,
    "attention": p.get_attn_backend_cls(None, None) if type(p).kit.attention_backend else "portable",
    "communicator": p.get_device_communicator_cls(),
    "punica": p.get_punica_wrapper(),
    "kernels_imported": os.environ.get("ACCELHAL_TEST_KIT_KERNELS_IMPORTED") == "1",
    "out_of_tree": p.is_out_of_tree(), "dispatch_key": p.dispatch_key, "device_type": p.device_type,
}))
"""


def ask(run_cache: RunCache, *sites: Path) -> dict[str, object]:
    env = environment(site=device_site(run_cache))
    env["PYTHONPATH"] = ":".join([*map(str, sites), env["PYTHONPATH"]])
    done = run_code(ASK, env)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_a_plugins_kit_answers_its_rows(run_cache: RunCache, tmp_path: Path) -> None:
    found = ask(run_cache, kit_plugin.install(tmp_path))
    assert found["class"] == "AccelhalTestdevPlatform"
    assert found["attention"] == kit_plugin.KIT.attention_backend
    assert found["communicator"] == kit_plugin.KIT.device_communicator
    assert found["punica"] == kit_plugin.KIT.punica_wrapper
    assert found["kernels_imported"] is True


def test_without_a_kit_the_device_takes_the_portable_path(run_cache: RunCache) -> None:
    found = ask(run_cache)
    assert found["class"] == "AccelhalTestdevPlatform"
    assert found["communicator"].endswith("DeviceCommunicatorBase")
    assert found["punica"].endswith("PunicaWrapperCPU")
    assert found["kernels_imported"] is False
    assert (found["out_of_tree"], found["dispatch_key"], found["device_type"]) == (True, "PrivateUse1", "testdev")


@pytest.mark.parametrize(("field", "value"), [("kernels", "one.module"), ("worker", 3), ("attention_backend", None)])
def test_a_kit_of_the_wrong_shape_is_refused_where_it_is_written(field: str, value: object) -> None:
    from accelhal.compat.vllm import VllmKit

    with pytest.raises(TypeError, match=f"VllmKit.{field}"):
        VllmKit(**{field: value})  # type: ignore[arg-type]
