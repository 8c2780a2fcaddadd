"""The xpu backend: Intel GPUs through stock torch's ``torch.xpu`` (IPEX is not needed).

Its spec and plugin are declared in :mod:`accelhal_backends.catalog` (``XPU``).
"""
