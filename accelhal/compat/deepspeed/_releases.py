"""The DeepSpeed releases the adapter supports, and what differs between them.

DeepSpeed's ``DeepSpeedAccelerator`` changed shape within the range: until 0.18.6 ``amp()`` is
abstract, until 0.19.4 so is pinning (``pin_memory(tensor, align_bytes=1)``, ``is_pinned``);
0.19.0 gives ``range_push``/``range_pop`` a domain; from 0.19.5 DeepSpeed implements pinning
itself (counting the bytes, then a device hook), from 0.19.6 as a dispatch between its native
allocator and the ``_torch_*`` device hooks (``pin_empty`` from 0.19.7).
:data:`SHAPES` records each shape from the first release that has it, with what DeepSpeed's own
``CPU_Accelerator`` answers differently in it (:class:`CpuShape`: on a host device the adapter answers
as it does); ``tests/compat/test_deepspeed_releases.py`` checks it against every release's source
(``tests/data/deepspeed-shapes.json``) and against the installed DeepSpeed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from accelhal.compat._releases import ReleaseRange, ShapeTable

SUPPORTED = ReleaseRange("deepspeed", "0.15.0", "0.19.8", "0.20")
"""DeepSpeed 0.15.0 to 0.19.8 tested; 0.20 and later refused."""


_CPU_WRITTEN = {"create_op_builder": "(self, op_name)", "get_rss": "(self)", "reset_rss": "(self)"}


@dataclass(frozen=True)
class CpuShape:
    """DeepSpeed's own ``CPU_Accelerator`` in a run of releases, where it does not answer as the abstract class does.

    The adapter over an accelhal accelerator of device type ``cpu`` (the host, which DeepSpeed
    serves with that class) answers as it does.
    """

    own: frozenset[str]
    """Members whose ``CPU_Accelerator`` implementation the adapter keeps on the host: ``device()`` is None,
    ``manual_seed`` returns torch's generator, ``pin_memory`` returns the tensor itself (from 0.19.6 with
    ``make_copy=False`` too, unless DeepSpeed's native allocator is on; counting no bytes in 0.19.5), and
    ``is_fp16_supported()`` is False to 0.16.7."""
    written: Mapping[str, str] = field(default_factory=lambda: dict(_CPU_WRITTEN))
    """Members the adapter writes on the host with the class's signature: those outside the abstract class
    (``get_rss``, ``reset_rss``: from accelhal's memory figures) and ``create_op_builder(self, op_name)``."""


_CPU_OWN = frozenset({"device", "manual_seed", "manual_seed_all", "pin_memory"})
_CPU_FP32 = CpuShape(_CPU_OWN | {"is_fp16_supported", "supported_dtypes"})
_CPU = CpuShape(_CPU_OWN)


@dataclass(frozen=True)
class DeepSpeedShape:
    """What one run of DeepSpeed releases declares where releases in the range differ."""

    abstract: Mapping[str, str]
    """The abstract members that are not the same in every release of the range, with their signatures."""
    concrete: Mapping[str, str]
    """The members DeepSpeed implements itself that are not the same in every release, with their
    signatures (an attribute: its value)."""
    own: frozenset[str] = field(default_factory=frozenset)
    """Members whose DeepSpeed implementation the adapter keeps (pinning: DeepSpeed's dispatch between its
    native allocator and the device hooks ``_torch_pin_memory``, ... which are delegated to accelhal)."""
    written: frozenset[str] = field(default_factory=frozenset)
    """Members the adapter writes itself for this shape (where DeepSpeed's signature is not accelhal's)."""
    cpu: CpuShape = _CPU
    """What DeepSpeed's own ``CPU_Accelerator`` answers differently, which the adapter follows on the host."""

    @property
    def pins_with_align_bytes(self) -> bool:
        """Whether DeepSpeed's ``pin_memory`` is ``(tensor, align_bytes=1)`` (to 0.19.5), not accelhal's signature."""
        return {**self.abstract, **self.concrete}.get("pin_memory") == ALIGNED_PIN_MEMORY

    @property
    def allocates_pinned_buffers(self) -> bool:
        """Whether DeepSpeed has ``pin_empty`` (0.19.7), whose device classes override ``_torch_empty_pinned``."""
        return "pin_empty" in self.concrete


ALIGNED_PIN_MEMORY = "(self, tensor, align_bytes=1)"
"""DeepSpeed's ``pin_memory`` signature before its pinning dispatch (0.19.6)."""


_RANGES = {"range_pop": "(self)", "range_push": "(self, msg)"}
_DOMAIN_RANGES = {"range_pop": "(self, domain=None)", "range_push": "(self, msg, domain=None, category=None)"}
_ABSTRACT_PINNING = {"is_pinned": "(self, tensor)", "pin_memory": ALIGNED_PIN_MEMORY}
_NVTX = {"supports_nvtx_domain": "False"}
_TRITON = {**_NVTX, "prefer_triton_grouped_mm": "(self)"}
_DISPATCH = {
    **_TRITON,
    "is_fp64_supported": "(self)",
    "_torch_empty_pinned": "(self, tensor, shape)",
    "_torch_is_pinned": "(self, tensor)",
    "_torch_pin_memory": "(self, tensor)",
    "is_pinned": "(self, tensor)",
    "pin_memory": "(self, tensor, make_copy=True, match_shape=True)",
    "register_host_memory": "(self, address, num_bytes)",
    "unregister_host_memory": "(self, address)",
    "unpin_memory": "(self, tensor)",
}
_FRESH = {
    **_DISPATCH,
    "_pin_fresh": "(self, template, shape)",
    "_require_host_device": "(device)",
    "_shape_numel": "(shape)",
    "_torch_pins_host_memory": "True",
    "pin_empty": "(self, *size, dtype, device='cpu')",
    "pin_empty_like": "(self, tensor, device='cpu', dtype=None)",
}
_DISPATCH_OWN = frozenset({"pin_memory", "is_pinned", "unpin_memory"})

SHAPES: ShapeTable[DeepSpeedShape] = ShapeTable(
    [
        # pinning is two abstract members, and amp() one: the adapter writes pin_memory and amp
        (
            "0.15.0",
            DeepSpeedShape(
                {"amp": "(self)", **_ABSTRACT_PINNING, **_RANGES},
                {},
                written=frozenset({"amp", "pin_memory"}),
                cpu=_CPU_FP32,
            ),
        ),
        # DeepSpeed's cpu asks oneDNN whether it has float16 (False before)
        (
            "0.16.8",
            DeepSpeedShape(
                {"amp": "(self)", **_ABSTRACT_PINNING, **_RANGES}, {}, written=frozenset({"amp", "pin_memory"})
            ),
        ),
        ("0.18.7", DeepSpeedShape({**_ABSTRACT_PINNING, **_RANGES}, {}, written=frozenset({"pin_memory"}))),
        ("0.19.0", DeepSpeedShape({**_ABSTRACT_PINNING, **_DOMAIN_RANGES}, _NVTX, written=frozenset({"pin_memory"}))),
        ("0.19.4", DeepSpeedShape({**_ABSTRACT_PINNING, **_DOMAIN_RANGES}, _TRITON, written=frozenset({"pin_memory"}))),
        # DeepSpeed's pin_memory counts bytes, then calls the device hook _pin_memory(tensor, align_bytes)
        (
            "0.19.5",
            DeepSpeedShape(
                {"is_pinned": "(self, tensor)", **_DOMAIN_RANGES},
                {
                    **_TRITON,
                    "_pin_memory": "(self, tensor, align_bytes=1)",
                    "pin_memory": ALIGNED_PIN_MEMORY,
                },
                own=frozenset({"pin_memory"}),
                written=frozenset({"_pin_memory"}),
            ),
        ),
        # DeepSpeed's pinning dispatch (native allocator or the _torch_* device hooks)
        ("0.19.6", DeepSpeedShape(_DOMAIN_RANGES, _DISPATCH, own=_DISPATCH_OWN)),
        (
            "0.19.7",
            DeepSpeedShape(_DOMAIN_RANGES, _FRESH, own=_DISPATCH_OWN | {"pin_empty", "pin_empty_like", "_pin_fresh"}),
        ),
        (
            "0.19.8",
            DeepSpeedShape(
                _DOMAIN_RANGES,
                {**_FRESH, "is_current_stream_capturing": "(self)", "pin_memory_alignment": "(self)"},
                own=_DISPATCH_OWN | {"pin_empty", "pin_empty_like", "_pin_fresh"},
            ),
        ),
    ]
)
"""Each shape of the range, from the first release that has it (``tests/data/deepspeed-shapes.json``)."""


def installed_shape() -> DeepSpeedShape:
    """The shape of the installed DeepSpeed; :class:`~accelhal.UnsupportedReleaseError` outside :data:`SUPPORTED`."""
    return SHAPES.shape_for(SUPPORTED.check())


@dataclass(frozen=True)
class KnownDefect:
    """A defect of DeepSpeed's own in some releases of the range: its own accelerators show it too."""

    summary: str
    """What goes wrong, and where."""
    fixed_by: str
    """DeepSpeed's change that fixed it (the first release of the row without it has the fix)."""


GLOO_ZERO3_GATHER = KnownDefect(
    "ZeRO-3's coalesced parameter all-gather (Init._allgather_params_coalesced) waits for its last async handle"
    " only; on gloo (cpu) the others may still be writing, so at world size 2 and more the gathered parameters"
    " can hold uninitialised memory: inf or nan losses, ranks gathering different values, now and then",
    "https://github.com/deepspeedai/DeepSpeed/pull/8539",
)

GLOO_ZERO12_FLAT_GRAD = KnownDefect(
    "ZeRO-1 and ZeRO-2 flatten the parameters on the device without detaching them, so the flat buffer requires"
    " grad, and gloo's all-gather into it after each step fails at world size 2 and more ('Output 0 of Split is a"
    " view and is being modified inplace')",
    "DeepSpeed 0.19.0, whose DeepSpeedZeroOptimizer detaches the flattened buffer",
)

DEFECTS: ShapeTable[frozenset[KnownDefect]] = ShapeTable(
    [
        ("0.15.0", frozenset({GLOO_ZERO3_GATHER})),
        ("0.18.7", frozenset({GLOO_ZERO3_GATHER, GLOO_ZERO12_FLAT_GRAD})),
        ("0.19.0", frozenset({GLOO_ZERO3_GATHER})),
        ("0.19.8", frozenset()),
    ]
)
"""DeepSpeed's known defects, from the first release that has each set (``tests/compat/test_deepspeed_releases.py``
checks the installed DeepSpeed's source against its row)."""


def installed_defects() -> frozenset[KnownDefect]:
    """The known defects of the installed DeepSpeed; :class:`~accelhal.UnsupportedReleaseError` outside the range."""
    return DEFECTS.shape_for(SUPPORTED.check())
