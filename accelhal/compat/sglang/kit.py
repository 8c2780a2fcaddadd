"""What a device adds for SGLang beyond the accelhal contract: :class:`SglangKit`, answered by ``accelhal_sglang_kit``.

A plugin whose device needs its own attention backend, kernels or graph runner in SGLang
implements the :func:`accelhal.discovery.hooks.accelhal_sglang_kit` hook and returns a kit for its
backend, beside the ``accelhal_vllm_kit`` it may return for vLLM. Every field is optional: what
a kit leaves empty is SGLang's portable path (its ``torch_native`` attention, the in-tree KV
pools and allocator, each layer's ``forward_native``, no graph capture), which a device runs
through torch's own operators and its CPU fallback. Names are qualified names that SGLang
imports in its own processes (the attention backend is a name in SGLang's attention registry,
which the kit's kernel modules may extend): a kit imports nothing itself.

Example::

    from accelhal import hookimpl
    from accelhal.compat.sglang import SglangKit

    @hookimpl
    def accelhal_sglang_kit(backend):
        if backend != "mydev":
            return None
        return SglangKit(attention_backend="mydev_attn", kernels=("my_pkg.sglang.ops",), fused_op_key="mydev")
"""

from __future__ import annotations

from dataclasses import dataclass

from accelhal.compat._engines import check_kit


@dataclass(frozen=True)
class SglangKit:
    """A device's additions for SGLang; each empty field takes SGLang's portable path."""

    attention_backend: str = ""
    """The name of SGLang's attention backend for the device (``SRTPlatform.get_default_attention_backend``)."""
    kernels: tuple[str, ...] = ()
    """Modules imported in each SGLang worker before the model loads; importing them registers the device's
    kernels, attention backends and fused-op forwards (``SRTPlatform.init_backend``)."""
    fused_op_key: str = ""
    """The ``forward_<key>`` SGLang's fused ops take on the device (``SRTPlatform.get_dispatch_key_name``);
    empty: ``native``, torch's own operators."""
    graph_runner: str = ""
    """A graph runner class; with it, and the backend's ``graphs`` capability, SGLang captures decode graphs."""
    communicator: str = ""
    """SGLang's communicator class for the device (``SRTPlatform.get_communicator_class``)."""

    def __post_init__(self) -> None:
        """Check each field's type: a kit is written by hand, and SGLang would fail far from the mistake."""
        check_kit(self)


PORTABLE = SglangKit()
"""The kit of a backend for which no plugin answers: SGLang's portable path throughout."""
