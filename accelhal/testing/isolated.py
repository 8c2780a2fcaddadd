"""Checks that need a fresh process, run as ``python -m accelhal.testing.isolated CHECK BACKEND``.

* ``probe``: run the backend's registered probe, construct its accelerator (which must not
  initialise the runtime either) and report whether a device context now exists, through the
  device module's ``is_initialized()`` (the accelerator's ``module`` attribute), where it has one.
* ``fork``: select the backend (detection), then fork; the child uses the device.

Each prints one JSON object on its last line. The conformance suite
(:mod:`accelhal.testing.conformance.processes`) runs them in subprocesses, which inherit its
environment; like the ``accelhal`` command, they hide torch's warning that numpy is not
installed (only that one: :data:`accelhal.cli.output.warnings_filter.TORCH_NUMPY_WARNING`), so that
``PYTHONWARNINGS=error`` does not make their ``import torch`` fail where the command's own passed.
"""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
import os
import sys
from typing import Any

CONTEXT_QUERY = "is_initialized"
"""The device module's function that ``probe`` asks whether a device context exists (as ``torch.cuda``'s)."""


def probe(name: str) -> dict[str, Any]:
    """Probe ``name`` and say whether a device context was created."""
    from accelhal import selection
    from accelhal.selection.candidates import probe_verdict

    registration = selection.registry().backends.get(name)
    if registration is None:
        return {"registered": False}
    verdict = probe_verdict(registration.spec.requires, registration.spec.probe)
    accelerator = registration.spec.load_class()()
    module = getattr(accelerator, "module", None)
    is_initialized = getattr(module, CONTEXT_QUERY, None)
    return {
        "registered": True,
        "status": verdict.status.value,
        "reason": verdict.reason,
        "module": getattr(module, "__name__", repr(module)),
        "initialized": bool(is_initialized()) if callable(is_initialized) else None,
    }


def _use_device(queue: Any, tensors: bool, parent: int) -> None:
    import accelhal
    from accelhal.process.child_processes import die_with_parent

    die_with_parent(parent)  # a check killed at its deadline takes its forked child with it
    try:
        accelerator = accelhal.get_accelerator()
        result: dict[str, Any] = {"device_count": accelerator.device_count()}
        accelerator.set_device(0)
        accelerator.synchronize()
        if tensors:
            import torch

            result["sum"] = float((torch.ones(4, device=accelerator.device()) * 2).sum().item())
        queue.put(result)
    except BaseException as exc:
        queue.put({"error": f"{type(exc).__name__}: {exc}"})


def fork(name: str, tensors: bool) -> dict[str, Any]:
    """Select ``name``, fork, and use the device in the child; the child's findings."""
    import accelhal

    accelhal.set_accelerator(name)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_use_device, args=(queue, tensors, os.getpid()))
    child.start()
    child.join(120)
    if child.is_alive():
        child.kill()
        return {"error": "the forked child did not finish within 120 s"}
    if queue.empty():
        return {"error": f"the forked child exited with code {child.exitcode} without reporting"}
    result: dict[str, Any] = queue.get()
    result["exitcode"] = child.exitcode
    return result


def _hide_torch_numpy_warning() -> None:
    """Apply the command's one warning filter (:func:`accelhal.cli.output.warnings_filter.hide_torch_numpy_warning`).

    torch gives that warning only where numpy is not found; elsewhere the command's package is
    not imported.
    """
    try:
        numpy_found = importlib.util.find_spec("numpy") is not None
    except (ImportError, ValueError):  # an import hook refusing numpy; a numpy module without a spec
        numpy_found = False
    if not numpy_found:
        from accelhal.cli.output.warnings_filter import hide_torch_numpy_warning

        hide_torch_numpy_warning()


def main(argv: list[str]) -> None:
    """Entry point: ``probe NAME`` or ``fork NAME [tensors]``."""
    _hide_torch_numpy_warning()
    check, name = argv[0], argv[1]
    result = probe(name) if check == "probe" else fork(name, tensors="tensors" in argv[2:])
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
