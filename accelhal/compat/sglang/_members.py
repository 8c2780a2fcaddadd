"""Which accelhal fact answers each member of SGLang's ``SRTPlatform``: ``MEMBERS``, the one table.

Every member of ``sglang.srt.platforms.interface.SRTPlatform`` (with those of its ``DeviceMixin``)
has one row; the sources are :mod:`accelhal.compat._members`'s, with ``kit`` the
:class:`~accelhal.compat.sglang.SglangKit` field that a plugin's ``accelhal_sglang_kit`` hook
returns, ``portable`` the bridge's own answer for a device without a kit (``torch_native``
attention, torch's own operators), and ``sglang`` SGLang's own default.

``tests/compat/sglang/test_members.py`` checks the table against the installed SGLang's
``SRTPlatform``: a member SGLang adds that the table does not cover fails it, and so does a built
class whose member is not what its row says.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from accelhal.compat import _members
from accelhal.compat._members import Answer, contract, kit, spec

__all__ = ["MEMBERS", "markdown_table"]

PORTABLE = Answer("portable")
SGLANG = Answer("sglang")

_ROWS: dict[str, Answer] = {
    # identity
    "_enum": spec("device_type", "OOT on every device: SGLang's in-tree CPU path needs its CPU kernel package"),
    "device_name": spec("name"),
    "device_type": spec("device_type", "SGLang's device string: the engine places weights and KV cache there"),
    "capabilities": contract(
        "capabilities",
        "supports_triton from is_triton_supported; graph_capture from the kit's graph runner and the 'graphs' "
        "capability; the rest False",
    ),
    "supported_quantization": SGLANG,
    "is_cuda": SGLANG,
    "is_rocm": SGLANG,
    "is_cpu": SGLANG,
    "is_xpu": SGLANG,
    "is_musa": SGLANG,
    "is_npu": SGLANG,
    "is_tpu": SGLANG,
    "is_mps": SGLANG,
    "is_sail": SGLANG,
    "is_cuda_alike": SGLANG,
    "is_out_of_tree": SGLANG,
    "cpu_arch": SGLANG,
    "get_cpu_architecture": SGLANG,
    "__repr__": SGLANG,
    # devices and memory
    "get_device": contract("device_name", "the device type where no index is given"),
    "set_device": contract("set_device"),
    "get_device_name": contract("device_description"),
    "get_device_uuid": contract("device_name", "with the host's name: the contract has no UUID"),
    "get_device_capability": contract("device_capability", "'major.minor' parsed; None where the runtime has none"),
    "reindex_device_id": SGLANG,
    "get_device_total_memory": contract("total_memory"),
    "get_current_memory_usage": contract(
        "available_memory", "total_memory - available_memory: SGLang's free memory is the contract's available"
    ),
    "get_available_memory": contract("available_memory", "(available_memory, total_memory)"),
    "empty_cache": contract("empty_cache"),
    "synchronize": contract("synchronize"),
    "is_pin_memory_available": contract("capabilities", "whether the backend declares the 'pinning' capability"),
    "seed_everything": contract("manual_seed_all", "after SGLang's (Python, numpy, torch)"),
    "inference_mode": SGLANG,
    "verify_quantization": SGLANG,
    "get_torch_profiler_activity_str": PORTABLE,
    "get_torch_profiler_activity": PORTABLE,
    # distributed
    "get_torch_distributed_backend_str": contract("communication_backend_name", "gloo where it names none"),
    "get_communicator_class": kit("communicator"),
    "get_group_coordinator_device": SGLANG,
    # configuration, start-up, kernels
    "apply_server_args_defaults": PORTABLE,
    "init_backend": kit(
        "kernels",
        "in each worker: first gives torch.<device_type> the torch.cuda-shaped members SGLang's core calls that "
        "it lacks (Stream, current_stream, ...) from the contract, then imports the kit's modules",
    ),
    "post_load_model": SGLANG,
    "get_dispatch_key_name": kit("fused_op_key", "portable: native, each fused op's forward_native"),
    "get_compile_backend": contract("get_compile_backend"),
    "get_quantization_config": SGLANG,
    # attention, KV cache, graphs
    "get_default_attention_backend": kit("attention_backend", "portable: torch_native"),
    "get_graph_runner_cls": kit("graph_runner", "None without one: SGLang runs eagerly"),
    "get_full_graph_backend_cls": SGLANG,
    "get_piecewise_backend_cls": SGLANG,
    "get_kv_pool_cls": SGLANG,
    "get_paged_allocator_cls": SGLANG,
    "support_mamba_cache_extra_buffer": SGLANG,
    # speculative decoding (off: supports_speculative_algorithm is SGLang's False)
    "supports_speculative_algorithm": SGLANG,
    "supports_speculative_draft_attention_backend": SGLANG,
    "get_default_speculative_draft_attention_backend": SGLANG,
    "get_speculative_cache_locs_fn": SGLANG,
    "get_speculative_worker_cls": SGLANG,
    "get_speculative_graph_runner_cls": SGLANG,
}

MEMBERS: Mapping[str, Answer] = MappingProxyType(_ROWS)
"""Every member of SGLang's ``SRTPlatform`` and where the bridge's answer comes from."""

_SOURCE_WORDS = {
    "contract": "contract `{by}`",
    "spec": "spec `{by}`",
    "kit": "kit `{by}`, else portable",
    "portable": "portable (the bridge's)",
    "sglang": "SGLang's default",
}


def markdown_table() -> str:
    """``MEMBERS`` as the Markdown table ``docs/sglang.md`` shows (a test keeps the page equal to it)."""
    return _members.markdown_table(MEMBERS, "`SRTPlatform` member", _SOURCE_WORDS)
