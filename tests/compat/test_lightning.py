"""Lightning's real Trainer on accelhal: the same losses as with Lightning's own accelerators.

Training runs in fresh processes (``lightning_train.py``): Lightning's DDP starts its other
rank by running the script again, and importing Lightning writes environment variables.
The three runs (one process of single-device runs, and two DDP pairs) start together.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

import accelhal
from accelhal.compat.lightning._releases import RANGES, SHAPES
from accelhal.errors import ConfigurationError
from tests.compat.lightning_shapes import recorded
from tests.compat.lightning_train import read_results

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("lightning") is None, reason="needs the lightning extra (pip install '.[lightning]')"
)

SCRIPT = Path(__file__).with_name("lightning_train.py")
REPO = SCRIPT.parents[2]
SINGLE = (
    "cpu:32-true",
    "accelhal:32-true",
    "accelhal-instance:32-true",
    "cpu:bf16-mixed",
    "accelhal:bf16-mixed",
    "accelhal:16-mixed",
    "pytorch_lightning/cpu:32-true",
    "pytorch_lightning/accelhal:32-true",
)
Runs = dict[str, list[dict[str, Any]]]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_", "LOCAL_", "RANK", "WORLD", "MASTER_"))}
    path = os.pathsep.join(p for p in (str(REPO), extra.pop("PYTHONPATH", ""), os.environ.get("PYTHONPATH", "")) if p)
    env.update(PYTHONPATH=path, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", **extra)
    return env


def _start(*args: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, str(SCRIPT), *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=REPO)


def _records(proc: subprocess.Popen[str]) -> list[dict[str, Any]]:
    """Every ``RESULT`` object the process (and the DDP rank it started) printed; ranks may interleave."""
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, f"{proc.args} failed:\n{out[-3000:]}\n{err[-5000:]}"
    return read_results(out)


@pytest.fixture(scope="module")
def trained() -> Runs:
    procs = {
        "single": _start("--shapes", *(f"--run={run}" for run in SINGLE)),
        "ddp-accelhal": _start("--run=accelhal:32-true", "--devices=2", "--strategy=accelhal-ddp"),
        "ddp-cpu": _start("--run=cpu:32-true", "--devices=2", "--strategy=ddp"),
    }
    return {name: _records(proc) for name, proc in procs.items()}


def _run(trained: Runs, spec: str) -> dict[str, Any]:
    package, _, rest = spec.rpartition("/")
    accelerator, _, precision = rest.partition(":")
    return next(
        r
        for r in trained["single"]
        if (r.get("package"), r.get("accelerator"), r.get("precision"))
        == (package or "lightning.pytorch", accelerator, precision)
    )


def _assert_trained(record: dict[str, Any]) -> list[float]:
    losses: list[float] = record["losses"]
    assert len(losses) == 16
    assert sum(losses[8:]) < sum(losses[:8]), f"the loss did not go down: {losses}"
    return losses


@pytest.mark.parametrize("ours", ["accelhal:32-true", "accelhal-instance:32-true"])
def test_same_losses_as_lightnings_cpu_accelerator(trained: Runs, ours: str) -> None:
    record, theirs = _run(trained, ours), _run(trained, "cpu:32-true")
    assert record["accelerator_class"] == "AccelhalAccelerator" and theirs["accelerator_class"] == "CPUAccelerator"
    assert (record["strategy"], record["root_device"], record["device"]) == ("SingleDeviceStrategy", "cpu", "cpu")
    assert _assert_trained(record) == _assert_trained(theirs)


HOST_LINE = (
    "accelhal: running on cpu (accelhal backend 'cpu'); Lightning's \"GPU available\" line above counts only CUDA "
    "and MPS devices"
)
"""accelhal's line on the host: where the run is, and why Lightning's line says no GPU is used (no second "used")."""


def test_lightnings_own_device_line_is_true_and_accelhals_line_cannot_be_read_against_it(trained: Runs) -> None:
    """On the host Lightning's "GPU available: False, used: False" is true; accelhal's line says what it counts."""
    for spec in ("accelhal:32-true", "accelhal-instance:32-true", "pytorch_lightning/accelhal:32-true"):
        record = _run(trained, spec)
        log = record["log"]
        assert "GPU available: False, used: False" in log
        assert log.index(HOST_LINE) > log.index("GPU available: False, used: False")
        assert [line for line in log if line.startswith("accelhal:")] == [HOST_LINE]
        assert not [line for line in log if line.startswith("accelhal:") and "used" in line]
        assert not [text for text in record["warnings"] if "GPU available" in text]
    assert not [line for line in _run(trained, "cpu:32-true")["log"] if line.startswith("accelhal:")]


CUDA_RUNS = ("cuda:32-true", "accelhal:32-true", "accelhal-instance:32-true", "cuda:bf16-mixed", "accelhal:bf16-mixed")


@pytest.mark.cuda
def test_on_cuda_lightnings_own_line_says_the_gpu_is_used_and_the_losses_are_lightnings() -> None:
    """On a GPU the accelerator is also a CUDAAccelerator: "used: True", no warning, Lightning's cuda losses."""
    cmd = [sys.executable, str(SCRIPT), *(f"--run={run}" for run in CUDA_RUNS)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=_env(ACCELHAL_ACCELERATOR="cuda"), cwd=REPO)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    runs = {f"{r['accelerator']}:{r['precision']}": r for r in read_results(done.stdout)}
    assert "GPU available: True (cuda), used: True" in runs["cuda:32-true"]["log"]  # Lightning's own accelerator
    for spec in ("accelhal:32-true", "accelhal-instance:32-true", "accelhal:bf16-mixed"):
        record, theirs = runs[spec], runs["cuda:" + spec.partition(":")[2]]
        assert record["accelerator_class"] == "AccelhalCUDAAccelerator", spec
        assert "GPU available: True (cuda), used: True" in record["log"], record["log"]
        assert [line for line in record["log"] if line.startswith("accelhal:")] == [
            "accelhal: running on cuda:0 (accelhal backend 'cuda'), the GPU Lightning's line above counts"
        ]
        assert not [text for text in record["warnings"] if "GPU available but not used" in text]
        placed = ("root_device", "device", "param_device", "autocast")
        assert [record[key] for key in placed] == [theirs[key] for key in placed]
        assert record["device"] == "cuda:0"
        assert _assert_trained(record) == _assert_trained(theirs), spec


def test_bf16_mixed_autocasts_on_the_backends_device(trained: Runs) -> None:
    """Lightning autocasts a custom accelerator on cuda; the accelerator moves it to the backend's device type."""
    record, theirs = _run(trained, "accelhal:bf16-mixed"), _run(trained, "cpu:bf16-mixed")
    assert record["autocast"] == theirs["autocast"] == "cpu"
    assert _assert_trained(record) == _assert_trained(theirs)
    assert record["losses"] != _run(trained, "accelhal:32-true")["losses"]  # autocast took effect


def test_fp16_mixed_is_refused_where_the_backend_has_no_float16(trained: Runs) -> None:
    record = _run(trained, "accelhal:16-mixed")
    assert record["error"].startswith("ConfigurationError: precision='16-mixed' needs a dtype the cpu backend")
    assert "is_fp16_supported() is False" in record["error"]


def test_ddp_two_processes_same_losses_as_lightnings_cpu_ddp(trained: Runs) -> None:
    ours, theirs = trained["ddp-accelhal"], trained["ddp-cpu"]
    assert [r["rank"] for r in ours] == [r["rank"] for r in theirs] == [0, 1]
    for mine, lightnings in zip(ours, theirs, strict=True):
        assert mine["accelerator_class"] == "AccelhalAccelerator" and mine["strategy"] == "DDPStrategy"
        assert (
            mine["world_size"] == 2 and mine["process_group_backend"] == lightnings["process_group_backend"] == "gloo"
        )
        assert _assert_trained(mine) == _assert_trained(lightnings)
    assert ours[0]["losses"] != ours[1]["losses"]  # each rank saw its own shard


def test_pytorch_lightning_package_trains_alike(trained: Runs) -> None:
    record, theirs = _run(trained, "pytorch_lightning/accelhal:32-true"), _run(trained, "pytorch_lightning/cpu:32-true")
    assert record["accelerator_class"] == "AccelhalAccelerator"
    assert _assert_trained(record) == _assert_trained(theirs) == _run(trained, "cpu:32-true")["losses"]


@pytest.mark.parametrize("package", ["lightning.pytorch", "pytorch_lightning"])
def test_the_installed_release_is_its_recorded_row(trained: Runs, package: str) -> None:
    """The shape read from the imported package (the training process's) is the recorded one of its release."""
    distribution = RANGES[package].distribution
    release = metadata.version(distribution)
    rows = recorded()[distribution]
    assert release in rows, f"{distribution} {release} is not recorded: run scripts/record_lightning_shapes.py"
    installed = next(r["shapes"] for r in trained["single"] if "shapes" in r)
    assert installed[package] == rows[release] == SHAPES.shape_for(release).record()
    assert RANGES[package].check() == release


# ---------------------------------------------------------------- the accelerator's answers, in this process
@pytest.fixture(scope="module")
def lightning() -> Iterator[Any]:
    """``lightning.pytorch``, imported without leaving its environment writes behind in this process."""
    saved = dict(os.environ)
    import lightning.pytorch

    for name in set(os.environ) - set(saved):
        del os.environ[name]
    os.environ.update(saved)
    yield lightning.pytorch


@pytest.fixture
def on_cpu(clean_accelhal: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", "cpu")


@pytest.mark.usefixtures("on_cpu")
def test_register_enters_the_name_lightning_resolves(lightning: Any) -> None:
    from lightning.pytorch.accelerators import AcceleratorRegistry

    from accelhal.compat.lightning import AccelhalAccelerator, register

    assert register() is AccelhalAccelerator
    assert register() is AccelhalAccelerator  # idempotent
    assert "accelhal" in AcceleratorRegistry.available_accelerators()
    trainer = lightning.Trainer(accelerator="accelhal", devices=2, logger=False)
    assert isinstance(trainer.accelerator, AccelhalAccelerator)
    assert type(trainer.strategy).__name__ == "DDPStrategy"
    assert [str(d) for d in trainer.strategy.parallel_devices] == ["cpu", "cpu"]


@pytest.mark.usefixtures("on_cpu")
def test_devices_are_parsed_as_lightning_spells_them(lightning: Any) -> None:
    from accelhal.compat.lightning import AccelhalAccelerator as Acc

    assert Acc.parse_devices(2) == Acc.parse_devices("2") == Acc.parse_devices("0,1") == Acc.parse_devices([0, 1])
    assert Acc.parse_devices(-1) == Acc.parse_devices("-1") == list(range(accelhal.get_accelerator().device_count()))
    assert Acc.auto_device_count() == 1 and Acc.is_available() and Acc.name() == "accelhal"
    for bad in (0, -2, "two", [0, 0], [-1], 1.5, True):
        with pytest.raises(ConfigurationError, match=r"^devices"):
            Acc.parse_devices(bad)


@pytest.mark.usefixtures("on_cpu")
def test_device_stats_come_from_the_contracts_memory_members(lightning: Any) -> None:
    from accelhal.compat.lightning import AccelhalAccelerator

    stats = AccelhalAccelerator().get_device_stats("cpu")
    acc = accelhal.get_accelerator()
    assert stats["total_bytes"] == acc.total_memory() > stats["available_bytes"] > 0
    assert stats["allocated_bytes.all.peak"] >= stats["allocated_bytes.all.current"] > 0


@pytest.mark.usefixtures("clean_accelhal")
def test_an_unavailable_backend_is_not_available_and_does_not_raise(
    lightning: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from accelhal.compat.lightning import AccelhalAccelerator

    monkeypatch.setenv("ACCELHAL_ACCELERATOR", "no-such-backend")
    assert AccelhalAccelerator.is_available() is False


@pytest.mark.usefixtures("on_cpu")
def test_a_named_backend_becomes_active_and_travels_to_spawned_workers(lightning: Any) -> None:
    from accelhal.compat.lightning import AccelhalAccelerator, ddp_strategy

    named = AccelhalAccelerator("cpu")
    assert accelhal.get_accelerator().name == "cpu" and named.backend is accelhal.get_accelerator()
    assert repr(pickle.loads(pickle.dumps(named))) == "AccelhalAccelerator('cpu')"
    assert repr(pickle.loads(pickle.dumps(AccelhalAccelerator()))) == "AccelhalAccelerator('cpu')"
    assert ddp_strategy().process_group_backend == "gloo"
    assert ddp_strategy(process_group_backend="mpi").process_group_backend == "mpi"
    with pytest.raises(ConfigurationError, match="package must be one of 'lightning.pytorch', 'pytorch_lightning'"):
        ddp_strategy("lightning.fabric")


# ---------------------------------------------------------------- a backend with indexed devices (simulated npu)
PROBE = """
import json
import accelhal
from accelhal.compat.lightning import ddp_strategy, register
import lightning.pytorch as pl
Acc = register()
out = {
    "backend": accelhal.get_accelerator().name, "available": Acc.is_available(), "auto": Acc.auto_device_count(),
    "all": [str(d) for d in Acc.get_parallel_devices(Acc.parse_devices(-1))],
    "ddp": ddp_strategy().process_group_backend, "stats": sorted(Acc().get_device_stats("npu:1")),
}
try:
    Acc.parse_devices([0, 2])
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
trainer = pl.Trainer(accelerator="accelhal", devices=2, logger=False)
out["ddp_devices"] = [str(d) for d in trainer.strategy.parallel_devices]
trainer = pl.Trainer(accelerator="accelhal", devices=[1], precision="bf16-mixed", logger=False)
out["lightning_placed"] = [str(trainer.strategy.root_device), trainer.precision_plugin.device]
trainer.accelerator.setup(trainer)  # the hook Trainer.fit calls before the model moves
out["placed"] = [str(trainer.strategy.root_device), trainer.precision_plugin.device]
out["current"] = accelhal.get_accelerator().current_device()
print("RESULT " + json.dumps(out))
"""


def test_a_backend_with_indexed_devices_gets_its_devices_and_communication_backend(tmp_path: Path) -> None:
    from accelhal.testing.simulated import write_vendor_package

    root = write_vendor_package("npu", tmp_path)
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=_env(PYTHONPATH=str(root)), cwd=REPO
    )
    assert out.returncode == 0, out.stderr[-5000:]
    result = json.loads(out.stdout.split("RESULT ", 1)[1])
    assert result["backend"] == "npu" and result["available"] is True and result["auto"] == 2
    assert result["all"] == result["ddp_devices"] == ["npu:0", "npu:1"]
    assert result["ddp"] == "hccl"
    assert {"total_bytes", "available_bytes", "allocated_bytes.all.current"} <= set(result["stats"])
    assert result["error"] == (
        "ConfigurationError: devices=[0, 2] asks for device index 2, "
        "but the npu backend sees 2 device(s) (indices 0 to 1)"
    )
    assert result["lightning_placed"] == ["cpu", "cuda"]  # Lightning's defaults for an accelerator it does not know
    assert result["placed"] == ["npu:1", "npu"] and result["current"] == 1


def test_import_accelhal_imports_neither_the_adapter_nor_lightning() -> None:
    code = (
        "import sys, accelhal; accelhal.get_accelerator(); before = set(sys.modules)\n"
        "import accelhal.compat.lightning\n"
        "print(sorted(m for m in before if 'lightning' in m), sorted(m for m in sys.modules if 'lightning' in m))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), check=True)
    assert out.stdout.split() == ["[]", "['accelhal.compat.lightning']"]
