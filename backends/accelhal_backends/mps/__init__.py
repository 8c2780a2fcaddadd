"""The mps backend: Apple-silicon GPUs through ``torch.mps`` (Metal Performance Shaders).

Its spec and plugin are declared in :mod:`accelhal_backends.catalog` (``MPS``).
"""
