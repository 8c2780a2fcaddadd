"""What a device adds for vLLM beyond the accelhal contract: :class:`VllmKit`, answered by ``accelhal_vllm_kit``.

A plugin returns a kit for its backend from the :func:`accelhal.discovery.hooks.accelhal_vllm_kit`
hook. Every field is optional: what a kit leaves empty is vLLM's portable path. Names are
qualified names that vLLM imports in its own processes: a kit imports nothing itself. See
``docs/vllm.md``, "The hook for attention and kernels".
"""

from __future__ import annotations

from dataclasses import dataclass

from accelhal.compat._engines import check_kit


@dataclass(frozen=True)
class VllmKit:
    """A device's additions for vLLM; each empty field takes vLLM's portable path."""

    attention_backend: str = ""
    """The attention backend class vLLM imports (``Platform.get_attn_backend_cls``)."""
    kernels: tuple[str, ...] = ()
    """Modules imported in every vLLM process before the model runs; importing them registers the
    device's kernels (``Platform.import_kernels``)."""
    worker: str = ""
    """vLLM's worker class for the device (``ParallelConfig.worker_cls``)."""
    device_communicator: str = ""
    """vLLM's device communicator class (``Platform.get_device_communicator_cls``)."""
    punica_wrapper: str = ""
    """The LoRA kernels' wrapper class (``Platform.get_punica_wrapper``)."""
    graph_wrapper: str = ""
    """A static-graph wrapper class; with it, and the backend's ``graphs`` capability, vLLM may capture graphs."""

    def __post_init__(self) -> None:
        """Check each field's type: a kit is written by hand, and vLLM would fail far from the mistake."""
        check_kit(self)


PORTABLE = VllmKit()
"""The kit of a backend for which no plugin answers: vLLM's portable path throughout."""
