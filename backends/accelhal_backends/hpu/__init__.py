"""The hpu backend: Intel Gaudi through ``habana_frameworks.torch.hpu``.

``torch.compile`` takes Gaudi's own backend, ``hpu_backend`` (Inductor generates no code for
Gaudi), which the Gaudi software stack registers with ``torch._dynamo``.

Probing and selecting it has no process-wide side effects: no environment variable is
written and deterministic algorithms are not switched on (DeepSpeed's backend did both).

Its spec and plugin are declared in :mod:`accelhal_backends.catalog` (``HPU``).
"""
