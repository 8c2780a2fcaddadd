"""Each backend on this machine, against the real torch modules and the real absence of vendor packages.

torch here has no GPU (a CPU build, or the package index's CUDA build on a machine without
one): ``torch.cuda``, ``torch.xpu`` and ``torch.mps`` import and see no device, and torch_npu,
torch_mlu, torch_sdaa, torch_supa, torch_musa, habana_frameworks and torch_xla are not installed
(the xla backend with torch_xla installed is tested by ``tests/xla``, ``nox -s xla``).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import accelhal
from accelhal.contract.class_checks import contract_problems
from accelhal.contract.spec import Status
from accelhal.errors import BackendUnavailableError
from accelhal.selection import registry
from tests.torch_features import CPU_ONLY_BUILD

BACKENDS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "backends.md"


def _at_a_glance() -> dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """The "At a glance" table of ``docs/backends.md``, in its order: name -> (comm, visible, exports).

    The priorities themselves are in ``docs/reference/priorities.md`` only (generated).
    """
    rows = {}
    page = BACKENDS_PAGE.read_text()
    table = page[page.index("| backend | devices | module | comm |") :]
    for line in table.splitlines()[2:]:
        if not line.startswith("| `"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        names = [tuple(re.findall(r"`([^`]+)`", cell)) for cell in cells]
        rows[names[0][0]] = (names[3][0], names[4], names[5])
    return rows


TORCH_MODULES = ("cuda", "xpu", "mps")
VENDOR_PACKAGES = {
    "npu": "torch_npu",
    "hpu": "habana_frameworks",
    "mlu": "torch_mlu",
    "sdaa": "torch_sdaa",
    "supa": "torch_supa",
    "musa": "torch_musa",
    "xla": "torch_xla",
}
NO_DEVICE_REASON = "torch loads but torch.{}.device_count() is 0"
CUDA_FLAVOUR = "; CUDA flavour: " + (
    "none (CPU-only torch build)" if CPU_ONLY_BUILD else f"NVIDIA CUDA {torch.version.cuda}"
)
"""How the cuda probe names the CUDA of the torch build (the package index's default builds carry CUDA)."""

needs_no_gpu = pytest.mark.skipif(torch.cuda.device_count() > 0, reason="a CUDA device is visible")


def test_builtins_are_registered_in_priority_order_as_the_docs_say() -> None:
    reg = registry()
    documented = _at_a_glance()
    assert reg.names() == list(documented)
    for name, (comm, visible, exports) in documented.items():
        spec = reg.backends[name].spec
        facts = (spec.comm_backend, spec.visible_devices_envs, spec.export_envs)
        assert facts == (comm, visible, exports), f"docs/backends.md disagrees with the {name} spec"
        assert reg.backends[name].plugin.builtin
        assert contract_problems(spec.load_class()) == []


@needs_no_gpu
def test_detection_says_no_device_for_torch_modules_and_not_installed_for_vendors() -> None:
    report = accelhal.detect()
    assert (report.chosen, report.rule) == ("cpu", "fallback")
    for name in TORCH_MODULES:
        candidate = report.candidate(name)
        assert candidate is not None and candidate.status is Status.NO_DEVICE, candidate
        assert candidate.reason == NO_DEVICE_REASON.format(name) + (CUDA_FLAVOUR if name == "cuda" else "")
        assert candidate.hint
    for name, package in VENDOR_PACKAGES.items():
        candidate = report.candidate(name)
        assert candidate is not None and candidate.status is Status.NOT_INSTALLED
        assert package in candidate.reason


@needs_no_gpu
@pytest.mark.parametrize("name", [*TORCH_MODULES, *VENDOR_PACKAGES])
def test_forcing_a_backend_without_its_device_is_an_error_with_the_reason(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACCELHAL_ACCELERATOR", name)
    with pytest.raises(BackendUnavailableError) as err:
        accelhal.get_accelerator()
    assert err.value.name == name
    assert ("device_count() is 0" in err.value.reason) or ("not installed" in err.value.reason)


@needs_no_gpu
@pytest.mark.parametrize("name", TORCH_MODULES)
def test_accelerator_without_a_device_answers_honestly(name: str) -> None:
    acc = registry().backends[name].spec.load_class()()
    assert acc.is_available() is False
    assert acc.device_count() == 0
    assert acc.is_fp16_supported() is False  # DeepSpeed's cuda said True here
    assert acc.is_bf16_supported() is False
    assert acc.supported_dtypes() == [torch.float32]
    assert acc.device(1) == torch.device(name, 1)
    assert acc.device_name() == name and acc.device_name(2) == f"{name}:2"
    comm, visible, _ = _at_a_glance()[name]
    assert acc.communication_backend_name() == comm
    assert tuple(acc.visible_devices_envs()) == visible
    assert acc.on_accelerator(torch.ones(1)) is False


@needs_no_gpu
def test_mps_is_honest_about_what_it_lacks() -> None:
    from accelhal_backends.mps.accelerator import MpsAccelerator

    acc = MpsAccelerator()
    assert acc.Stream is None and acc.current_stream() is None and acc.default_stream() is None
    assert acc.create_graph() is None and acc.is_fp64_supported() is False
    assert acc.current_device() == 0 and acc.current_device_name() == "mps:0"
    with pytest.raises(ValueError, match="one device"):
        acc.set_device(1)
    ran: list[int] = []
    assert acc.lazy_call(lambda: ran.append(1)) is None and ran == [1]  # DeepSpeed dropped the callback
    assert acc.is_pinned(acc.pin_memory(torch.ones(2))) is False


@pytest.mark.parametrize("name", list(VENDOR_PACKAGES))
def test_vendor_accelerator_without_its_package_raises_a_clear_error(name: str) -> None:
    cls = registry().backends[name].spec.load_class()
    with pytest.raises(BackendUnavailableError, match=VENDOR_PACKAGES[name]) as err:
        cls()
    assert err.value.hint


DETECTION_KEEPS_CUDA_UNINITIALISED = """
import torch, accelhal
accelhal.detect()
print(torch.cuda.is_initialized())
"""


def test_detection_creates_no_cuda_context() -> None:
    out = subprocess.run(
        [sys.executable, "-c", DETECTION_KEEPS_CUDA_UNINITIALISED], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


BACKEND_PACKAGES_ARE_TORCH_FREE = """
import importlib, json, sys
for name in ("catalog", "cuda", "xpu", "npu", "hpu", "mlu", "mps", "xla", "generic", "builtin_ops"):
    importlib.import_module(f"accelhal_backends.{name}")
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {"torch", "torch_npu", "pydantic", "rich"})))
"""


def test_backend_registrations_import_no_torch() -> None:
    out = subprocess.run(
        [sys.executable, "-c", BACKEND_PACKAGES_ARE_TORCH_FREE], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
