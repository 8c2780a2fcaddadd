"""``get_compile_backend``/``set_compile_backend``: a backend that works on the device, checked names, typed errors.

The end-to-end runs compile the small model of :mod:`tests.compiled_model` on cpu in fresh
interpreters: with the C++ compiler (Inductor, C++ compiled here) and without one (the
answer turns to ``aot_eager``, and Inductor really fails there). The PrivateUse1 device's
run is ``tests/privateuse1/test_compile.py``; cuda's is ``tests/gpu/test_compile_cuda.py``.
"""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import torch

import accelhal
from accelhal.contract import compile_backend
from accelhal.contract.spec import BackendSpec, Verdict
from accelhal.errors import CompileBackendError
from accelhal_backends.cpu.accelerator import CpuAccelerator
from tests.compiled_model import TOLERANCE
from tests.simulation import run_python, simulated_site


def test_cpu_answers_inductor_while_inductors_cpp_compiler_is_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXX", "g++")
    choice = CpuAccelerator().compile_backend_choice()
    assert (choice.backend, choice.source) == ("inductor", "inductor")
    assert choice.reason == "Inductor generates C++ for 'cpu'; the C++ compiler 'g++' is on PATH"
    monkeypatch.setenv("CXX", "/nonexistent/c++")
    choice = CpuAccelerator().compile_backend_choice()
    assert (choice.backend, choice.source) == ("aot_eager", "fallback")
    assert choice.reason.startswith("Inductor's C++ code for 'cpu' needs a C++ compiler, and '/nonexistent/c++' is")


@pytest.mark.skipif(importlib.util.find_spec("triton") is not None, reason="triton is installed here")
def test_a_gpu_device_type_without_triton_falls_back_and_says_so() -> None:
    choice = compile_backend.choose("cuda")
    assert choice.backend == "aot_eager"
    assert choice.reason.startswith("Inductor's Triton code for 'cuda' needs the triton package, which is not")


def test_a_vendors_backend_is_the_answer() -> None:
    assert compile_backend.choose("cpu", "hpu_backend") == compile_backend.CompileChoice(
        "hpu_backend", "the vendor's torch.compile backend for 'cpu', declared in its spec", "vendor"
    )

    class Declared(CpuAccelerator):  # a class without a compile_backend in its spec, DeepSpeed-style
        _default_compile_backend = "eager"

    assert Declared().get_compile_backend() == "eager"
    assert Declared().compile_backend_choice().source == "vendor"

    class Unregistered(CpuAccelerator):  # the vendor's package has not registered its backend in this process
        _default_compile_backend = "hpu_backend"

    with pytest.raises(CompileBackendError) as caught:
        Unregistered().set_compile_backend("hpu_backend")
    assert caught.value.working == "inductor"  # not the refused name itself


def test_the_spec_checks_its_compile_backend() -> None:
    spec = BackendSpec(name="x", device_type="x", priority=1, accelerator="m:C", probe=lambda: Verdict.available(""))
    assert spec.compile_backend == ""
    for bad in (" hpu_backend", 3):
        with pytest.raises(ValueError, match="compile_backend must be a torch.compile backend name"):
            BackendSpec(name="x", device_type="x", priority=1, accelerator="m:C", probe=spec.probe, compile_backend=bad)  # type: ignore[arg-type]


def test_set_compile_backend_takes_a_name_torch_knows_and_refuses_others() -> None:
    acc = CpuAccelerator()
    acc.set_compile_backend("eager")
    assert acc.get_compile_backend() == "eager"
    assert acc.compile_backend_choice() == compile_backend.CompileChoice(
        "eager", "chosen with set_compile_backend()", "set"
    )
    with pytest.raises(CompileBackendError) as caught:
        acc.set_compile_backend("inductr")
    error = caught.value
    assert isinstance(error, ValueError) and isinstance(error, accelhal.AccelhalError)
    assert (error.backend, error.device, error.working) == ("inductr", "cpu", "inductor")
    assert "inductor" in error.registered and "aot_eager" in error.registered
    assert str(error).startswith(
        "torch.compile backend 'inductr' cannot be used on 'cpu': it is not a torch.compile backend known to this "
        "torch (torch._dynamo.list_backends(exclude_tags=())). 'inductor' works there"
    )
    assert acc.get_compile_backend() == "eager"  # a refused name changes nothing
    acc.set_compile_backend("inductor")
    assert acc.compile_backend_choice().source == "set"


CPU_RUN = """
import json, sys
import accelhal
from tests import compiled_model

def loaded():
    return sorted(m for m in ("torch._dynamo", "torch._inductor") if m in sys.modules)

acc = accelhal.get_accelerator()
result = {"answer": acc.get_compile_backend(), "info": acc.info().compile_backend, "loaded": loaded()}
result["compiled"] = compiled_model.compare()
if result["answer"] == "inductor":
    from torch._inductor.codegen import common
    if hasattr(common, "init_backend_registration"):
        common.init_backend_registration()
    else:  # torch 2.4: the graph's method registers them (and uses no graph)
        from torch._inductor.graph import GraphLowering
        GraphLowering.init_backend_registration(None)
    result["inductor_device_types"] = sorted(common.device_codegens)
else:
    try:
        compiled_model.compare("inductor")
        result["inductor_anyway"] = "compiled"
    except Exception as error:
        result["inductor_anyway"] = f"{type(error).__name__}: {error}"
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def cpu_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The model on cpu with the C++ compiler and without one, in two interpreters at once."""
    site: Path = tmp_path_factory.mktemp("site")
    runs = {"with-compiler": {"CXX": "g++"}, "without-compiler": {"CXX": "/nonexistent/c++"}}
    with ThreadPoolExecutor(len(runs)) as pool:
        futures = {
            name: pool.submit(run_python, site, CPU_RUN, ACCELHAL_ACCELERATOR="cpu", **env)
            for name, env in runs.items()
        }
        return {name: future.result() for name, future in futures.items()}


@pytest.mark.slow
def test_inductor_on_cpu_gives_eagers_outputs_without_recompiling(cpu_runs: dict[str, dict[str, Any]]) -> None:
    result = cpu_runs["with-compiler"]
    print(f"\ncpu: {result['compiled']}")
    assert result["answer"] == result["info"] == result["compiled"]["backend"] == "inductor"
    assert result["loaded"] == []  # answering (and info()) imported neither Dynamo nor Inductor
    assert result["compiled"]["max_abs_difference"] <= TOLERANCE["atol"]
    assert (result["compiled"]["graphs_after_first_call"], result["compiled"]["recompiles"]) == (1, 0)
    release = tuple(int(part) for part in torch.__version__.split(".")[:2])
    here = {
        t for t in compile_backend.INDUCTOR_DEVICE_TYPES if compile_backend.INDUCTOR_SINCE.get(t, (0, 0)) <= release
    }
    assert here <= set(result["inductor_device_types"])  # what Inductor registers on this torch
    assert not set(compile_backend.INDUCTOR_DEVICE_TYPES) - here & set(
        result["inductor_device_types"]
    )  # and not before


def test_a_device_type_whose_inductor_code_generator_came_later_falls_back_before_it() -> None:
    choice = compile_backend.choose("mps")
    if tuple(int(part) for part in torch.__version__.split(".")[:2]) >= compile_backend.INDUCTOR_SINCE["mps"]:
        assert (choice.backend, choice.reason) == ("inductor", "Inductor generates Metal for 'mps'")
    else:
        assert choice.backend == "aot_eager"
        assert choice.reason.startswith(
            f"Inductor generates Metal for 'mps' from torch 2.7 on; this is torch {torch.__version__}"
        )


NO_CODEGEN = (
    "Inductor has no code generator for device type {!r}: torch has none for it, and its vendor registered none"
)

VENDOR_MODULE_CODEGEN = """
import json, torch, torch_npu  # the simulated vendor: torch.npu is its PrivateUse1 device module
from accelhal.contract import compile_backend
before = compile_backend.inductor_support("npu")
for name in compile_backend.VENDOR_CODEGEN_ATTRIBUTES:
    setattr(torch.npu, name, type(name, (), {}))
after = compile_backend.inductor_support("npu")
print(json.dumps({"before": [before.supported, before.reason], "after": [after.supported, after.reason]}))
"""


def test_a_vendor_device_modules_code_generator_counts_where_inductor_registers_it(tmp_path: Path) -> None:
    result = run_python(simulated_site(tmp_path, ("npu",)), VENDOR_MODULE_CODEGEN)
    assert result["before"] == [False, NO_CODEGEN.format("npu")]
    if tuple(int(part) for part in torch.__version__.split(".")[:2]) >= compile_backend.VENDOR_CODEGEN_SINCE:
        provides = "its device module torch.npu provides Scheduling, PythonWrapperCodegen, CppWrapperCodegen"
        assert result["after"] == [True, f"Inductor generates code for 'npu': {provides}"]
    else:  # torch 2.5 reads other attributes, torch 2.4 none
        assert result["after"] == result["before"]


@pytest.mark.slow
def test_without_a_cpp_compiler_cpu_answers_aot_eager_which_works_where_inductor_fails(
    cpu_runs: dict[str, dict[str, Any]],
) -> None:
    result = cpu_runs["without-compiler"]
    print(f"\ncpu without a C++ compiler: {result['compiled']}")
    assert result["answer"] == result["compiled"]["backend"] == "aot_eager"
    assert result["compiled"]["max_abs_difference"] == 0.0 and result["compiled"]["recompiles"] == 0
    # torch 2.13: "InductorError: InvalidCxxCompiler: ..."; before InductorError, Dynamo's wrapper names the cause
    # on its second line ("BackendCompilerFailed: backend='inductor' raised:\nInvalidCxxCompiler: ...")
    cause = (
        result["inductor_anyway"]
        .removeprefix("InductorError: ")
        .removeprefix("BackendCompilerFailed: backend='inductor' raised:\n")
    )
    assert cause.startswith("InvalidCxxCompiler: No working C++ compiler found"), result["inductor_anyway"]
