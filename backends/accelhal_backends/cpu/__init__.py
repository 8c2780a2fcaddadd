"""The cpu backend: the host processor, always available, the fallback of the cascade.

Its spec and plugin are declared in :mod:`accelhal_backends.catalog` (``CPU``).
"""
