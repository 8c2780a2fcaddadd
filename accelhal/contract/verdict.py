"""What a probe says about a backend: a :class:`Status`, a reason and a hint (:class:`Verdict`).

Imported by plugins' probes during discovery: it imports nothing but the record helper.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from accelhal.plain_record import record


class Status(str, enum.Enum):
    """The outcome of probing one backend, or why it was never probed."""

    AVAILABLE = "available"
    """The runtime is installed and sees at least one device."""
    NOT_INSTALLED = "not-installed"
    """A required module is missing (found with ``importlib.util.find_spec``, nothing imported)."""
    NO_DEVICE = "no-device"
    """The runtime imports but sees no device."""
    BROKEN = "broken"
    """The runtime is installed but fails to load (e.g. ``torch_npu`` without the Ascend libraries)."""
    REPLACED = "replaced"
    """The device module answers for another runtime, whose package replaced its functions (``torch.cuda``
    under torch_npu's ``transfer_to_npu`` or torch_supa); that package's backend is the one to use."""
    PROBE_ERROR = "probe-error"
    """The probe itself raised; the exception is in the reason."""
    INVALID = "invalid"
    """The backend's accelerator class failed validation (missing members, bad contract version)."""
    NOT_PROBED = "not-probed"
    """Selection was decided without probing this backend (an override named another)."""


@record(frozen=True)
class Verdict:
    """What a probe found: a :class:`Status`, a human-readable reason and an optional hint.

    Build one with the named constructors::

        Verdict.available("2 device(s) visible")
        Verdict.no_device("torch.cuda.device_count() == 0")
        Verdict.broken("import torch_npu failed: ImportError: libhccl.so", hint="source set_env.sh")
    """

    status: Status
    reason: str
    hint: str | None = None

    @property
    def is_available(self) -> bool:
        """True when the backend can be used."""
        return self.status is Status.AVAILABLE

    @classmethod
    def available(cls, reason: str = "available") -> Verdict:
        """The backend can be used."""
        return cls(Status.AVAILABLE, reason)

    @classmethod
    def not_installed(cls, reason: str, hint: str | None = None) -> Verdict:
        """A required module is missing."""
        return cls(Status.NOT_INSTALLED, reason, hint)

    @classmethod
    def no_device(cls, reason: str, hint: str | None = None) -> Verdict:
        """The runtime loads but sees no device."""
        return cls(Status.NO_DEVICE, reason, hint)

    @classmethod
    def broken(cls, reason: str, hint: str | None = None) -> Verdict:
        """The runtime is installed but fails to load."""
        return cls(Status.BROKEN, reason, hint)

    @classmethod
    def replaced(cls, reason: str, hint: str | None = None) -> Verdict:
        """The device module's functions were replaced by another package; ``reason`` names it."""
        return cls(Status.REPLACED, reason, hint)


Probe = Callable[[], Verdict]
"""A zero-argument callable that says whether a backend is usable here.

A probe must be cheap and honest: check for modules with ``importlib.util.find_spec``
before importing them, answer "no device" when the runtime imports but sees none, and
never create a device context (after probing, a process can still fork and use the
device in the child). An exception escaping a probe is caught by the selection and
reported as :attr:`Status.PROBE_ERROR`; it never crashes selection.
"""
