"""DeepSpeed's op builders through the adapter: DeepSpeed's classes, built once into accelhal's op cache.

The build is real: DeepSpeed's ``cpu_adam`` (what ``DeepSpeedCPUAdam`` runs for ZeRO-Offload),
compiled by DeepSpeed's own ``jit_load`` into a keyed directory of accelhal's cache kept
between test runs, then loaded by fresh processes without a compiler or ninja on ``PATH``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from accelhal.compat.deepspeed import as_deepspeed_accelerator
from accelhal.compat.deepspeed._releases import installed_shape
from accelhal.errors import UnsupportedFeatureError
from tests import warm
from tests.compat import REPO, child_environment, requires_deepspeed, uses_cpu_adam

pytestmark = [requires_deepspeed, uses_cpu_adam]

LOAD_CPU_ADAM = """
import json, os
{install}
from deepspeed.ops.op_builder import CPUAdamBuilder
try:
    module = CPUAdamBuilder().load()
    print("LOADED " + json.dumps({{"file": module.__file__, "builder": type(CPUAdamBuilder()).__module__}}))
except Exception as exc:
    print("FAILED " + json.dumps({{"error": type(exc).__name__, "message": str(exc)}}))
"""
INSTALL = "from accelhal.compat.deepspeed import install; install('cpu')"


def load_cpu_adam(through: str, **env: str) -> dict[str, str]:
    """In a fresh process, ``CPUAdamBuilder().load()`` with the adapter installed or with DeepSpeed's own."""
    code = LOAD_CPU_ADAM.format(install=INSTALL if through == "accelhal" else "")
    env.setdefault("DS_ACCELERATOR", "cpu")
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=child_environment(**env),
        cwd=REPO,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-5000:]
    line = next(line for line in out.stdout.splitlines() if line.startswith(("LOADED ", "FAILED ")))
    kind, _, text = line.partition(" ")
    return {"outcome": kind, **json.loads(text)}


def test_deepspeeds_builder_classes_with_accelhals_build(ds: Any, cpu_twin: Any) -> None:
    from deepspeed.ops.op_builder.builder import OpBuilder

    adapter = as_deepspeed_accelerator()
    builder = adapter.create_op_builder("CPUAdamBuilder")
    theirs = cpu_twin.get_op_builder("CPUAdamBuilder")
    assert isinstance(builder, theirs) and isinstance(builder, OpBuilder)
    assert (builder.NAME, builder.absolute_name()) == (theirs.NAME, theirs().absolute_name())
    assert builder.is_compatible() == theirs().is_compatible()
    assert type(builder).load is OpBuilder.load  # an ahead-of-time install of the op is still DeepSpeed's first choice


def test_the_build_key_follows_what_deepspeed_compiles_from(
    ds: Any, cpu_twin: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from accelhal.compat.deepspeed._ops import DeepSpeedOp

    monkeypatch.setenv("ACCELHAL_OPS_CACHE", str(tmp_path))
    real = cpu_twin.get_op_builder("CPUAdamBuilder")

    def directory() -> Path:
        return DeepSpeedOp(real(), real, "cpu").build_directory()

    first = directory()
    assert first.parent == tmp_path and first.name.startswith("cpu_adam-")
    assert directory() == first
    inputs = DeepSpeedOp(real(), real, "cpu").build_inputs()
    assert inputs["extras"]["deepspeed"] == ds.__version__
    assert inputs["extras"]["deepspeed_builder"].endswith("cpu_adam.CPUAdamBuilder")
    assert any(name.startswith("cpu_adam") for name in inputs["sources"])
    assert inputs["headers"], "DeepSpeed's csrc/includes headers are part of the key"
    for variable, value in (("CXX", "clang++"), ("TORCH_CUDA_ARCH_LIST", "9.0"), ("CFLAGS", "-O1")):
        monkeypatch.setenv(variable, value)
        assert directory() != first, variable
        monkeypatch.delenv(variable)
    assert directory() == first


def test_a_disabled_deepspeed_op_is_never_built(ds: Any) -> None:
    builder = as_deepspeed_accelerator(disable_ops=["CPUAdamBuilder"]).create_op_builder("CPUAdamBuilder")
    with pytest.raises(UnsupportedFeatureError, match="CPUAdamBuilder"):
        builder.jit_load()


NATIVE_PINNING = """
import json, sys
from accelhal.compat.deepspeed import install
install("cpu")
import torch
from deepspeed.accelerator import get_accelerator
from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator
from deepspeed.ops.op_builder import PinMemoryBuilder

ours, theirs = get_accelerator(), CPU_Accelerator()
tensor = torch.arange(12, dtype=torch.float32).reshape(3, 4)
made = {"ours": ours.pin_memory(tensor), "theirs": theirs.pin_memory(tensor)}
made["flat"] = ours.pin_memory(tensor, make_copy=False, match_shape=False)
made["empty"] = ours.pin_empty(2, 3, dtype=torch.float16)
report = {
    "builder": type(PinMemoryBuilder()).__module__,
    "op_file": sys._deepspeed_pin_memory_op_module.__file__,
    "values": {k: made[k].tolist() for k in ("ours", "theirs")},
    "shapes": {k: list(t.shape) for k, t in made.items()},
    "pinned": {k: [ours.is_pinned(t), theirs.is_pinned(t), getattr(t, "ds_pinned", False)] for k, t in made.items()},
    "copied": made["ours"].data_ptr() != tensor.data_ptr(),
    "plain": ours.is_pinned(tensor),
}
for t in made.values():
    ours.unpin_memory(t)
report["unpinned"] = [ours.is_pinned(t) or theirs.is_pinned(t) for t in made.values()]
print(json.dumps(report))
"""


def test_deepspeeds_super_type_self_load_on_an_adapter_builder_finds_deepspeeds_base_load(ds: Any) -> None:
    """What the build below relies on, without building: DeepSpeed's ``super(type(self), self).load`` on the adapter's
    builder is the ``load`` above DeepSpeed's own class (it recursed into the builder's own ``load`` before)."""
    if "_torch_pin_memory" not in installed_shape().concrete:
        pytest.skip(f"deepspeed {ds.__version__} has no native pinning (DS_PIN_MEMORY_BACKEND)")
    from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator

    from accelhal.compat.deepspeed._ops import built_by_accelhal

    theirs = CPU_Accelerator().get_op_builder("PinMemoryBuilder")
    ours = built_by_accelhal(theirs, "cpu")()
    assert type(ours).load is theirs.load  # the builder's own load is DeepSpeed's
    assert super(type(ours), ours).load.__func__ is not theirs.load  # one class up: not DeepSpeed's load again
    assert type(ours).__mro__[2] is theirs  # that class sits between the builder and DeepSpeed's


@pytest.mark.heavy
def test_native_pinning_builds_deepspeeds_pin_memory_op_through_the_adapter(ds: Any, deepspeed_ops_cache: Path) -> None:
    """``DS_PIN_MEMORY_BACKEND=native``: DeepSpeed's ``PinMemoryBuilder().load()`` (``super(type(self), self).load``)
    through the adapter's builder; the op built into accelhal's cache pins as DeepSpeed's own accelerator does."""
    if "_torch_pin_memory" not in installed_shape().concrete:
        pytest.skip(f"deepspeed {ds.__version__} has no native pinning (DS_PIN_MEMORY_BACKEND)")
    env = child_environment(DS_PIN_MEMORY_BACKEND="native", ACCELHAL_OPS_CACHE=str(deepspeed_ops_cache))
    done = warm.run_code(NATIVE_PINNING, [], env, sys.executable, 600, cwd=REPO)
    assert done.returncode == 0, done.stderr[-5000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["builder"] == "accelhal.compat.deepspeed._ops"
    op_file = Path(report["op_file"])
    assert op_file.is_relative_to(deepspeed_ops_cache) and op_file.name.startswith("pin_memory")
    expected = [[4.0 * row + col for col in range(4)] for row in range(3)]
    assert report["values"] == {"ours": expected, "theirs": expected} and report["copied"]
    assert report["shapes"] == {"ours": [3, 4], "theirs": [3, 4], "flat": [12], "empty": [2, 3]}
    assert report["pinned"] == {k: [True, True, True] for k in ("ours", "theirs", "flat", "empty")}
    assert report["plain"] is False and report["unpinned"] == [False] * 4


@pytest.mark.slow
@pytest.mark.integration
def test_cpu_adam_builds_once_and_a_cache_hit_needs_no_compiler(deepspeed_ops_cache: Path, tmp_path: Path) -> None:
    built = load_cpu_adam("accelhal", ACCELHAL_OPS_CACHE=str(deepspeed_ops_cache))
    assert built["outcome"] == "LOADED", built
    assert built["builder"] == "accelhal.compat.deepspeed._ops"
    op_file = Path(built["file"])
    assert op_file.is_relative_to(deepspeed_ops_cache) and op_file.name.startswith("cpu_adam")
    assert (op_file.parents[1] / "build.json").is_file()

    # no ninja, no c++: only df, which DeepSpeed 0.15 runs when it imports its Triton kernels (where Triton is)
    (tmp_path / "df").symlink_to(shutil.which("df") or "/bin/df")
    bare = {"ACCELHAL_OPS_CACHE": str(deepspeed_ops_cache), "PATH": str(tmp_path)}
    again = load_cpu_adam("accelhal", **bare)
    assert again == built
    own = load_cpu_adam("deepspeed", **bare, TORCH_EXTENSIONS_DIR=str(op_file.parents[1]))
    assert own["outcome"] == "FAILED" and "ninja" in own["message"].lower()  # its JIT load runs ninja every time


def test_the_benchmark_target_is_the_cpu_ratio_of_the_two_loads() -> None:
    from benchmarks import deepspeed_ops
    from benchmarks.method import Comparison, Sample

    def clock(ours: float, theirs: float) -> Comparison:
        names = (deepspeed_ops.ACCELHAL, deepspeed_ops.DEEPSPEED)
        rounds = [{names[0]: ours * k, names[1]: theirs * k} for k in (1.0, 1.1, 0.9)]
        return Comparison({n: Sample([r[n] for r in rounds], "ms") for n in names}, rounds)

    result = deepspeed_ops.summarise({"cpu": clock(4.0, 1600.0), "wall": clock(5.0, 2700.0)})
    (target,) = result.targets
    assert target.measured == pytest.approx(0.0025) and target.limit == 0.1 and target.passed
    assert "wall" in target.note and [row[0] for row in result.rows] == [
        deepspeed_ops.ACCELHAL,
        deepspeed_ops.DEEPSPEED,
    ]
