"""Ray Train on a real three-node Ray cluster: accelhal's path against Ray's own, on cpu and on the test device.

The cluster is three ``ray start`` nodes on this host (:mod:`tests.compat.ray_cluster`): a
head with four CPUs and no device; a node holding the PrivateUse1 test device under its own
name (``testdev``: loaded by its ``torch.backends`` entry point, as an out-of-tree vendor's
device is; the generic backend; a custom Ray resource); and a node holding it renamed ``npu``
with torch_npu's module surface (the npu backend; Ray's own ``NPU`` resource, whose
visible-devices variable Ray sets). Each device node is started with exactly the options
``accelhal ray-resources`` printed there. One driver without a device runs four
``TorchTrainer`` fits together (:mod:`tests.compat.ray_train`): two workers on cpu by Ray's own
code path, and two each on cpu, testdev and npu by accelhal's. Every run trains the same
model on the same data. Where the test device cannot be built (torch older than it needs, as at
the adapters' floor), the cluster is the head alone and the two cpu fits run. The fits run on
the Ray Train the installed Ray runs by default (v1 before Ray 2.51, v2 from it).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.compat import REPO, child_environment
from tests.compat.ray_cluster import local_cluster
from tests.privateuse1 import device
from tests.privateuse1.child import on_device, run_accelhal, write_autoload_distribution
from tests.privateuse1.vendor import write_vendor_package

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.privateuse1,
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None, reason="needs the ray extra: pip install '.[ray]' in the clone"
    ),
]

SCRIPT = REPO / "tests" / "compat" / "ray_train.py"
TESTDEV = device.DEFAULT_NAME
WITHOUT_DEVICE = device.unsupported()
"""Why the test device cannot be built here (torch older than it needs), or None: then only the cpu runs train."""
needs_test_device = pytest.mark.skipif(WITHOUT_DEVICE is not None, reason=WITHOUT_DEVICE or "")

ON_THE_DEVICE = """
import contextlib, io
from accelhal.cli import main
from accelhal.compat import ray as accelhal_ray

resources = accelhal_ray.node_resources()
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    status = main(["ray-resources", "--json"])
print(json.dumps({
    "resources": resources, "status": status, "command": json.loads(printed.getvalue()),
    "resource_name": accelhal_ray.resource_name(),
    "initialized": [module.has_primary_context(i) for i in range(module.device_count())],
}))
"""
"""On a node with the test device: what accelhal advertises to Ray, and whether asking created a device context."""


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Where each device node finds its device: an autoload distribution (testdev), a vendor package (npu)."""
    testdev = tmp_path_factory.mktemp("testdev-site")
    write_autoload_distribution(testdev, TESTDEV)
    return {"testdev": testdev, "npu": write_vendor_package("npu", tmp_path_factory.mktemp("npu-site"))}


@pytest.fixture(scope="module")
def nodes(sites: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """``accelhal ray-resources --json`` on each device node, and on the testdev node node_resources() in-process.

    Empty without the test device: the cluster is then the head alone.
    """
    if WITHOUT_DEVICE is not None:
        return {}
    with ThreadPoolExecutor(2) as pool:
        testdev = pool.submit(on_device, ON_THE_DEVICE, devices=2)
        npu = pool.submit(run_accelhal, sites["npu"], "ray-resources", "--json", **{device.DEVICES_VARIABLE: "2"})
        done = npu.result()
        assert done.returncode == 0, done.stderr
        return {"testdev": testdev.result(), "npu": {"command": json.loads(done.stdout), "stderr": done.stderr}}


@pytest.fixture(scope="module")
def trained(
    sites: dict[str, Path], nodes: dict[str, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """The cluster, the four fits and the driver's view; the cluster is gone when this returns."""
    out = tmp_path_factory.mktemp("ray-runs")
    head_env = child_environment(RAY_TRAIN_ENABLE_PREEMPTION_WATCHER="0")  # one actor fewer per fit
    devices = {device.DEVICES_VARIABLE: "2"}
    device_envs = {
        "testdev": child_environment(
            PYTHONPATH=f"{sites['testdev']}:{REPO}", ACCELHAL_TESTDEV_COLLECTIVES="1", **devices
        ),
        "npu": child_environment(PYTHONPATH=f"{sites['npu']}:{REPO}", **devices),
    }
    runs = ["ray-cpu:ray:CPU:2", "accelhal-cpu:accelhal:CPU:2"]
    runs += [f"{name}:accelhal:{next(iter(node['command']['resources']))}:2" for name, node in nodes.items()]
    with local_cluster() as cluster:
        address = cluster.start_head(["--num-cpus=4"], head_env)
        for name in nodes:  # one at a time: a raylet must register with the GCS in time
            cluster.add_node(["--num-cpus=0", *nodes[name]["command"]["arguments"]], device_envs[name])
        command = [sys.executable, str(SCRIPT), f"--address={address}", f"--out={out}", f"--nodes={1 + len(nodes)}"]
        command += [f"--run={run}" for run in runs]
        done = subprocess.run(command, env=head_env, cwd=REPO, capture_output=True, text=True, timeout=600)
        logs = "\n".join(path.read_text()[-2000:] for path in cluster.logs)
    stopped = {"root": str(cluster.root), "sessions": cluster.sessions, "left": cluster.processes()}
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}\n{logs}"
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    result: dict[str, Any] = json.loads(line.removeprefix("RESULT "))
    return {**result, "stopped": stopped}


def loss_table(result: dict[str, Any]) -> str:
    """Each run's losses by rank and step, side by side."""
    runs = result["runs"]
    lines = [f"{'rank':>4} {'step':>4}  " + "  ".join(f"{name:>20}" for name in runs)]
    for rank, reference in enumerate(runs["ray-cpu"]):
        for step in range(len(reference["losses"])):
            row = "  ".join(f"{records[rank]['losses'][step]!r:>20}" for records in runs.values())
            lines.append(f"{rank:>4} {step:>4}  {row}")
    return "\n".join(lines)


def holder(trained: dict[str, Any], resource: str) -> str:
    """The one node that advertises ``resource``."""
    (node_id,) = [node_id for node_id, resources in trained["nodes"].items() if resources.get(resource, 0) > 0]
    return node_id


@needs_test_device
def test_the_device_node_advertises_the_device_under_its_own_name(nodes: dict[str, dict[str, Any]]) -> None:
    node = nodes["testdev"]
    assert node["resources"] == {TESTDEV: 2} and node["resource_name"] == TESTDEV
    assert node["status"] == 0
    assert node["command"] == {
        "backend": TESTDEV,
        "resources": {TESTDEV: 2},
        "resources_json": f'{{"{TESTDEV}":2}}',
        "arguments": [f'--resources={{"{TESTDEV}":2}}'],
    }
    assert node["initialized"] == [False, False]  # counted without creating a device context


@needs_test_device
def test_the_npu_node_advertises_rays_own_npu_resource(nodes: dict[str, dict[str, Any]]) -> None:
    assert nodes["npu"]["command"] == {
        "backend": "npu",
        "resources": {"NPU": 2},
        "resources_json": '{"NPU":2}',
        "arguments": ['--resources={"NPU":2}'],
    }


def test_ray_start_took_the_printed_arguments(trained: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> None:
    assert len(trained["nodes"]) == 1 + len(nodes)
    for resource in (next(iter(node["command"]["resources"])) for node in nodes.values()):
        assert trained["cluster_resources"][resource] == 2
        assert trained["nodes"][holder(trained, resource)][resource] == 2
    assert trained["cluster_resources"]["CPU"] == 4


def test_cpu_workers_train_as_with_rays_own_torch_config(trained: dict[str, Any]) -> None:
    print("\n" + loss_table(trained))
    ours, theirs = trained["runs"]["accelhal-cpu"], trained["runs"]["ray-cpu"]
    assert [r["rank"] for r in ours] == [r["rank"] for r in theirs] == [0, 1]
    for mine, rays in zip(ours, theirs, strict=True):
        assert mine["losses"] == rays["losses"] and len(mine["losses"]) == 16
        assert sum(mine["losses"][8:]) < sum(mine["losses"][:8]), "the loss did not go down"
        assert mine["process_group_backend"] == rays["process_group_backend"] == "gloo"
        assert (mine["device"], mine["batch_device"], mine["param_device"]) == ("cpu", "cpu", "cpu")
        assert (mine["backend"], mine["current_device"], mine["rays_device"]) == ("cpu", "cpu", "cpu")
        assert mine["assigned"] == rays["assigned"] == {"CPU": 1.0}
        assert mine["node"] == rays["node"] == holder(trained, "CPU")  # the head: the driver may use any raylet
    assert ours[0]["losses"] != ours[1]["losses"]  # each rank trained on its own shard


@needs_test_device
def test_device_workers_are_scheduled_on_its_resource_and_train_on_it(trained: dict[str, Any]) -> None:
    ours = trained["runs"][TESTDEV]
    assert [r["rank"] for r in ours] == [0, 1] and sorted(r["local_rank"] for r in ours) == [0, 1]
    for mine, rays in zip(ours, trained["runs"]["ray-cpu"], strict=True):
        on = f"{TESTDEV}:{mine['local_rank']}"  # Ray sets no variable for a custom resource: the local rank
        assert mine["assigned"] == {TESTDEV: 1.0} and mine["node"] == holder(trained, TESTDEV)
        assert (mine["device"], mine["batch_device"], mine["param_device"]) == (on, on, on)
        assert (mine["backend"], mine["current_device"]) == (TESTDEV, on)
        assert mine["rays_device"] == "cpu"  # Ray's own device logic does not know the device
        assert mine["process_group_backend"] == "hostgloo"  # the device's collectives, asked of the workers
        assert mine["losses"] == rays["losses"]


@needs_test_device
def test_npu_workers_take_the_device_ray_made_visible(trained: dict[str, Any]) -> None:
    ours = trained["runs"]["npu"]
    assert [r["rank"] for r in ours] == [0, 1]
    assert sorted(r["ids"]["NPU"] for r in ours) == [["0"], ["1"]]  # one NPU each, assigned by Ray
    for mine, rays in zip(ours, trained["runs"]["ray-cpu"], strict=True):
        # Ray sets the variable: to the worker's own id (Ray Train v2), or to the ids of all the node's workers (v1)
        visible = mine["visible"]["ASCEND_RT_VISIBLE_DEVICES"].split(",")
        assert mine["ids"]["NPU"][0] in visible
        on = f"npu:{visible.index(mine['ids']['NPU'][0])}"
        assert mine["assigned"] == {"NPU": 1.0} and mine["node"] == holder(trained, "NPU")
        assert (mine["device"], mine["batch_device"], mine["param_device"]) == (on, on, on)
        assert (mine["backend"], mine["current_device"], mine["rays_device"]) == ("npu", on, on)
        assert mine["process_group_backend"] == "hccl"
        assert mine["losses"] == rays["losses"]


def test_the_drivers_misuses_are_named_errors(trained: dict[str, Any]) -> None:
    errors = trained["driver_errors"]
    assert errors["device"].startswith("DistributedSetupError: ") and "Ray Train worker" in errors["device"]
    assert errors["torch_config"] == (
        "ConfigurationError: torch_config() takes TorchConfig's options (backend, init_method, timeout_s), not gpus"
    )


def test_the_cluster_is_gone_after_the_block(trained: dict[str, Any], nodes: dict[str, dict[str, Any]]) -> None:
    """Every process of the nodes' sessions was killed and the directory removed; nothing else was touched."""
    stopped = trained["stopped"]
    assert len(stopped["sessions"]) == 1 + len(nodes) and stopped["left"] == []
    assert not Path(stopped["root"]).exists()
