"""What every conformance test class shares: the backend under test, skips with reasons, checks with messages."""

from __future__ import annotations

import weakref
from typing import Any, ClassVar

import pytest
import torch

from accelhal.contract.accelerator import Accelerator
from accelhal.contract.spec import Capability

_ALLOCATION: weakref.WeakKeyDictionary[Accelerator, str | None] = weakref.WeakKeyDictionary()


def allocation_problem(accelerator: Accelerator) -> str | None:
    """Why ``accelerator`` cannot hold a tensor (``None`` when it can); tried once per accelerator."""
    if accelerator not in _ALLOCATION:
        try:
            tensor = torch.zeros(1, device=accelerator.device())
            problem = None if tensor.cpu().item() == 0 else f"a zero tensor on {tensor.device} read back non-zero"
        except Exception as exc:  # any failure means: no tensors here
            problem = first_line(exc)
        _ALLOCATION[accelerator] = problem
    return _ALLOCATION[accelerator]


def first_line(exc: BaseException, limit: int = 120) -> str:
    """``"Type: first line of the message"``, cut to ``limit`` characters."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0] if lines else ''}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_context_manager(value: object) -> bool:
    """Whether ``value`` can be used in a ``with`` statement."""
    return hasattr(value, "__enter__") and hasattr(value, "__exit__")


def describe(value: object) -> str:
    """``value`` with its type, for failure messages: ``'0' (str)``."""
    return f"{value!r} ({type(value).__qualname__})"


def expect(ok: bool, member: str, expected: str, got: object) -> None:
    """Fail, naming ``member`` and what was expected, unless ``ok``."""
    if not ok:
        raise AssertionError(f"{member}: expected {expected}; got {describe(got)}")


def expect_type(value: object, member: str, kind: type | tuple[type, ...]) -> None:
    """Fail unless ``value`` is a ``kind`` (a ``bool`` never counts as an ``int``)."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)
    expect(ok, member, " or ".join(k.__qualname__ for k in kinds), value)


class SuiteBase:
    """Base of every conformance group: set ``backend`` to the name of the backend under test.

    Leave it ``None`` to test the backend given by ``--accelhal-backend``, or else the one
    that ``accelhal.get_accelerator()`` selects. Tests receive the accelerator through the
    ``accelerator`` fixture of :mod:`accelhal.testing.plugin`, active for the test's duration.
    """

    backend: ClassVar[str | None] = None

    @staticmethod
    def require(accelerator: Accelerator, capability: Capability) -> None:
        """Skip, with the reason, unless ``accelerator`` declares ``capability``."""
        from accelhal.testing.plugin import capability_skip_reason

        if capability not in accelerator.capabilities:
            pytest.skip(capability_skip_reason(accelerator, [capability]))

    @staticmethod
    def require_absent(accelerator: Accelerator, capability: Capability) -> None:
        """Skip, with the reason, when ``accelerator`` declares ``capability`` (tests of its documented absence)."""
        if capability in accelerator.capabilities:
            pytest.skip(f"the {accelerator.name!r} backend declares {capability.value!r}; its absence is not tested")

    @staticmethod
    def require_tensors(accelerator: Accelerator) -> None:
        """Skip, with the reason, when tensors cannot be allocated on the accelerator's device."""
        problem = allocation_problem(accelerator)
        if problem is not None:
            pytest.skip(f"the {accelerator.name!r} backend cannot hold a tensor here ({problem}); needs a real device")

    @classmethod
    def declared_class(cls, accelerator: Accelerator, member: str, capability: Capability) -> type[Any]:
        """``accelerator.<member>`` (``Stream``/``Event``), which must be a class where ``capability`` is declared."""
        cls.require(accelerator, capability)
        value = getattr(accelerator, member)
        expect(isinstance(value, type), member, f"a class (the backend declares {capability.value!r})", value)
        klass: type[Any] = value
        return klass

    @staticmethod
    def call(accelerator: Accelerator, member: str, *args: Any) -> Any:
        """Call ``accelerator.<member>(*args)``; failing with the member's name if it is missing."""
        function = getattr(accelerator, member, None)
        expect(callable(function), member, "a method of the accelerator", function)
        assert function is not None
        return function(*args)
