"""Identity and signatures: every contract member present, with the contract's argument names and defaults."""

from __future__ import annotations

import inspect

import pytest

from accelhal.contract.accelerator import Accelerator
from accelhal.contract.class_checks import contract_problems, identity_problems, instance_identity_problems
from accelhal.contract.spec import SUPPORTED_CONTRACT_VERSIONS, BackendSpec, Capability
from accelhal.discovery import plugins
from accelhal.testing.conformance.base import SuiteBase, expect, expect_type

PUBLIC_MEMBERS = sorted(
    name for klass in Accelerator.__mro__ for name in vars(klass) if not name.startswith("_") or name == "_name"
)
"""Every member the contract promises to callers (DeepSpeed reads ``_name`` too)."""

METHODS = sorted(name for name in PUBLIC_MEMBERS if inspect.isfunction(vars(Accelerator).get(name)))
"""The contract's methods, whose argument names and defaults a backend must keep."""

BOOLEAN_QUERIES = (
    "is_available",
    "is_synchronized_device",
    "use_host_timers",
    "resolves_data_dependency",
    "handles_memory_backpressure",
    "is_triton_supported",
    "prefer_triton_grouped_mm",
)


def _parameters(signature: inspect.Signature) -> list[tuple[str, object]]:
    return [(p.name, p.default) for p in signature.parameters.values()]


class IdentityTests(SuiteBase):
    """The class validates, declares a supported contract version, and keeps every member's signature."""

    def test_class_honours_the_contract(self, accelerator: Accelerator) -> None:
        problems = contract_problems(type(accelerator))
        expect(not problems, type(accelerator).__qualname__, "no contract problems", problems)

    def test_contract_version_is_supported(self, accelerator: Accelerator) -> None:
        version = type(accelerator).contract_version
        expect(
            version in SUPPORTED_CONTRACT_VERSIONS,
            "contract_version",
            f"one of {list(SUPPORTED_CONTRACT_VERSIONS)}",
            version,
        )

    def test_name_and_device_type(self, accelerator: Accelerator) -> None:
        expect_type(accelerator.name, "name", str)
        expect(
            accelerator.name == accelerator._name,
            "name",
            f"the same as _name ({accelerator._name!r})",
            accelerator.name,
        )
        expect(bool(accelerator.device_type), "device_type", "a non-empty torch device type", accelerator.device_type)
        capabilities = accelerator.capabilities
        expect(
            isinstance(capabilities, frozenset) and all(isinstance(c, Capability) for c in capabilities),
            "capabilities",
            "a frozenset of accelhal.Capability",
            capabilities,
        )

    def test_class_agrees_with_its_spec(self, accelerator: Accelerator) -> None:
        cls = type(accelerator)
        spec = _registered_spec(cls) or cls.spec
        if spec is None:
            pytest.skip(f"no registered spec loads {cls.__qualname__}, and it names none: nothing to compare")
        problems = identity_problems(spec, cls) + instance_identity_problems(spec, accelerator)
        if accelerator.device_name() != spec.device_type:
            problems.append(f"device_name() is {accelerator.device_name()!r} but the spec says {spec.device_type!r}")
        expect(not problems, "identity", f"the facts of the spec registered as {spec.name!r}", problems)

    @pytest.mark.parametrize("member", PUBLIC_MEMBERS)
    def test_member_is_present(self, accelerator: Accelerator, member: str) -> None:
        try:
            getattr(accelerator, member)
        except AttributeError as exc:
            raise AssertionError(
                f"{member}: expected the contract member on {type(accelerator).__qualname__}; "
                f"it is missing (AttributeError: {exc})"
            ) from None

    @pytest.mark.parametrize("member", METHODS)
    def test_member_signature(self, accelerator: Accelerator, member: str) -> None:
        contract = inspect.signature(vars(Accelerator)[member])
        expected = _parameters(contract)[1:]  # without self
        function = getattr(accelerator, member, None)
        expect(callable(function), member, "a method", function)
        try:
            actual_signature = inspect.signature(function)  # type: ignore[arg-type]
        except (TypeError, ValueError) as exc:
            pytest.skip(f"{member}: the signature of {function!r} cannot be inspected ({exc})")
        kinds = {p.kind for p in actual_signature.parameters.values()}
        if {inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD} <= kinds:
            return  # (*args, **kwargs) accepts the contract's calls
        actual = _parameters(actual_signature)
        head = actual[: len(expected)]
        extra_required = [name for name, default in actual[len(expected) :] if default is inspect.Parameter.empty]
        expect(
            head == expected and not extra_required,
            member,
            f"the contract's arguments {member}{_without_self(contract)}",
            f"{member}{actual_signature}",
        )

    @pytest.mark.parametrize("member", BOOLEAN_QUERIES)
    def test_boolean_query(self, accelerator: Accelerator, member: str) -> None:
        expect_type(self.call(accelerator, member), f"{member}()", bool)


def _registered_spec(cls: type[Accelerator]) -> BackendSpec | None:
    """The spec of the registered backend whose accelerator class is ``cls`` (re-exports included)."""
    path = f"{cls.__module__}:{cls.__qualname__}"
    registrations = list(plugins.registry().backends.values())
    named = next((r.spec for r in registrations if r.spec.accelerator in (cls, path)), None)
    return named or next((r.spec for r in registrations if _loads(r.spec, cls)), None)


def _loads(spec: BackendSpec, cls: type[Accelerator]) -> bool:
    try:
        return spec.load_class() is cls
    except Exception:  # a backend whose class cannot load here is not the one under test
        return False


def _without_self(signature: inspect.Signature) -> inspect.Signature:
    return signature.replace(parameters=list(signature.parameters.values())[1:])
