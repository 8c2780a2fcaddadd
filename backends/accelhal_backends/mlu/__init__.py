"""The mlu backend: Cambricon MLUs through ``torch_mlu`` (which registers ``torch.mlu``).

Its spec and plugin are declared in :mod:`accelhal_backends.catalog` (``MLU``).
"""
