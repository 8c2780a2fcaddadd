"""The Ray bridge without a cluster: resource names from Ray's own accelerator managers, the command's forms.

What runs on a real cluster (training, scheduling, devices, process groups) is in
``tests/compat/test_ray_cluster.py``.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from typing import Any

import pytest

from accelhal.cli import main
from accelhal.cli.commands.schema import schemas
from accelhal.selection import registry
from tests.compat.ray_shapes import documented_resources

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="needs the ray extra: pip install '.[ray]' in the clone"
)

THIRD_PARTY = """
from accelhal import BackendSpec, Verdict, hookimpl

def probe():
    return Verdict.no_device("a plugin of the tests: its device is elsewhere")

@hookimpl
def accelhal_register_backends(register):
    for name, variables in {"acmeneuron": ("NEURON_RT_VISIBLE_CORES",), "acmenew": ("ACME_VISIBLE_DEVICES",),
                            "acmemixed": ("CUDA_VISIBLE_DEVICES", "ASCEND_RT_VISIBLE_DEVICES")}.items():
        register(BackendSpec(name=name, device_type=name, priority=50, accelerator="acme_ray:Absent", probe=probe,
                             visible_devices_envs=variables))
"""


def test_every_built_in_backend_has_the_documented_resource() -> None:
    from importlib.metadata import version

    from accelhal.compat.ray import resource_name

    built_in = [r.spec.name for r in registry().ordered() if r.plugin.builtin]
    documented = documented_resources(version("ray"))  # docs/ray.md, for the installed release
    assert sorted(documented) == sorted(built_in)
    assert {name: resource_name(name) or "—" for name in built_in} == documented
    assert documented["cuda"] == "GPU" and documented["npu"] == "NPU"  # Ray's names


def test_a_third_party_backend_gets_rays_name_by_its_variable(install_distribution: Any) -> None:
    from accelhal.compat.ray import resource_name

    install_distribution("acme-ray", {"acme_ray": THIRD_PARTY}, entry_points={"acme": "acme_ray"})
    assert resource_name("acmeneuron") == "neuron_cores"  # Ray's AWS Neuron manager owns NEURON_RT_VISIBLE_CORES
    assert resource_name("acmenew") == "acmenew"  # a variable Ray does not know: a custom resource
    with pytest.raises(ValueError, match=r"'acmemixed' backend .* several resources \(GPU, NPU\)") as info:
        resource_name("acmemixed")
    assert type(info.value).__name__ == "ConfigurationError"


def test_an_unknown_backend_is_named_with_the_known_ones() -> None:
    import accelhal
    from accelhal.compat.ray import resource_name

    with pytest.raises(accelhal.UnknownBackendError, match="unknown accelerator 'tpu' .*known accelerators: .*cpu"):
        resource_name("tpu")


@pytest.mark.parametrize(
    ("resources", "arguments"),
    [
        ({}, []),
        ({"GPU": 8}, ["--num-gpus=8"]),
        ({"NPU": 8}, ['--resources={"NPU":8}']),
        ({"GPU": 2, "mlu": 1, "NPU": 4}, ["--num-gpus=2", '--resources={"NPU":4,"mlu":1}']),
    ],
)
def test_ray_start_takes_gpu_by_option_and_the_rest_as_json(resources: dict[str, int], arguments: list[str]) -> None:
    from accelhal.compat.ray import ray_start_arguments

    assert ray_start_arguments(resources) == arguments


def test_on_cpu_the_node_has_no_accelerator_resource(capsys: pytest.CaptureFixture[str]) -> None:
    from accelhal.compat.ray import node_resources, resource_name

    assert resource_name() is None and node_resources() == {}
    assert main(["ray-resources"]) == 0 and capsys.readouterr().out == "{}\n"
    assert main(["ray-resources", "--args"]) == 0 and capsys.readouterr().out == "\n"
    assert main(["ray-resources", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == {"backend": "cpu", "resources": {}, "resources_json": "{}", "arguments": []}
    assert set(schemas()["ray-resources"]["properties"]) == set(printed)


def test_importing_the_bridge_imports_neither_ray_nor_torch() -> None:
    code = "import sys, accelhal.compat.ray; print(sorted({m.split('.')[0] for m in sys.modules} & {'ray', 'torch'}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"
