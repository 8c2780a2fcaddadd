"""Who answers torch.cuda: a real installed package that replaces its functions, and the CUDA flavours.

``acme-cuda-shim`` is installed as pip lays a distribution out (module, RECORD, entry points)
and replaces ``torch.cuda.device_count``/``is_available`` when imported, as torch_npu's
``transfer_to_npu`` does; its ``torch.backends`` entry point makes ``import torch`` import it,
as torch_supa's does. Each case runs in a fresh process (the replacement is process-wide).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from accelhal import get_accelerator
from accelhal_backends.cuda.flavour import flavour, replacements
from tests.conftest import InstallDistribution
from tests.plugin_sources import CUDA_SHIM, backend_plugin
from tests.simulation import DETECT, ROOT, run_python
from tests.torch_features import CPU_ONLY_BUILD, needs_device_autoload

SHIM = "torch.cuda.device_count/is_available from acme_cuda_shim (distribution acme-cuda-shim 1.0)"


def install_shim(install_distribution: InstallDistribution, with_backend: bool = False) -> Path:
    """Install acme-cuda-shim (optionally with an ``acmegpu`` backend that needs it); returns its directory."""
    modules = {"acme_cuda_shim": CUDA_SHIM}
    entry_points = {}
    if with_backend:
        modules["acme_gpu"] = backend_plugin("acmegpu", priority=250, spec_extra=', requires=("acme_cuda_shim",)')
        entry_points["acmegpu"] = "acme_gpu"
    autoload = {"torch.backends": {"acme_cuda_shim": "acme_cuda_shim:autoload"}}
    return install_distribution("acme-cuda-shim", modules, entry_points, other_groups=autoload).parent


@needs_device_autoload  # the shim arrives as torch_supa does, through torch.backends
def test_replaced_torch_cuda_is_its_own_verdict_and_forcing_cuda_says_so(
    install_distribution: InstallDistribution,
) -> None:
    report = run_python(install_shim(install_distribution), DETECT, FORCE_AFTERWARDS="cuda")
    cuda = report["candidates"]["cuda"]
    assert cuda["status"] == "replaced"
    assert cuda["reason"] == "torch.cuda's functions were replaced by acme-cuda-shim 1.0: " + SHIM
    assert "no registered backend drives the devices of acme_cuda_shim" in cuda["hint"]
    assert (report["chosen"], report["rule"]) == ("cpu", "fallback")  # two "devices", but not CUDA ones
    forced = report["forced"]
    assert forced["chosen"] is None
    assert forced["error"].startswith("BackendUnavailableError: accelerator 'cuda' (requested by ACCELHAL_ACCELERATOR)")
    assert SHIM in forced["error"]


@needs_device_autoload  # the shim arrives as torch_supa does, through torch.backends
def test_the_backend_that_needs_the_replacing_package_is_named_and_chosen(
    install_distribution: InstallDistribution,
) -> None:
    report = run_python(install_shim(install_distribution, with_backend=True), DETECT)
    assert (report["chosen"], report["rule"]) == ("acmegpu", "priority")
    cuda = report["candidates"]["cuda"]
    assert cuda["status"] == "replaced"
    assert cuda["hint"] == "use the 'acmegpu' backend (ACCELHAL_ACCELERATOR=acmegpu), which drives these devices"


def accelhal_cli(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELHAL_", "DS_ACCELERATOR"))}
    env["PYTHONPATH"] = str(site)
    command = [sys.executable, "-m", "accelhal", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)


@needs_device_autoload  # the shim arrives as torch_supa does, through torch.backends
def test_explain_and_list_show_the_replaced_cuda(install_distribution: InstallDistribution) -> None:
    site = install_shim(install_distribution)
    explained = accelhal_cli(site, "explain", "cuda", "--json")
    assert explained.returncode == 0, explained.stderr
    answer: dict[str, Any] = json.loads(explained.stdout)
    assert answer["outcome"] == "replaced"
    assert answer["summary"].startswith("'cuda' is answered by another runtime: torch.cuda's functions were replaced")
    listed = accelhal_cli(site, "list", "--json")
    backends = {b["name"]: b for b in json.loads(listed.stdout)["backends"]}
    assert backends["cuda"]["status"] == "replaced" and SHIM in backends["cuda"]["reason"]


def test_torch_here_answers_its_own_cuda() -> None:
    assert replacements(torch) == []


def fake_torch(version: str, **build: str | None) -> Any:
    """A namespace shaped like torch's build attributes (the vendor builds do not run here)."""
    attributes = {"cuda": None, "hip": None, **build}
    return SimpleNamespace(__version__=version, version=SimpleNamespace(**attributes))


@pytest.mark.parametrize(
    ("build", "names", "label", "heuristic"),
    [
        (fake_torch("2.8.0+cu128", cuda="12.8"), (), "NVIDIA CUDA 12.8", False),
        (fake_torch("2.8.0+rocm6.4", hip="6.4.43482"), (), "AMD ROCm (HIP) 6.4.43482", False),
        (fake_torch("2.4.1+das.opt2.dtk2504", hip="6.3.25"), (), "Hygon DCU (HIP) 6.3.25, by heuristic", True),
        (fake_torch("2.6.0+metax3.0", cuda="11.6", maca="3.0.0.4"), (), "MetaX MACA 3.0.0.4", False),
        (fake_torch("2.6.0", cuda="11.6"), ("MetaX C500",), "MetaX MACA, by heuristic", True),
        (fake_torch("2.7.1+corex.4.4.0", cuda="10.2"), (), "Iluvatar CoreX 10.2, by heuristic", True),
        (fake_torch("2.1.1", cuda="10.2"), ("Iluvatar BI-V150",), "Iluvatar CoreX 10.2, by heuristic", True),
        (fake_torch("2.13.0+cpu"), (), "none (CPU-only torch build)", False),
    ],
)
def test_flavour_from_build_attributes_version_tags_and_device_names(
    build: Any, names: tuple[str, ...], label: str, heuristic: bool
) -> None:
    found = flavour(build, names)
    assert (found.label, found.heuristic) == (label, heuristic)
    assert found.signals


def test_flavour_of_the_torch_here() -> None:
    expected = "none (CPU-only torch build)" if CPU_ONLY_BUILD else f"NVIDIA CUDA {torch.version.cuda}"
    assert flavour(torch).label == expected


@pytest.mark.cuda
def test_flavour_on_a_real_gpu_is_named_without_initialising_cuda() -> None:
    code = (
        "import json, torch, accelhal; r = accelhal.detect(); c = r.candidate('cuda'); "
        "print(json.dumps([c.status.value, c.reason, torch.cuda.is_initialized()]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=240)
    status, reason, initialised = json.loads(out.stdout.strip().splitlines()[-1])
    expected = f"AMD ROCm (HIP) {torch.version.hip}" if torch.version.hip else f"NVIDIA CUDA {torch.version.cuda}"
    assert (status, initialised) == ("available", False)
    assert reason.endswith(f"; CUDA flavour: {expected}")
    accelerator = get_accelerator()
    assert accelerator.name == "cuda" and accelerator.vendor_versions()["flavour"] == expected
