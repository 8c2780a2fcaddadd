"""Which accelhal fact answers each member of vLLM's ``Platform``: ``MEMBERS``, the one table.

Every member of ``vllm.platforms.interface.Platform`` has one row, an :class:`Answer` naming
where the bridge takes it from (``contract``, ``spec``, ``kit``, ``portable`` or ``vllm``:
:mod:`accelhal.compat._members`). ``tests/compat/vllm/test_members.py`` checks the table against
the installed vLLM. See ``docs/vllm.md``, "Which fact answers each member".
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from accelhal.compat import _members
from accelhal.compat._members import Answer

__all__ = ["MEMBERS", "Answer", "markdown_table"]

_contract, _spec, _kit = _members.contract, _members.spec, _members.kit

PORTABLE = Answer("portable")
VLLM = Answer("vllm")

_ROWS: dict[str, Answer] = {
    # identity
    "_enum": _spec(
        "device_type",
        "CPU on the host (vLLM's CPU kernels); OOT elsewhere: each layer's forward_oot, torch's own ops unless "
        "the kit's kernels register the device's",
    ),
    "device_name": _spec("name"),
    "device_type": _spec("device_type"),
    "dispatch_key": _spec(
        "device_type", "torch's dispatch key of the device type (PrivateUse1 for an out-of-tree device)"
    ),
    "ray_device_key": _spec(
        "visible_devices_envs", "the Ray resource of accelhal's Ray adapter; '' without Ray or on the host"
    ),
    "device_control_env_var": _spec(
        "visible_devices_envs", "the first; the portable path's variable when the spec has none"
    ),
    "ray_noset_device_env_vars": _spec("visible_devices_envs", "RAY_EXPERIMENTAL_NOSET_<variable> for each"),
    "additional_env_vars": _contract("export_envs", "the variables set here that start with one of its prefixes"),
    "simple_compile_backend": _contract("get_compile_backend"),
    "get_compile_backend": _contract("get_compile_backend"),
    "dist_backend": _contract("communication_backend_name"),
    "supported_quantization": VLLM,
    "supported_dtypes": _contract("supported_dtypes", "in vLLM's order of preference: bfloat16, float16, float32"),
    "check_if_supports_dtype": VLLM,
    "pass_key": VLLM,
    "_global_graph_pool": VLLM,
    # what the enum says
    "is_cuda": VLLM,
    "is_rocm": VLLM,
    "is_tpu": VLLM,
    "is_xpu": VLLM,
    "is_cpu": VLLM,
    "is_zen_cpu": VLLM,
    "is_out_of_tree": VLLM,
    "is_unspecified": VLLM,
    "is_cuda_alike": VLLM,
    "is_sleep_mode_available": VLLM,
    "uses_host_device_handling": VLLM,
    "is_cumem_allocator_available": VLLM,
    # devices
    "set_device": _contract("set_device"),
    "get_device_name": _contract("device_description"),
    "get_device_uuid": VLLM,
    "get_device_total_memory": _contract("total_memory"),
    "get_current_memory_usage": _contract("memory_allocated"),
    "get_device_capability": _contract("device_capability", "'major.minor' parsed; None where the runtime has none"),
    "has_device_capability": VLLM,
    "is_device_capability": VLLM,
    "is_device_capability_family": VLLM,
    "get_all_gpu_pci_bus_ids": VLLM,
    "is_integrated_gpu": VLLM,
    "num_compute_units": PORTABLE,
    "device_control_id_to_physical_device_id": VLLM,
    "device_id_to_physical_device_id": VLLM,
    "logical_device_id_to_visible_device_id": VLLM,
    "visible_device_id_to_physical_device_id": VLLM,
    "get_cpu_architecture": VLLM,
    # state
    "manual_seed_all": _contract("manual_seed_all"),
    "inference_mode": PORTABLE,
    "is_pin_memory_available": _contract("capabilities", "whether the backend declares the 'pinning' capability"),
    # kernels, attention, worker, communication
    "import_kernels": _kit("kernels", "imports the kit's modules; the portable path imports vLLM's CPU kernels"),
    "import_ir_kernels": VLLM,
    "register_triton_kernel_overrides": PORTABLE,
    "get_default_ir_op_priority": VLLM,
    "get_attn_backend_cls": _kit("attention_backend"),
    "get_supported_vit_attn_backends": VLLM,
    "get_vit_attn_backend": VLLM,
    "get_mla_prefill_backend_cls": PORTABLE,
    "opaque_attention_op": PORTABLE,
    "get_punica_wrapper": _kit("punica_wrapper"),
    "get_device_communicator_cls": _kit(
        "device_communicator",
        "portable: vLLM's CPU communicator on cpu, its base communicator over dist_backend elsewhere",
    ),
    "check_and_update_config": _kit(
        "worker",
        "the portable path's, then the worker: the kit's, vLLM's CPU worker on cpu, accelhal's device worker elsewhere",
    ),
    "stateless_init_device_torch_dist_pg": VLLM,
    "use_all_gather": VLLM,
    "use_custom_allreduce": VLLM,
    "use_custom_op_collectives": VLLM,
    "can_update_inplace": VLLM,
    "enable_multi_stream_overlap": VLLM,
    # graphs
    "support_static_graph_mode": _kit("graph_wrapper", "and the backend's 'graphs' capability"),
    "get_static_graph_wrapper_cls": _kit("graph_wrapper"),
    "get_global_graph_pool": VLLM,
    # configuration and blocks
    "pre_register_and_update": VLLM,
    "apply_config_platform_defaults": VLLM,
    "update_block_size_for_backend": PORTABLE,
    "_find_non_ssm_backends": VLLM,
    "_preferred_block_size_for_backends": VLLM,
    "_check_aligned_block_size": VLLM,
    "_align_heterogeneous_kv_block_size": VLLM,
    "_align_hybrid_block_size": VLLM,
    "_find_non_ssm_backend": VLLM,
    "_get_indexer_block_alignment": VLLM,
    "get_lora_vocab_padding_size": VLLM,
    "register_custom_kv_cache_specs": VLLM,
    "check_runner_kv_caches_multi_layer": PORTABLE,
    "support_hybrid_kv_cache": PORTABLE,
    "check_max_model_len": VLLM,
    "get_max_output_tokens": VLLM,
    "verify_model_arch": VLLM,
    "verify_quantization": VLLM,
    "validate_request": VLLM,
    "validate_environ": VLLM,
    "log_warnings": VLLM,
    "get_pass_manager_cls": VLLM,
    "set_additional_forward_context": VLLM,
    # number formats
    "get_infinity_values": VLLM,
    "supports_mx": VLLM,
    "supports_fp8": VLLM,
    "is_fp8_fnuz": VLLM,
    "fp8_dtype": VLLM,
    "support_deep_gemm": VLLM,
    "is_arch_support_pdl": VLLM,
    # weights and transfer
    "use_sync_weight_loader": VLLM,
    "make_synced_weight_loader": VLLM,
    "get_nixl_supported_devices": VLLM,
    "get_nixl_memory_type": VLLM,
    # what Platform.__getattr__ forwards to torch.<device_type>
    "__getattr__": _contract("*", "the accelerator's member of that name, else torch.<device_type>'s, as vLLM's does"),
}

MEMBERS: Mapping[str, Answer] = MappingProxyType(_ROWS)
"""Every member of vLLM's ``Platform`` and where the bridge's answer comes from."""

_SOURCE_WORDS = {
    "contract": "contract `{by}`",
    "spec": "spec `{by}`",
    "kit": "kit `{by}`, else portable",
    "portable": "portable (vLLM's `CpuPlatform`)",
    "vllm": "vLLM's default",
}


def markdown_table() -> str:
    """``MEMBERS`` as the Markdown table ``docs/vllm.md`` shows (a test keeps the page equal to it)."""
    return _members.markdown_table(MEMBERS, "`Platform` member", _SOURCE_WORDS)
