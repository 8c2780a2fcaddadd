"""The cuda backend: NVIDIA GPUs, and AMD GPUs through ROCm builds of torch (reported as HIP).

Probed by ``torch.cuda.device_count()``, which asks NVML (amdsmi on ROCm) and creates no
CUDA context: after detection ``torch.cuda.is_initialized()`` is still False and a forked
child can use the GPU.

Before counting, the probe checks who answers ``torch.cuda`` (:mod:`.flavour`): where another
package replaced its functions (torch_npu's ``transfer_to_npu``, torch_supa, torchada), the
verdict is ``replaced``, naming that package's distribution and the registered backend that
drives its devices; forcing cuda is then an error that says so. The reason of an available
or device-less cuda names the CUDA flavour of the torch build (NVIDIA CUDA, AMD ROCm, ...).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from accelhal.contract.probes import probe_device_module
from accelhal.contract.spec import Status, Verdict
from accelhal_backends.catalog import CUDA as SPEC

if TYPE_CHECKING:
    from accelhal_backends.cuda.flavour import Replacement


def _backends_requiring(package: str) -> list[str]:
    """Registered backends (other than cuda) that need ``package``: the ones that drive its devices."""
    from accelhal.discovery.plugins import registry

    specs = [r.spec for r in registry().ordered()]
    return [spec.name for spec in specs if spec.name != SPEC.name and package in spec.requires]


def _replaced(replaced: list[Replacement]) -> Verdict:
    packages = list(dict.fromkeys(r.package for r in replaced))
    backends = list(dict.fromkeys(name for package in packages for name in _backends_requiring(package)))
    owners = ", ".join(dict.fromkeys(r.distribution or r.package for r in replaced))
    modules = {r.module: r for r in replaced}
    details = "; ".join(
        "torch.cuda." + "/".join(r.member for r in replaced if r.module == module) + f" from {module} ({first.origin})"
        for module, first in modules.items()
    )
    reason = f"torch.cuda's functions were replaced by {owners}: {details}"
    if backends:
        hint = f"use the {backends[0]!r} backend (ACCELHAL_ACCELERATOR={backends[0]}), which drives these devices"
    else:
        hint = (
            f"no registered backend drives the devices of {', '.join(packages)}; install its accelhal plugin, "
            "or stop the package from replacing torch.cuda to use a real CUDA GPU"
        )
    return Verdict.replaced(reason, hint=hint)


def probe() -> Verdict:
    """Who answers ``torch.cuda`` (``replaced`` when another package does), then count its devices."""
    from accelhal_backends.cuda.flavour import flavour, replacements

    try:
        torch = importlib.import_module("torch")
    except Exception:  # a torch that cannot load: the shared probe reports it as broken
        return probe_device_module("torch", str(SPEC.module), SPEC.hint)
    found = replacements(torch)
    if found:
        return _replaced(found)
    verdict = probe_device_module("torch", str(SPEC.module), SPEC.hint)
    if verdict.status in (Status.AVAILABLE, Status.NO_DEVICE):
        return Verdict(verdict.status, f"{verdict.reason}; CUDA flavour: {flavour(torch).label}", verdict.hint)
    return verdict
