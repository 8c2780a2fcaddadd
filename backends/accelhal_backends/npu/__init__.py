"""The npu backend: Huawei Ascend NPUs through ``torch_npu`` (which registers ``torch.npu``).

Its spec and plugin are declared in :mod:`accelhal_backends.catalog` (``NPU``).
"""
