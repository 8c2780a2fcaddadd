"""accelhal's built-in backends, each registered through the ``accelhal`` entry-point group.

:mod:`accelhal_backends.catalog` declares every named backend's
:class:`~accelhal.BackendSpec` and the plugin its entry point names, and imports neither
torch nor a vendor runtime. A backend's package ``<name>/`` holds what is imported only
when it matters: ``<name>/accelerator.py``, the accelerator class, when the backend is
chosen; a probe that does more than count devices (``cuda/__init__.py``,
``xla/detection.py``), when it runs. The generic backend (``generic/``) and the op builders
(``builtin_ops/``) are plugin modules of their own.

This module holds no assertions for pytest to rewrite (PYTEST_DONT_REWRITE; see ``accelhal``).
"""
