"""Every member of DeepSpeed's own ``CPU_Accelerator`` asked of it and of the adapter on accelhal's cpu, side by side.

Run as a script (one process for every member: ``tests/compat/test_deepspeed_members.py``);
it prints one JSON line: for each member (and each set of arguments, ``name(args)``), what
each side answered, described by :func:`describe` so that answers compare as values::

    python tests/compat/deepspeed_members.py          # with the installed DeepSpeed
"""

from __future__ import annotations

import inspect
import json
import os
import sys
import types
from collections.abc import Callable
from typing import Any

NOISY = ("memory", "rss", "memory_stats")
"""Members whose answer is the process's resident set (or the host's memory): compared within a tolerance."""


def describe(value: Any, inputs: tuple[Any, ...] = ()) -> Any:
    """``value`` as JSON that compares as the answer does (a tensor: which input it is, its shape, dtype, values)."""
    import torch

    if isinstance(value, torch.Tensor):
        same = [i for i, given in enumerate(inputs) if value is given]
        shares = [i for i, given in enumerate(inputs) if isinstance(given, torch.Tensor) and _shares(value, given)]
        return {
            "tensor": list(value.shape),
            "dtype": str(value.dtype),
            "device": str(value.device),
            "is_input": same,
            "shares_input_memory": shares,
        }
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):
        return {"number": type(value).__name__, "value": value}
    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, torch.device):
        return {"torch.device": str(value)}
    if isinstance(value, types.ModuleType):
        return {"module": value.__name__}
    if isinstance(value, type):
        return {"class": f"{value.__module__}.{value.__qualname__}"}
    if isinstance(value, (list, tuple)):
        return {type(value).__name__: [describe(v, inputs) for v in value]}
    if isinstance(value, dict):
        return {"dict": {str(k): describe(v, inputs) for k, v in sorted(value.items())}}
    if hasattr(value, "__enter__") and hasattr(value, "__exit__"):
        return "context manager"
    if isinstance(value, torch.Generator):
        return {"generator": str(value.device), "is_default": value is torch.default_generator}
    if callable(value):
        return {"callable": getattr(value, "__qualname__", type(value).__qualname__)}
    return {"object": type(value).__qualname__}


def _shares(a: Any, b: Any) -> bool:
    return bool(a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr() and a.numel() and b.numel())


def calls() -> dict[str, Callable[[Any], tuple[Any, tuple[Any, ...]]]]:
    """Each member to ask (labelled with its arguments), as ``ask(accelerator) -> (answer, tensors given)``."""
    import torch

    def t() -> torch.Tensor:
        return torch.arange(6, dtype=torch.float32).reshape(2, 3)

    def with_tensor(name: str, *args: Any, **kwargs: Any) -> Callable[[Any], tuple[Any, tuple[Any, ...]]]:
        def ask(acc: Any) -> tuple[Any, tuple[Any, ...]]:
            given = t()
            return getattr(acc, name)(given, *args, **kwargs), (given,)

        return ask

    def plain(name: str, *args: Any, **kwargs: Any) -> Callable[[Any], tuple[Any, tuple[Any, ...]]]:
        def ask(acc: Any) -> tuple[Any, tuple[Any, ...]]:
            member = getattr(acc, name)
            return (member(*args, **kwargs) if callable(member) else member), ()

        return ask

    def seeded(acc: Any) -> tuple[Any, tuple[Any, ...]]:
        acc.manual_seed(7)
        first = torch.rand(2)
        state = acc.get_rng_state()
        second = torch.rand(2)
        acc.set_rng_state(state)
        return [first.tolist(), torch.equal(torch.rand(2), second), acc.initial_seed()], ()

    def visible(acc: Any) -> tuple[Any, tuple[Any, ...]]:
        env: dict[str, str] = {}
        acc.set_visible_devices_envs(env, [0, 1])
        return env, ()

    def compile_backend(acc: Any) -> tuple[Any, tuple[Any, ...]]:
        acc.set_compile_backend("eager")
        answer = acc.get_compile_backend()
        acc.set_compile_backend("inductor")
        return answer, ()

    def op_builder(name: str, op: str) -> Callable[[Any], tuple[Any, tuple[Any, ...]]]:
        def ask(acc: Any) -> tuple[Any, tuple[Any, ...]]:
            found = getattr(acc, name)(op)
            builder = found if name == "create_op_builder" else found()
            return {"NAME": builder.NAME, "name": builder.name, "is_compatible": builder.is_compatible(False)}, ()

        return ask

    def parameters(name: str) -> Callable[[Any], tuple[Any, tuple[Any, ...]]]:
        def ask(acc: Any) -> tuple[Any, tuple[Any, ...]]:
            params = inspect.signature(getattr(acc, name)).parameters.values()
            return [(p.name, repr(p.default) if p.default is not p.empty else None) for p in params], ()

        return ask

    asked: dict[str, Callable[[Any], tuple[Any, tuple[Any, ...]]]] = {}
    for name in (
        *("is_synchronized_device", "use_host_timers", "resolves_data_dependency", "handles_memory_backpressure"),
        *("current_device", "current_device_name", "device_count", "is_available", "random", "initial_seed"),
        *("Stream", "Event", "current_stream", "default_stream", "empty_cache", "range_pop", "create_graph"),
        *("communication_backend_name", "is_triton_supported", "is_bf16_supported", "is_fp16_supported"),
        *("is_fp64_supported", "supported_dtypes", "prefer_triton_grouped_mm", "is_current_stream_capturing"),
        *("op_builder_dir", "build_extension", "export_envs", "visible_devices_envs", "get_compile_backend"),
        *("pin_memory_alignment", "supports_nvtx_domain", "_torch_pins_host_memory"),
        *("_name", "_communication_backend_name", "_compile_backend"),
        *("memory_allocated", "max_memory_allocated", "memory_cached", "max_memory_cached", "memory_reserved"),
        *("max_memory_reserved", "memory_stats", "total_memory", "available_memory", "get_rss", "reset_rss"),
        *("reset_max_memory_allocated", "reset_max_memory_cached", "reset_peak_memory_stats"),
    ):
        asked[name] = plain(name)
    for name in (
        "BFloat16Tensor",
        "ByteTensor",
        "DoubleTensor",
        "FloatTensor",
        "HalfTensor",
        "IntTensor",
        "LongTensor",
    ):
        asked[f"{name}([1, 2])"] = plain(name, [1, 2])  # DeepSpeed's cpu: torch's legacy class; accelhal's: a factory
    asked["amp"] = plain("amp")
    asked["manual_seed(7)"] = plain("manual_seed", 7)
    for name in ("device_name", "device", "synchronize", "default_generator", "set_device"):
        asked[f"{name}(0)"] = plain(name, 0)
    for name in ("device_name", "device", "synchronize", "current_stream", "default_stream"):
        asked[f"{name}(None)"] = plain(name, None)
    asked["range_push('step')"] = plain("range_push", "step")
    asked["stream(None)"] = plain("stream", None)
    asked["capture_to_graph(None)"] = plain("capture_to_graph", None)
    asked["replay_graph(None)"] = plain("replay_graph", None)
    asked["lazy_call(f)"] = plain("lazy_call", lambda: 42)
    asked["manual_seed, get_rng_state, set_rng_state"] = seeded
    asked["manual_seed_all(7)"] = plain("manual_seed_all", 7)
    asked["set_visible_devices_envs(env, [0, 1])"] = visible
    asked["set_compile_backend('eager')"] = compile_backend
    asked["register_host_memory(0, 8)"] = plain("register_host_memory", 0, 8)
    asked["unregister_host_memory(0)"] = plain("unregister_host_memory", 0)
    asked["pin_empty(2, 3, dtype=float16)"] = plain("pin_empty", 2, 3, dtype=torch.float16)
    for label, kwargs in (
        ("", {}),
        ("make_copy=True", {"make_copy": True}),
        ("make_copy=False", {"make_copy": False}),
        ("make_copy=False, match_shape=False", {"make_copy": False, "match_shape": False}),
        ("align_bytes=64", {"align_bytes": 64}),
    ):
        asked[f"pin_memory(t{', ' if label else ''}{label})"] = with_tensor("pin_memory", **kwargs)
    for name in ("is_pinned", "unpin_memory", "on_accelerator", "_torch_pin_memory", "_torch_is_pinned"):
        asked[f"{name}(t)"] = with_tensor(name)
    asked["pin_empty_like(t)"] = with_tensor("pin_empty_like")
    asked["_torch_empty_pinned(t, (4,))"] = with_tensor("_torch_empty_pinned", (4,))
    for op in ("CPUAdamBuilder", "FusedAdamBuilder", "ShareMemCommBuilder", "NoSuchBuilder"):
        asked[f"create_op_builder({op!r})"] = op_builder("create_op_builder", op)
        asked[f"get_op_builder({op!r})"] = op_builder("get_op_builder", op)
    for name in ("create_op_builder", "get_op_builder", "device", "device_name", "pin_memory"):
        asked[f"{name}: parameters"] = parameters(name)
    return asked


def answer(acc: Any, ask: Callable[[Any], tuple[Any, tuple[Any, ...]]]) -> Any:
    """What ``acc`` answers (described), or the exception's class where it raises."""
    try:
        value, inputs = ask(acc)
    except Exception as exc:  # the answer is the exception's class
        return {"raises": type(exc).__name__}
    return describe(value, inputs)


def main() -> int:
    """Ask both sides every member; print ``{"deepspeed": release, "answers": {label: [adapter, DeepSpeed's]}}``."""
    os.environ.setdefault("ACCELHAL_ACCELERATOR", "cpu")
    import deepspeed
    from deepspeed.accelerator.cpu_accelerator import CPU_Accelerator

    from accelhal.compat.deepspeed import as_deepspeed_accelerator

    adapter = as_deepspeed_accelerator(disable_ops=())
    theirs = CPU_Accelerator()
    answers = {label: [answer(adapter, ask), answer(theirs, ask)] for label, ask in calls().items()}
    members = sorted(n for n in dir(CPU_Accelerator) if not n.startswith("__") and n != "_abc_impl")
    print(json.dumps({"deepspeed": deepspeed.__version__, "members": members, "answers": answers}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
