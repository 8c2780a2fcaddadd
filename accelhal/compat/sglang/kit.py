"""What a device adds for SGLang beyond the accelhal contract: :class:`SglangKit`, answered by ``accelhal_sglang_kit``.

A plugin returns a kit for its backend from the :func:`accelhal.discovery.hooks.accelhal_sglang_kit`
hook, beside its ``accelhal_vllm_kit``. Every field is optional: what a kit leaves empty is
SGLang's portable path. Names are qualified names (the attention backend a name in SGLang's
attention registry) that SGLang imports in its own processes: a kit imports nothing itself. See
``docs/sglang.md``, "The hook for attention and kernels".
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
