"""The xla backend: XLA devices through ``torch_xla`` (Google TPUs; XLA's CPU client; PJRT plugins).

The probe (:mod:`.detection`) takes an XLA device only where one is chosen: ``PJRT_DEVICE``
set, or a TPU attached as torch_xla detects it. With ``PJRT_DEVICE`` unset on a machine
without a TPU the verdict is ``no-device`` and nothing is imported, so torch_xla installed
beside CUDA or on a plain host changes no selection. It never starts torch_xla's runtime.
Priority 200, the only built-in below cuda (``docs/reference/priorities.md`` says why).
Its spec and plugin are declared in :mod:`accelhal_backends.catalog` (``XLA``).
"""
