"""The portable path's worker on a device other than the host: vLLM's CPU worker and model runner, on the device.

vLLM's ``CPUWorker`` sets up threads, memory and the distributed environment for host
kernels, and its ``CPUModelRunner`` runs the model with vLLM's host kernels; both name
``torch.device("cpu")``. :class:`DeviceWorker` is the CPU worker whose model runner is a
:class:`DeviceModelRunner`: the same runner, placed on accelhal's device for this worker's
local rank, with its device buffers on the device (the CPU runner aliases them to its host
buffers) and the accelerator's ``synchronize``. The model's weights, the KV cache and every
activation then live on the device; a kernel the device lacks runs through its CPU fallback.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from vllm.v1.worker import cpu_model_runner, cpu_worker

import accelhal

KEPT_ON_THE_DEVICE = frozenset({"_postprocess_tensors"})
"""The CPU runner's set-up steps the device runner skips: ``_postprocess_tensors`` aliases the device buffers
to their host halves. The others (the host kernels that replace Triton's, in releases before 0.32) run as the
CPU runner runs them."""


class DeviceModelRunner(cpu_model_runner.CPUModelRunner):
    """vLLM's CPU model runner on accelhal's device: the device's index is the worker's local rank."""

    local_rank = 0
    """Set by :class:`DeviceWorker` before it builds the runner."""

    def __init__(self, vllm_config: Any, device: torch.device) -> None:
        """Build the runner as vLLM's CPU runner does, on ``accelhal.get_accelerator().device(local_rank)``."""
        on_device = accelhal.get_accelerator().device(self.local_rank)
        cpu_model_runner._set_torch_accelerator_to_noop()
        with cpu_model_runner._torch_cuda_wrapper():
            super(cpu_model_runner.CPUModelRunner, self).__init__(vllm_config, on_device)
        self.use_cuda_graph = False
        self.cascade_attn_enabled = False
        for name in sorted(vars(cpu_model_runner.CPUModelRunner)):  # e.g. _postprocess_triton (to 0.31)
            if name.startswith("_postprocess_") and name not in KEPT_ON_THE_DEVICE:
                getattr(self, name)()

    def _sync_device(self) -> None:
        accelhal.get_accelerator().synchronize(self.device.index)


@contextlib.contextmanager
def _building(runner: type[DeviceModelRunner]) -> Iterator[None]:
    """While the CPU worker sets up, the runner it builds is ``runner``."""
    original = cpu_worker.CPUModelRunner
    cpu_worker.CPUModelRunner = runner
    try:
        yield
    finally:
        cpu_worker.CPUModelRunner = original


class DeviceWorker(cpu_worker.CPUWorker):
    """vLLM's CPU worker whose model runner is a :class:`DeviceModelRunner` on this worker's device."""

    def init_device(self) -> None:
        """The CPU worker's set-up; then the worker's device is its runner's."""
        accelhal.get_accelerator().set_device(self.local_rank)
        runner = type("DeviceModelRunner", (DeviceModelRunner,), {"local_rank": self.local_rank})
        with _building(runner):
            super().init_device()
        self.device = self.model_runner.device

    def _maybe_get_memory_pool_context(self, tag: str) -> contextlib.AbstractContextManager[Any]:
        """No memory pool: vLLM's sleep-mode allocators are CUDA's and XPU's.

        vLLM's worker asks for one on any platform but cpu, cuda and xpu, and fails.
        """
        return contextlib.nullcontext()
