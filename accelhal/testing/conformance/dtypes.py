"""Dtypes: what the backend claims is usable — a tensor of each claimed dtype round-trips through the device."""

from __future__ import annotations

import pytest
import torch

from accelhal.contract.accelerator import Accelerator
from accelhal.testing.conformance.base import SuiteBase, expect, expect_type, first_line

SUPPORT_QUERIES = {
    "is_fp16_supported": torch.float16,
    "is_bf16_supported": torch.bfloat16,
    "is_fp64_supported": torch.float64,
}
FACTORIES = {
    "FloatTensor": torch.float32,
    "LongTensor": torch.int64,
    "IntTensor": torch.int32,
    "ByteTensor": torch.uint8,
}


def claimed_dtypes(accelerator: Accelerator) -> list[torch.dtype]:
    """``supported_dtypes()`` plus float64 where ``is_fp64_supported()``."""
    claimed = list(accelerator.supported_dtypes())
    if accelerator.is_fp64_supported() and torch.float64 not in claimed:
        claimed.append(torch.float64)
    return claimed


def _round_trip_problem(dtype: torch.dtype, device: torch.device) -> str | None:
    values = torch.tensor([0.0, 1.0, 2.0, 3.0])
    try:
        on_device = values.to(device=device, dtype=dtype)
        back = (on_device + on_device).to("cpu", torch.float32)
    except Exception as exc:  # any failure is the finding
        return first_line(exc)
    if not torch.equal(back, values * 2):
        return f"x + x read back as {back.tolist()}, expected {(values * 2).tolist()}"
    return None


class DtypeTests(SuiteBase):
    """Dtype support queries and the dtypes they claim."""

    @pytest.mark.parametrize("member", sorted(SUPPORT_QUERIES))
    def test_support_query_is_bool(self, accelerator: Accelerator, member: str) -> None:
        expect_type(self.call(accelerator, member), f"{member}()", bool)

    def test_supported_dtypes(self, accelerator: Accelerator) -> None:
        dtypes = accelerator.supported_dtypes()
        expect(
            isinstance(dtypes, list) and all(isinstance(d, torch.dtype) for d in dtypes),
            "supported_dtypes()",
            "a list of torch.dtype",
            dtypes,
        )
        expect(bool(dtypes) and dtypes[0] == torch.float32, "supported_dtypes()", "torch.float32 first", dtypes)
        for query, dtype in SUPPORT_QUERIES.items():
            if dtype is not torch.float64:
                claimed = self.call(accelerator, query)
                expect(
                    (dtype in dtypes) == claimed,
                    "supported_dtypes()",
                    f"to list {dtype} exactly when {query}() is True ({claimed})",
                    dtypes,
                )

    def test_claimed_dtypes_round_trip(self, accelerator: Accelerator) -> None:
        self.require_tensors(accelerator)
        device = accelerator.device()
        failures = {
            str(dtype): problem
            for dtype in claimed_dtypes(accelerator)
            if (problem := _round_trip_problem(dtype, device)) is not None
        }
        expect(
            not failures,
            "supported_dtypes()/is_*_supported()",
            f"every claimed dtype to round-trip a tensor through {device}",
            failures,
        )

    @pytest.mark.parametrize("member", sorted(FACTORIES))
    def test_tensor_factory(self, accelerator: Accelerator, member: str) -> None:
        self.require_tensors(accelerator)
        tensor = getattr(accelerator, member)([1, 2])
        expect_type(tensor, f"{member}([1, 2])", torch.Tensor)
        expect(tensor.dtype == FACTORIES[member], f"{member}([1, 2])", f"dtype {FACTORIES[member]}", tensor.dtype)
        expect(
            accelerator.on_accelerator(tensor),
            f"{member}([1, 2])",
            f"a tensor on {accelerator.device_type}",
            tensor.device,
        )
